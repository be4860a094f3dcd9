"""Stock `nbgrader autograde` against `tapelab grade` (cold kernels, warm kernels, on Dask), on the same submissions.

    python bench/grading.py [--students 12] [--notebooks 01_basic_tape ...] [--jobs N] [--no-stock] [--no-cold]
                            [--no-dask]
                            [--scores FILE]   (every graded cell's score per run, as JSON: two checkouts compared)
                            [--per-student]   (a course whose students each have their own variants)

Students cycle through correct (the reference), partial (the first answer left as the stub) and
blank. With --per-student the course gives each student their own variants (tapelab.release_variants) and a
correct student hands in the reference written for their own numbers; stock nbgrader is not run then: it
grades a notebook as handed in, against the expected values released with it, which are the default
variant's (`tapelab grade` pins each submission to its folder's student first). The stock side runs `nbgrader autograde NB --student S` once per submission, sequentially,
as the nbgrader docs show; the tapelab side runs `tapelab grade` on a flat folder of the same
notebooks: with its local pool (--jobs N) and cold kernels (TAPELAB_KERNELS=cold), with warm kernels
(the default: forked from a zygote per worker that imported TensorFlow once), and warm through
`--scheduler` on a Dask cluster of N single-threaded worker processes on this machine (scheduler and
workers started here, on 127.0.0.1). Every course starts as a copy of one prepared course.

Each tapelab run is measured from inside (`_measure`, in the run's own process: it wraps the pool's
results and the coordinator's per-notebook work), so the bench prints, per notebook, where the seconds
go: kernel start (the sandbox slot and the kernel), imports (the guard's prologue, which imports the
notebook's modules and TensorFlow), cells (the notebook's cells and hidden tests), the guard's steps,
stopping, nbgrader bookkeeping (preparing the submission, writing the gradebook) and feedback. The
computed limit is the cells' own time in warm kernels over the cores; two ceilings follow from it (stock
over the limit, and stock over the cells plus only kernel start, imports, stop and bookkeeping). Prints wall
times, ratios to stock, how long workers idled at the end (nothing left to take while the last executions
ran), and whether every graded cell scored the same in every gradebook.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "grading")]  # the bench's helpers, imported in main:
# a measured run (`_measure`, this file in its own process) imports only what `tapelab grade` does

KINDS = ("correct", "partial", "blank")
TARGET = 4.0  # warm tapelab over stock sequential, on 2 cores (issue 21)
SHARE = 0.85  # warm at least this share of the computed limit (issue 32)
OVERHEAD = 0.9  # ... that is, at most this many seconds of a core per submission beyond its cells
KERNEL_PHASES = {"kernel start": ("slot", "start"), "imports": ("prologue",), "cells": ("cells", "hidden"),
                 "guard": ("guard",), "judge": ("judge",), "stop": ("stop",),
                 "pin": ("pin",)}  # per-student variants: the worker pins the checks (their expected values)
COORDINATOR_PHASES = ("bookkeeping", "feedback")
BARE_PHASES = ("kernel start", "imports", "cells", "stop")  # what any grader's kernel spends (the ceilings)


def answers_for(kind: str, notebook: str, student: str, salt: str | None) -> dict[str, str]:
    from answers import own_answers, reference_answers

    reference = own_answers(notebook, salt, student) if salt else reference_answers(notebook)
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


def short_of_full(course: Path, students: list[str], notebooks: list[str]) -> list[tuple]:
    """(student, notebook, cell) of every graded cell a correct student did not get full marks on."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return [(s, nb, g.name) for s in students if s.endswith("_correct") for nb in notebooks
                for g in gb.find_submission_notebook(nb, nb, s).grades if g.score < g.max_score]


def run_stock(course: Path, students: list[str], notebooks: list[str]) -> float:
    from tapelab.release import nbgrader_env

    start = time.monotonic()
    for notebook in notebooks:
        for student in students:
            result = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", notebook, "--student", student,
                                     "--force"], cwd=course, env=nbgrader_env(), capture_output=True, text=True)
            if result.returncode != 0:
                raise SystemExit(f"stock autograde failed for {student}/{notebook}:\n{result.stderr[-2000:]}")
    return time.monotonic() - start


def run_tapelab(course: Path, inbox: Path, kernels: str, *args: str) -> tuple[float, str, dict]:
    """One measured `tapelab grade` run: wall seconds, its summary, and what `_measure` recorded."""
    from tapelab.release import nbgrader_env

    record = course.parent / f"{course.name}-phases.json"
    start = time.monotonic()
    result = subprocess.run([sys.executable, __file__, "--measure", str(record), "grade", str(inbox), "--course",
                             str(course), *args], env={**nbgrader_env(), "TAPELAB_KERNELS": kernels},
                            capture_output=True, text=True)
    wall = time.monotonic() - start
    if result.returncode != 0:
        raise SystemExit(f"tapelab grade failed:\n{result.stderr[-2000:]}")
    return wall, result.stdout, json.loads(record.read_text())


# -- inside a measured run -------------------------------------------------------------------------------
def _measure(out: Path, argv: list[str]) -> int:
    """`tapelab grade ARGV` in this process, recording each execution's timing facts (from the pool's
    results) and the coordinator's serial seconds per notebook, into `out`."""
    from tapelab import cli
    from tapelab.grading import run
    from tapelab.grading.execution import pools

    record: dict = {"executions": [], "coordinator": [], "kernels": defaultdict(int)}
    current: list = [None]
    begun = time.monotonic()

    def results_of(finished):
        def wrapper(self):
            results = finished(self)
            for tag, result in results:
                facts = result.get("facts") or {}
                record["kernels"][facts.get("kernel", "none")] += 1
                if facts.get("timing"):
                    record["executions"].append({"notebook": tag.notebook, "timing": facts["timing"],
                                                 "seconds": result.get("seconds"), "worker": result.get("worker"),
                                                 "at": time.monotonic() - begun})  # when its result came
            return results
        return wrapper

    def serial(method):
        def wrapper(self, cand, *args):
            start, current[0] = time.monotonic(), [cand.notebook, 0.0]
            try:
                return method(self, cand, *args)
            finally:
                feedback = current[0][1]
                record["coordinator"].append({"notebook": cand.notebook, "bookkeeping": time.monotonic() - start
                                              - feedback, "feedback": feedback})
                current[0] = None
        return wrapper

    def feedback(refresh):
        def wrapper(*args, **kwargs):
            start = time.monotonic()
            try:
                return refresh(*args, **kwargs)
            finally:
                if current[0] is not None:
                    current[0][1] += time.monotonic() - start
        return wrapper

    pools.LocalPool.finished = results_of(pools.LocalPool.finished)
    if "--scheduler" in argv:
        from tapelab.grading.execution import cluster

        cluster.DaskPool.finished = results_of(cluster.DaskPool.finished)
    run.Coordinator._prepared = serial(run.Coordinator._prepared)  # sanitizing, the submission's nbgrader files
    run.Coordinator._finished = serial(run.Coordinator._finished)  # the gradebook, the review note, feedback
    run.refresh_feedback = feedback(run.refresh_feedback)
    try:
        return cli.main(argv)
    finally:
        out.write_text(json.dumps(record))


# -- the report ------------------------------------------------------------------------------------------
def phases(record: dict) -> dict[str, dict[str, float]]:
    """notebook -> phase -> mean seconds per submission."""
    sums: dict = defaultdict(lambda: defaultdict(float))
    counts: dict = defaultdict(int)
    for execution in record["executions"]:
        counts[execution["notebook"]] += 1
        for phase, keys in KERNEL_PHASES.items():
            sums[execution["notebook"]][phase] += sum(execution["timing"].get(k, 0.0) for k in keys)
        sums[execution["notebook"]]["worker"] += execution["seconds"] or 0.0
    for entry in record["coordinator"]:
        for phase in COORDINATOR_PHASES:
            sums[entry["notebook"]][phase] += entry[phase]
    return {nb: {phase: total / max(1, counts[nb]) for phase, total in table.items()} for nb, table in sums.items()}


def cells_seconds(record: dict) -> float:
    return sum(e["timing"].get("cells", 0.0) + e["timing"].get("hidden", 0.0) for e in record["executions"])


def print_phases(records: dict[str, dict]) -> None:
    columns = [*KERNEL_PHASES, *COORDINATOR_PHASES, "worker"]
    print("\nseconds per submission, mean (worker = the whole execution in its worker process):")
    print(f"{'notebook':<22}{'kernels':<8}" + "".join(f"{c:>14}" for c in columns))
    tables = {kind: phases(record) for kind, record in records.items()}
    for notebook in sorted({nb for table in tables.values() for nb in table}):
        for kind, table in tables.items():
            row = table.get(notebook, {})
            print(f"{notebook:<22}{kind:<8}" + "".join(f"{row.get(c, 0.0):>14.2f}" for c in columns))


def print_overhead(record: dict) -> None:
    """Seconds of a core per submission that are not its cells, phase by phase, over every notebook."""
    n = max(1, len(record["executions"]))
    per = {phase: sum(sum(e["timing"].get(k, 0.0) for k in keys) for e in record["executions"]) / n
           for phase, keys in KERNEL_PHASES.items() if phase != "cells"}
    per.update({phase: sum(e[phase] for e in record["coordinator"]) / n for phase in COORDINATOR_PHASES})
    print("overhead per submission, warm (seconds of a core beyond the cells): "
          + ", ".join(f"{phase} {seconds:.2f}" for phase, seconds in per.items())
          + f"; in all {sum(per.values()):.2f} (target <= {OVERHEAD})")


def print_idle(record: dict) -> None:
    """Seconds of a core that workers spent without an execution once the first of them had run out of work:
    from each worker's last result to the run's last (a run that ends with one long notebook alone)."""
    last: dict[str, float] = {}
    for execution in record["executions"]:
        if execution.get("worker") is not None and execution.get("at") is not None:
            last[execution["worker"]] = max(last.get(execution["worker"], 0.0), execution["at"])
    if len(last) < 2:
        return
    end = max(last.values())
    idle = sum(end - at for at in last.values())
    print(f"workers idle at the end (from each worker's last result to the run's last): {idle:.1f} s of a core "
          f"over {len(last)} workers")


def print_ceilings(stock: float, limit: float, record: dict, jobs: int) -> None:
    """What the target asks of the warm path, against two ceilings computed from this run's phases: the
    cells alone, and the cells with only what any kernel and gradebook need (`BARE_PHASES`, bookkeeping),
    as if the guard's steps and the feedback pages cost nothing."""
    keys = [key for phase in BARE_PHASES for key in KERNEL_PHASES[phase]]
    bare = (sum(sum(e["timing"].get(k, 0.0) for k in keys) for e in record["executions"])
            + sum(e["bookkeeping"] for e in record["coordinator"])) / jobs
    print(f"ceilings: stock / limit = {stock / limit:.2f}x (no overhead at all); with only kernel start, imports, "
          f"stop and bookkeeping ({bare:.1f} s) = {stock / bare:.2f}x (guard steps and feedback free)")
    print(f"{TARGET:.1f}x means the warm path in {stock / TARGET:.1f} s, at {limit * TARGET / stock:.0%} of the limit")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=12)
    parser.add_argument("--notebooks", nargs="*", default=None, help="default: every notebook in solutions/")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--no-stock", action="store_true", help="skip stock nbgrader (the slowest part)")
    parser.add_argument("--no-dask", action="store_true", help="skip the Dask run")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold run (a class of 12 x 6: the warm one alone)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary courses")
    parser.add_argument("--per-student", action="store_true",
                        help="each student their own variants (no stock run: it cannot pin a student's variant)")
    parser.add_argument("--scores", type=Path, metavar="FILE",
                        help="write every graded cell's score of each run here, as JSON (to compare two checkouts)")
    args = parser.parse_args()
    from services import DaskCluster
    from tapelab.paths import assignment_names
    from tapelab.release import prepare_course, variants_salt

    notebooks = args.notebooks or assignment_names()
    students = [f"s{i:02d}_{KINDS[i % 3]}" for i in range(args.students)]
    root = Path(tempfile.mkdtemp(prefix="tapelab-bench-"))
    loads = [os.getloadavg()[0]]
    try:
        runs = ([] if args.no_cold else ["cold"]) + ["warm"] + ([] if args.no_dask else ["dask"])
        courses = {name: root / name for name in ["stock", *runs]}
        inbox = root / "inbox"
        print(f"preparing a course with {', '.join(notebooks)} (load average {loads[0]:.1f} on "
              f"{os.cpu_count()} cores) ...", flush=True)
        prepare_course(courses["stock"], notebooks, variants="per-student" if args.per_student else None)
        salt = variants_salt(courses["stock"])
        for name in runs:
            shutil.copytree(courses["stock"], courses[name])
        for notebook in notebooks:
            for student in students:
                nb = student_notebook(courses["stock"], notebook,
                                      answers_for(student.split("_")[1], notebook, student, salt))
                target = courses["stock"] / "submitted" / student / notebook / f"{notebook}.ipynb"
                target.parent.mkdir(parents=True, exist_ok=True)
                nbformat.write(nb, target)
                inbox.mkdir(exist_ok=True)
                nbformat.write(nb, inbox / f"{student}_{notebook}.ipynb")
        n = len(students) * len(notebooks)
        print(f"{n} submissions ({len(students)} students x {len(notebooks)} notebooks"
              f"{', each student their own variants' if salt else ''})", flush=True)
        walls, records, summary = {}, {}, ""
        for name in runs:
            if name == "dask":
                cluster = DaskCluster(root / "dask-logs", workers=args.jobs)
                try:
                    walls[name], _, records[name] = run_tapelab(courses[name], inbox, "warm", "--scheduler",
                                                                cluster.address)
                finally:
                    cluster.stop()
            else:
                walls[name], out, records[name] = run_tapelab(courses[name], inbox, name, "--jobs", str(args.jobs))
                summary = out if name == "warm" else summary
            loads.append(os.getloadavg()[0])
            print(f"tapelab grade, {name:<5} ({dict(records[name]['kernels'])} kernels): {walls[name]:7.1f} s  "
                  f"({walls[name] / n:.2f} s per notebook)", flush=True)
        graded = {name: scores(courses[name], students, notebooks) for name in runs}
        if not (args.no_stock or args.per_student):
            walls["stock"] = run_stock(courses["stock"], students, notebooks)
            loads.append(os.getloadavg()[0])
            print(f"nbgrader autograde, sequential: {walls['stock']:7.1f} s  ({walls['stock'] / n:.2f} s per notebook)",
                  flush=True)
            graded["stock"] = scores(courses["stock"], students, notebooks)
        print(summary)
        print_phases({k: records[k] for k in ("cold", "warm") if k in records})
        print()
        for name in runs:
            ratio = f"{walls['stock'] / walls[name]:.2f}x over stock" if "stock" in walls else "stock not run"
            print(f"tapelab grade, {name}: {walls[name]:.1f} s, {ratio}")
        if "stock" in walls:
            print(f"target: warm at least {TARGET:.1f}x over stock: {'met' if walls['stock'] / walls['warm'] >= TARGET else 'MISSED'}")
        if "dask" in walls:
            print(f"Dask path / local pool, warm (cost of distribution on one machine): {walls['dask'] / walls['warm']:.2f}x")
        limit = cells_seconds(records["warm"]) / args.jobs
        print(f"computed limit: the cells' own seconds in warm kernels / {args.jobs} cores = {limit:.1f} s; "
              f"warm reaches {limit / walls['warm']:.0%} of it (target >= {SHARE:.0%}: "
              f"{'met' if limit / walls['warm'] >= SHARE else 'MISSED'})")
        print_overhead(records["warm"])
        print_idle(records["warm"])
        if "stock" in walls:
            print_ceilings(walls["stock"], limit, records["warm"], args.jobs)
        coordinator = sum(e["bookkeeping"] + e["feedback"] for e in records["warm"]["coordinator"])
        print(f"coordinator's serial work in the warm run: {coordinator:.1f} s of {walls['warm']:.1f} s wall "
              f"(median worker execution {statistics.median(e['seconds'] for e in records['warm']['executions']):.2f} s)")
        print(f"load average during the runs: {', '.join(f'{x:.1f}' for x in loads)} on {os.cpu_count()} cores")
        base = graded["warm"]
        if args.scores:
            args.scores.write_text(json.dumps({name: {"/".join(k): v for k, v in sorted(cells.items())}
                                               for name, cells in graded.items()}, indent=1))
        different = sorted((name, k) for name, other in graded.items() for k in base if other.get(k) != base[k])
        short = short_of_full(courses["warm"], students, notebooks)
        print(f"every correct student at full marks (warm): {'yes' if not short else 'NO'}"
              + "".join(f"\n  short: {key}" for key in short[:20]))
        print(f"identical scores: {'yes' if not different and base else 'NO'} ({len(base)} graded cells "
              f"compared across {', '.join(graded)})")
        for name, key in different[:20]:
            print(f"  differs: {key}: warm {base[key]} {name} {graded[name].get(key)}")
        return 0 if not (different or short) else 1
    finally:
        if args.keep:
            print(f"courses kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--measure"]:
        sys.exit(_measure(Path(sys.argv[2]), sys.argv[3:]))
    sys.exit(main())
