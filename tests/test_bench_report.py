"""The grading bench's report: per-phase means, the computed limit and the ceilings, on a made-up run."""
from __future__ import annotations

import importlib.util
import re

from answers import REPO

_spec = importlib.util.spec_from_file_location("bench_grading", REPO / "bench" / "grading.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

TIMING = {"slot": 0.1, "start": 0.9, "prologue": 0.5, "cells": 3.0, "hidden": 1.0, "guard": 2.0, "judge": 0.4,
          "stop": 0.5, "pin": 0.25}
RECORD = {
    "executions": [{"notebook": "01", "timing": TIMING, "seconds": 8.0},
                   {"notebook": "01", "timing": {**TIMING, "cells": 5.0}, "seconds": 10.0}],
    "coordinator": [{"notebook": "01", "bookkeeping": 1.0, "feedback": 3.0}] * 2,
}


def test_phases_are_means_per_submission():
    row = bench.phases(RECORD)["01"]
    assert row["kernel start"] == 1.0 and row["cells"] == 5.0 and row["guard"] == 2.0
    assert row["bookkeeping"] == 1.0 and row["feedback"] == 3.0 and row["worker"] == 9.0


def test_ceilings_leave_out_only_the_guard_and_feedback(capsys):
    limit = bench.cells_seconds(RECORD) / 2  # cells and hidden tests: (4 + 6) / 2 cores
    assert limit == 5.0
    bench.print_ceilings(40.0, limit, RECORD, jobs=2)
    out = capsys.readouterr().out
    # bare: cells 10 + start 2 + imports 1 + stop 1 + bookkeeping 2 = 16 s of work, over 2 cores
    assert "stock / limit = 8.00x" in out
    assert re.search(r"bookkeeping \(8\.0 s\) = 5\.00x", out)
    assert "warm path in 10.0 s, at 50% of the limit" in out


def test_overhead_is_every_phase_but_the_cells_per_submission(capsys):
    bench.print_overhead(RECORD)
    out = capsys.readouterr().out
    # per submission: start 1.0, imports 0.5, guard 2.0, judge 0.4 (the checks decided outside the kernel), stop 0.5,
    # pin 0.25 (the worker's, per-student variants), bookkeeping 1.0, feedback 3.0; the cells and hidden tests (4 and
    # 6 s) are not overhead
    assert ("kernel start 1.00, imports 0.50, guard 2.00, judge 0.40, stop 0.50, pin 0.25, bookkeeping 1.00, "
            "feedback 3.00; in all 8.65" in out), out


def test_idle_at_the_end_counts_each_worker_from_its_last_result_to_the_runs_last(capsys):
    record = {"executions": [{"notebook": "01", "timing": TIMING, "seconds": 8.0, "worker": w, "at": at}
                             for w, at in (("a", 10.0), ("b", 12.0), ("a", 20.0), ("b", 14.5), ("c", 19.0))]}
    bench.print_idle(record)
    # the run's last result at 20.0: a 0, b 5.5, c 1.0
    assert "6.5 s of a core over 3 workers" in capsys.readouterr().out
    bench.print_idle({"executions": record["executions"][:1]})  # one worker: nothing to say
    assert capsys.readouterr().out == ""
