"""The grader's judge on a class of right answers: building only what it reads (`Exercise.given` inputs never
made there, `replay.once_in_judge` set-ups made once per case) against building every check's objects anew.

    python bench/judge.py [--students 8] [--rounds 3] [NOTEBOOK ...]

For each notebook (default: all six), the reference answer of every replayable exercise is graded once through
its test cell with the checks recording, as in a grading kernel (tests/mutation/inprocess.py); the judge then
decides that record once per student, with each expected value computed once (`expected.compute_once`), as
`judge.serve` does. The class is judged in turns, A B A B...: as tapelab does (ours), and with every `given`
input made and every `once_in_judge` set-up built at each call (the baseline), in CPU seconds per student. The
set-ups ours made once stay made in later rounds, as in one judge process, so ours counts its first round (the
first student's builds included) and the baseline its fastest. Prints both per notebook, their ratio, measured
in the same run, and whether every verdict is the same both ways.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

os.environ.update(TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from answers import exercise_named, variant_reference  # noqa: E402
from mutation import inprocess  # noqa: E402
from tapelab.checker import expected, replay  # noqa: E402
from tapelab.checker.exercise import Exercise  # noqa: E402
from tapelab.paths import assignment_names  # noqa: E402

_ONCE_CODE = replay.once_in_judge(lambda: None).__code__  # every once_in_judge wrapper runs this code


@contextmanager
def baseline():
    """While it lasts, the judge builds what tapelab's judge does not: `given` inputs are made, and each
    `once_in_judge` set-up of the exercises' modules is its undecorated function."""
    swapped = [(module, name, value) for module in list(sys.modules.values())
               if getattr(module, "__name__", "").startswith("tapelab.exercises.")
               for name, value in list(vars(module).items())
               if getattr(value, "__code__", None) is _ONCE_CODE]
    given = Exercise.given
    Exercise.given = lambda self, make: make()
    for module, name, value in swapped:
        setattr(module, name, value.__wrapped__)
    try:
        yield len(swapped)
    finally:
        Exercise.given = given
        for module, name, value in swapped:
            setattr(module, name, value)


def records_of(notebook: str) -> list[tuple]:
    """(exercise, records) of the reference answer of each replayable exercise of `notebook`."""
    found = []
    for exercise in inprocess.exercises(notebook):
        if not exercise_named(exercise.test_id.removesuffix("_test")).replayable:
            continue
        live, records = inprocess.recorded(exercise, variant_reference(notebook, exercise.answer_id, None), "bench")
        if live.outcome != "passed":
            raise SystemExit(f"{notebook} {exercise.answer_id}: the reference did not pass live ({live.message})")
        found.append((exercise, records))
    return found


def judge_class(graded: list[tuple], students: int) -> tuple[float, list[str]]:
    """CPU seconds per student to judge `students` right answers of each exercise, and every verdict."""
    verdicts = []
    start = time.process_time()
    for _ in range(students):
        for exercise, records in graded:
            verdict = inprocess._judged(exercise, iter(records))
            verdicts.append(f"{exercise.answer_id} {verdict.outcome} {verdict.message}")
    return (time.process_time() - start) / students, verdicts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", default=assignment_names())
    parser.add_argument("--students", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"{'notebook':22s} {'ours':>9s} {'baseline':>9s} {'ratio':>6s}  same verdicts  (CPU s per student, "
          f"{args.students} right answers; ours its first round, the baseline its best of {args.rounds})")
    same_everywhere = True
    for notebook in args.notebooks:
        graded = records_of(notebook)
        times: dict[str, list[float]] = {"ours": [], "baseline": []}
        seen: dict[str, list[str]] = {}
        for _ in range(args.rounds):
            for way in ("ours", "baseline"):
                expected._ONCE = {}  # a fresh judge process: each value computed once per class
                try:
                    if way == "ours":
                        seconds, verdicts = judge_class(graded, args.students)
                    else:
                        with baseline() as unwrapped:
                            seconds, verdicts = judge_class(graded, args.students)
                finally:
                    expected._ONCE = None
                times[way].append(seconds)
                seen.setdefault(way, verdicts)
        ours, base = times["ours"][0], min(times["baseline"])
        same = seen["ours"] == seen["baseline"] and all(v.split()[1] == "passed" for v in seen["ours"])
        same_everywhere &= same
        print(f"{notebook:22s} {ours:9.3f} {base:9.3f} {base / ours:5.2f}x  {'yes' if same else 'NO'}")
    print(f"baseline: every `given` input made, and the {unwrapped} `once_in_judge` set-ups built at each call")
    return 0 if same_everywhere else 1


if __name__ == "__main__":
    sys.exit(main())
