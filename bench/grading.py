"""Stock `nbgrader autograde` against `tapelab grade`, locally and on Dask, on the same submissions.

    python bench/grading.py [--students 12] [--notebooks 01_basic_tape ...] [--jobs N] [--no-stock]

Students cycle through correct (the reference), partial (the first answer left as the stub) and
blank. The stock side runs `nbgrader autograde NB --student S` once per submission, sequentially,
as the nbgrader docs show; the tapelab side runs `tapelab grade` once on a flat folder of the
same notebooks, once with its local pool (--jobs N) and once with `--scheduler` on a Dask cluster of
N single-threaded worker processes on this machine (scheduler and workers started here, on
127.0.0.1), which measures what distribution costs. Every course starts as a copy of one
prepared course. Prints the wall times, their ratios, and whether every graded cell scored the
same in all gradebooks.
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
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "grading")]

from answers import reference_answers  # noqa: E402
from services import DaskCluster  # noqa: E402
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


def run_tapelab(course: Path, inbox: Path, *args: str) -> tuple[float, str]:
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "tapelab.cli", "grade", str(inbox), "--course", str(course),
                             *args], env=nbgrader_env(), capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"tapelab grade failed:\n{result.stderr[-2000:]}")
    return time.monotonic() - start, result.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=12)
    parser.add_argument("--notebooks", nargs="*", default=None, help="default: every notebook in solutions/")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--no-stock", action="store_true", help="skip stock nbgrader (the slowest part)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary courses")
    args = parser.parse_args()
    notebooks = args.notebooks or assignment_names()
    students = [f"s{i:02d}_{KINDS[i % 3]}" for i in range(args.students)]
    root = Path(tempfile.mkdtemp(prefix="tapelab-bench-"))
    try:
        stock, fast, dask, inbox = root / "stock", root / "tapelab", root / "dask", root / "inbox"
        print(f"preparing a course with {', '.join(notebooks)} ...", flush=True)
        prepare_course(stock, notebooks)
        shutil.copytree(stock, fast)
        shutil.copytree(stock, dask)
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
        t_tapelab, summary = run_tapelab(fast, inbox, "--jobs", str(args.jobs))
        print(f"tapelab grade --jobs {args.jobs}: {t_tapelab:7.1f} s  ({t_tapelab / n:.2f} s per notebook)", flush=True)
        cluster = DaskCluster(root / "dask-logs", workers=args.jobs)
        try:
            t_dask, _ = run_tapelab(dask, inbox, "--scheduler", cluster.address)
        finally:
            cluster.stop()
        print(f"tapelab grade --scheduler ({args.jobs} local Dask workers): {t_dask:7.1f} s  "
              f"({t_dask / n:.2f} s per notebook)", flush=True)
        graded = {"tapelab": scores(fast, students, notebooks), "dask": scores(dask, students, notebooks)}
        if not args.no_stock:
            t_stock = run_stock(stock, students, notebooks)
            print(f"nbgrader autograde, sequential:  {t_stock:7.1f} s  ({t_stock / n:.2f} s per notebook)", flush=True)
            graded["stock"] = scores(stock, students, notebooks)
        print(summary)
        if not args.no_stock:
            print(f"speed-up of tapelab grade over stock nbgrader: {t_stock / t_tapelab:.2f}x")
        print(f"Dask path / local pool (cost of distribution on one machine): {t_dask / t_tapelab:.2f}x")
        base = graded["tapelab"]
        different = sorted((name, k) for name, other in graded.items() for k in base if other.get(k) != base[k])
        print(f"identical scores: {'yes' if not different and base else 'NO'} ({len(base)} graded cells "
              f"compared across {', '.join(graded)})")
        for name, key in different[:20]:
            print(f"  differs: {key}: tapelab {base[key]} {name} {graded[name].get(key)}")
        return 0 if not different else 1
    finally:
        if args.keep:
            print(f"courses kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
