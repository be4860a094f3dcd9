"""Feedback pages of a class: one exporter rendering every student's page, with the shared cells' rendering
remembered (markdown rendered and cleaned, code highlighted once per source) against rendering each anew.

    python bench/feedback_pages.py [--students 6] [--rounds 3] [--notebooks 01_basic_tape ...]

Each student hands in the solution notebook (stored outputs included) with every answer cell their own (a
comment naming them), so their answers are highlighted anew and the instructor's cells are shared, as in a
graded class. The same pages are rendered by `page.InertPage` as `tapelab grade` configures it (the
gradebook's cell roles left out) in turns, A B A B..., with the caches on (ours) and emptied before every
page (the baseline); each keeps its fastest round of CPU seconds per page. Prints both and their ratio,
measured in the same run, and whether every page is the same byte for byte both ways.
"""
from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import nbformat
from nbgrader.converters import GenerateFeedback
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from tapelab.grading.handback import page

ROOT = Path(__file__).resolve().parents[1]


def exporter() -> page.InertPage:
    config = page.configure_feedback(Config())
    converter = GenerateFeedback(coursedir=CourseDirectory(config=config), config=config)
    made = page.InertPage(parent=converter, config=converter.config)
    for preprocessor in converter.preprocessors:
        if preprocessor.__name__ != "GetGrades":  # no gradebook here
            made.register_preprocessor(preprocessor)
    return made


def submissions(notebooks: list[str], students: int) -> list[tuple[str, nbformat.NotebookNode]]:
    handed = []
    for notebook in notebooks:
        nb = nbformat.read(ROOT / "solutions" / f"{notebook}.ipynb", as_version=4)
        for student in range(students):
            own = copy.deepcopy(nb)
            for cell in own.cells:
                if cell.metadata.get("nbgrader", {}).get("solution") and cell.cell_type == "code":
                    cell.source += f"\n# student s{student:02d}"
            handed.append((notebook, own))
    return handed


def render(made: page.InertPage, handed: list, cached: bool) -> tuple[float, list[str]]:
    """CPU seconds per page, and the pages."""
    pages, start = [], time.process_time()
    for notebook, nb in handed:
        if not cached:
            page._shared_markdown.cache_clear()
            made._highlighted.cache_clear()
        resources = {"nbgrader": {"student": "s", "assignment": notebook, "notebook": notebook, "db_url": "sqlite://",
                                  "score": 1.0, "max_score": 2.0, "late_penalty": 0}, "unique_key": notebook}
        pages.append(made.from_notebook_node(copy.deepcopy(nb), resources=resources)[0])
    return (time.process_time() - start) / len(handed), pages


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--notebooks", nargs="*", default=["01_basic_tape", "05_debugging_none"])
    args = parser.parse_args()
    page._roles = lambda resources: {}  # this process only: the cell roles would come from a gradebook
    handed = submissions(args.notebooks, args.students)
    best, pages = {"baseline": float("inf"), "ours": float("inf")}, {}
    for _ in range(args.rounds):
        for name in best:
            page._shared_markdown.cache_clear()
            seconds, pages[name] = render(exporter(), handed, cached=name == "ours")
            best[name] = min(best[name], seconds)
    same = pages["baseline"] == pages["ours"]
    print(f"feedback page, CPU seconds per page, best of {args.rounds} ({len(handed)} pages): rendering each anew "
          f"{best['baseline']:.3f} s, shared cells remembered {best['ours']:.3f} s; ratio "
          f"{best['ours'] / best['baseline']:.2f}; pages identical: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
