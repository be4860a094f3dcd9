"""`tapelab grade --scheduler`: a local Dask cluster (scheduler + two worker processes on 127.0.0.1,
started here) grades exactly as the local pool does, and a worker killed mid-run loses nothing."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from grade_fixtures import (BASIC, TINY, cell_scores, fill, limit_cells, load_report, make_course, orphaned_sandboxes,
                            partial, reference, run_grade, tiny, write)
from services import DaskCluster
from tapelab.release import nbgrader_env

pytestmark = pytest.mark.heavy(175)  # seconds, about: scheduled first (tests/conftest.py)

# The sleeper below is stopped by the per-cell limit, set low in the template's config. A notebook limit close
# to a real notebook's run time would be reached at a cell that depends on the machine's load.
TIMEOUT = "120"  # per notebook
CELL_TIMEOUT = 15  # per cell: no fixture cell but the sleeper's needs more than a few seconds


def _key(entry):
    return (entry["student"], entry["notebook"] or "", entry["source"] or "")


def _outcome(entry):
    return entry["status"], entry["score"], entry["max_score"], sorted(entry["flags"])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    dask = DaskCluster(tmp_path_factory.mktemp("dask-logs"))
    yield dask
    dask.stop()


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A course with 01_basic_tape and 09_fixture released, cells limited to CELL_TIMEOUT; each run grades
    in a copy of it."""
    return limit_cells(make_course(tmp_path_factory.mktemp("template")), CELL_TIMEOUT)


@pytest.fixture(scope="module")
def graded(tmp_path_factory, cluster, template):
    """One inbox with one submission per status, graded by the local pool and by the cluster."""
    root = tmp_path_factory.mktemp("dask")
    inbox = root / "inbox"
    answers, _ = partial()
    write(fill(template, BASIC, reference()), inbox / "ref" / f"{BASIC}.ipynb")
    write(fill(template, BASIC, answers), inbox / "part" / f"{BASIC}.ipynb")
    write(fill(template, BASIC, {}), inbox / "blank" / f"{BASIC}.ipynb")
    write(fill(template, TINY, tiny()), inbox / "ref" / f"{TINY}.ipynb")
    write(fill(template, TINY, tiny("41")), inbox / "part" / f"{TINY}.ipynb")
    write(fill(template, TINY, tiny(sleep=120)), inbox / "sleeper" / f"{TINY}.ipynb")
    write(fill(template, TINY, {"ex9_1_answer": "import os\nos._exit(3)"}), inbox / "dies" / f"{TINY}.ipynb")
    write(fill(template, TINY, {"ex9_1_answer": 'print("x" * 20_000_000)'}), inbox / "printer" / f"{TINY}.ipynb")
    write(fill(template, TINY, tiny(), extra=["import sys\nsys.settrace(None)"]), inbox / "flagged" / f"{TINY}.ipynb")
    write(fill(template, TINY, tiny("0")), inbox / f"blank_{TINY}.ipynb")
    (inbox / f"carl_{TINY}.ipynb").write_text("{not json")
    (inbox / "zed_99_nothing.ipynb").write_text("{}")
    write(fill(template, TINY, {}), inbox / "zz" / "dup" / f"ref_{TINY}.ipynb", age=3600)  # an older copy for ref
    runs = {}
    for name, args in (("local", ["--jobs", "2"]), ("dask", ["--scheduler", cluster.address])):
        course = root / name
        shutil.copytree(template, course)
        result = run_grade(inbox, course, "--timeout", TIMEOUT, *args)
        assert result.returncode == 0, result.stderr[-3000:]
        runs[name] = {"course": course, "report": load_report(course / "report.json"), "stdout": result.stdout}
    return runs


def test_same_statuses_and_scores_as_the_local_pool(graded):
    """Does every input file end with the same status, score and flags through Dask as locally?"""
    local = {_key(e): _outcome(e) for e in graded["local"]["report"]["submissions"]}
    dask = {_key(e): _outcome(e) for e in graded["dask"]["report"]["submissions"]}
    assert dask == local
    statuses = {status for status, *_ in local.values()}
    assert {"graded", "timed_out", "kernel_died", "output_limit", "invalid_notebook", "unknown_notebook",
            "superseded", "missing_notebook"} <= statuses, statuses
    assert graded["local"]["report"]["counts"] == graded["dask"]["report"]["counts"]


def test_same_grade_of_every_cell_in_both_gradebooks(graded):
    """Are the per-cell scores nbgrader stored identical, cell by cell, for every executed notebook?"""
    executed = [e for e in graded["local"]["report"]["submissions"] if e.get("worker")]
    assert len(executed) == 10
    for entry in executed:
        student, notebook = entry["student"], entry["notebook"]
        assert (cell_scores(graded["dask"]["course"], student, notebook)
                == cell_scores(graded["local"]["course"], student, notebook)), (student, notebook)


def test_executions_ran_on_the_cluster_workers(graded, cluster):
    """Did the cluster's two worker processes execute the notebooks (not the coordinator)?"""
    report = graded["dask"]["report"]
    assert report["execution"]["pool"] == "dask" and report["execution"]["scheduler"] == cluster.address
    assert f"executed on 2 Dask workers of {cluster.address}" in graded["dask"]["stdout"]
    assert "executed on this machine, 2 at a time" in graded["local"]["stdout"]
    pids = {str(proc.pid) for name, proc in cluster.procs.items() if name != "scheduler"}
    used = {e["worker"].rsplit(":", 1)[1] for e in report["submissions"] if e.get("worker")}
    assert used == pids, (used, pids)
    assert all(p["on"] for name, p in report["protections"].items()), report["protections"]


def _processing(cluster, worker_address):
    with cluster.client() as client:
        return client.processing().get(worker_address, ())


def test_worker_killed_mid_run_loses_and_double_counts_nothing(tmp_path, template):
    """Kill one of two workers while its kernel runs a submission: that submission is run again on
    the other worker, and every submission is graded, logged and stored exactly once."""
    cluster = DaskCluster(tmp_path / "logs")
    try:
        course = tmp_path / "course"
        shutil.copytree(template, course)
        inbox = tmp_path / "inbox"
        students = ["k1", "k2", "k3"]
        for student in students:
            write(fill(course, TINY, tiny(sleep=8)), inbox / f"{student}_{TINY}.ipynb")
        victim = next(a for a, info in cluster.workers().items() if info["name"] == "w1")
        cmd = [sys.executable, "-m", "tapelab.cli", "grade", str(inbox), "--course", str(course), "--scheduler",
               cluster.address, "--timeout", "60"]
        proc = subprocess.Popen(cmd, env=nbgrader_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while not _processing(cluster, victim):
            assert time.monotonic() < deadline and proc.poll() is None, "w1 never got a submission"
            time.sleep(0.2)
        time.sleep(4)  # its kernel has started and sleeps in the answer cell
        assert _processing(cluster, victim), "w1 finished before it could be killed"
        os.kill(cluster.procs["w1"].pid, signal.SIGKILL)
        cluster.procs["w1"].wait()
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        time.sleep(1)
        assert not orphaned_sandboxes(), "the killed worker's kernel outlived it"

        report = load_report(course / "report.json")
        survivor = str(cluster.procs["w2"].pid)
        executed = [e for e in report["submissions"] if e["notebook"] == TINY]
        assert sorted(e["student"] for e in executed) == students
        assert all((e["status"], e["score"]) == ("graded", 1.0) for e in executed), executed
        assert all(e["worker"].rsplit(":", 1)[1] == survivor for e in executed), executed
        log = [json.loads(line) for line in (course / "grading.log.jsonl").read_text().splitlines()]
        logged = [r["student"] for r in log if r["event"] == "submission" and r["run_id"] == report["run_id"]]
        assert sorted(logged) == students
        state = json.loads((course / "grading-state.json").read_text())["submissions"]
        assert sorted(state) == [f"{s}/{TINY}/{TINY}" for s in students]
        from nbgrader.api import Gradebook
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
            submitted = sorted(s.student.id for s in gb.find_assignment(TINY).submissions)
            assert submitted == students
            for student in students:
                grades = gb.find_submission_notebook(TINY, TINY, student).grades
                assert [(g.name, g.score) for g in grades] == [("ex9_1_test", 1.0)]
    finally:
        cluster.stop()
