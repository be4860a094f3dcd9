"""Stock `nbgrader autograde` against `tapelab grade` on the same submissions, in one run.

    python bench/grading.py [--students 12] [--notebooks 01_basic_tape ...] [--jobs N]

Students cycle through correct (the reference), partial (the first answer left as the stub) and
blank. The stock side runs `nbgrader autograde NB --student S` once per submission, sequentially,
as the nbgrader docs show; the tapelab side runs `tapelab grade` once on a flat folder of the
same notebooks. Both courses start as copies of one prepared course. Prints the wall times, their
ratio, and whether every graded cell scored the same in both gradebooks.
"""
from __future__ import annotations

import argparse
import copy
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from answers import reference_answers  # noqa: E402
from tapelab.paths import assignment_names  # noqa: E402
from tapelab.release import nbgrader_env, prepare_course  # noqa: E402

KINDS = ("correct", "partial", "blank")


def answers_for(kind: str, notebook: str) -> dict[str, str]:
    reference = reference_answers(notebook)
    if kind == "correct":
        return reference
    if kind == "partial":
        return dict(list(reference.items())[1:])  # the first answer keeps its stub
    return {}


def student_notebook(course: Path, notebook: str, answers: dict[str, str]) -> nbformat.NotebookNode:
    nb = copy.deepcopy(nbformat.read(course / "release" / notebook / f"{notebook}.ipynb", as_version=4))
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid].strip() + "\n"
    return nb


def scores(course: Path, students: list[str], notebooks: list[str]) -> dict[tuple, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {(s, nb, g.name): g.score for s in students for nb in notebooks
                for g in gb.find_submission_notebook(nb, nb, s).grades}


def run_stock(course: Path, students: list[str], notebooks: list[str]) -> float:
    start = time.monotonic()
    for notebook in notebooks:
        for student in students:
            result = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", notebook, "--student", student,
                                     "--force"], cwd=course, env=nbgrader_env(), capture_output=True, text=True)
            if result.returncode != 0:
                raise SystemExit(f"stock autograde failed for {student}/{notebook}:\n{result.stderr[-2000:]}")
    return time.monotonic() - start


def run_tapelab(course: Path, inbox: Path, jobs: int) -> tuple[float, str]:
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "tapelab.cli", "grade", str(inbox), "--course", str(course),
                             "--jobs", str(jobs)], env=nbgrader_env(), capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"tapelab grade failed:\n{result.stderr[-2000:]}")
    return time.monotonic() - start, result.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=12)
    parser.add_argument("--notebooks", nargs="*", default=None, help="default: every notebook in solutions/")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--keep", action="store_true", help="keep the temporary courses")
    args = parser.parse_args()
    notebooks = args.notebooks or assignment_names()
    students = [f"s{i:02d}_{KINDS[i % 3]}" for i in range(args.students)]
    root = Path(tempfile.mkdtemp(prefix="tapelab-bench-"))
    try:
        stock, fast, inbox = root / "stock", root / "tapelab", root / "inbox"
        print(f"preparing a course with {', '.join(notebooks)} ...", flush=True)
        prepare_course(stock, notebooks)
        shutil.copytree(stock, fast)
        for notebook in notebooks:
            for student in students:
                nb = student_notebook(stock, notebook, answers_for(student.split("_")[1], notebook))
                target = stock / "submitted" / student / notebook / f"{notebook}.ipynb"
                target.parent.mkdir(parents=True, exist_ok=True)
                nbformat.write(nb, target)
                inbox.mkdir(exist_ok=True)
                nbformat.write(nb, inbox / f"{student}_{notebook}.ipynb")
        n = len(students) * len(notebooks)
        print(f"{n} submissions ({len(students)} students x {len(notebooks)} notebooks)", flush=True)
        t_tapelab, summary = run_tapelab(fast, inbox, args.jobs)
        print(f"tapelab grade --jobs {args.jobs}: {t_tapelab:7.1f} s  ({t_tapelab / n:.2f} s per notebook)", flush=True)
        t_stock = run_stock(stock, students, notebooks)
        print(f"nbgrader autograde, sequential:  {t_stock:7.1f} s  ({t_stock / n:.2f} s per notebook)", flush=True)
        a, b = scores(stock, students, notebooks), scores(fast, students, notebooks)
        different = sorted(k for k in a if a[k] != b.get(k))
        print(summary)
        print(f"speed-up: {t_stock / t_tapelab:.2f}x   identical scores: {'yes' if not different and a else 'NO'} "
              f"({len(a)} graded cells compared)")
        for key in different[:20]:
            print(f"  differs: {key}: stock {a[key]} tapelab {b.get(key)}")
        return 0 if not different else 1
    finally:
        if args.keep:
            print(f"courses kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
