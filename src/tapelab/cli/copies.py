"""`tapelab copies`: evidence of copying in a graded course, as facts (tapelab.grading.insight.copies)."""
from __future__ import annotations

import argparse

from tapelab.cli.graded_course import add_course, standings_of

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Print the answers of a graded course that match another student's: an answer with which "
                          "another student passed their own variant (per-student variants), and groups whose wrong "
                          "answers are the same code with the same cause. Facts, not verdicts; writes "
                          "COURSE/insight/copies.json too.")
    add_course(parser)


def run(args: argparse.Namespace) -> int:
    import json

    from tapelab.grading.insight import copies
    from tapelab.grading.insight.tables import INSIGHT_DIR
    from tapelab.grading.records import atomic_write_text

    root, db_url, rows = standings_of(args.course)
    findings = copies.find(root, db_url, rows, _variants(root, rows))
    (root / INSIGHT_DIR).mkdir(exist_ok=True)
    atomic_write_text(root / INSIGHT_DIR / "copies.json", json.dumps(findings, indent=1) + "\n")
    print(copies.render(findings), end="")
    return 0


def _variants(root, rows) -> dict | None:
    """(student, exercise number) -> the values of the student's variant of each exercise that varies, in a
    course with per-student variants; None in a course without."""
    import nbformat

    from tapelab.checker.variants import seed_for
    from tapelab.release import variants_salt
    from tapelab.release_variants import notebook_exercises

    salt = variants_salt(root)
    if salt is None:
        return None
    found = {}
    for notebook in sorted({(r.assignment, r.notebook) for r in rows}):
        released = nbformat.read(root / "release" / notebook[0] / f"{notebook[1]}.ipynb", as_version=4)
        varying = [e for e in notebook_exercises(released).values() if e.space.varies]
        found.update({(r.student, e.number): e.space.variant(seed_for(salt, r.student, e.number)).values
                      for r in rows if (r.assignment, r.notebook) == notebook for e in varying})
    return found
