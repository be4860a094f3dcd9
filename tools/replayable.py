"""Which exercises' checks the grader's judge replays identically (tapelab.checker.replay), per exercise.

    python tools/replayable.py [NOTEBOOK ...] [--variants N] [--once] [--show diff] [--jobs N]

For every exercise of the notebooks (default: all six), its reference answer, every catalogued mistake
(tests/answers.py `mistakes` and `fresh_mistakes`) and the untouched stub of the student notebook are graded
twice through the exercise's whole test cell (tests/mutation/inprocess.py `grade_twice`): live, with the checks
recording as in a grading kernel, and judged from those records alone. An answer is *same* when both give the
same outcome, failing part, message and cause. Prints per exercise how many answers were the same, whether the
exercise is marked `replayable`, and (with --show diff) each difference. With --variants N the exercises that
vary are graded on N variants too (the reference and mistakes written for each). With --once the judge computes
each expected value once, as the grader's judge process does (`expected.compute_once`), and serves it to the
later answers of the exercise, while the live check still computes its own: a difference then shows a value
that is not a function of the case alone. Exit status: 0 when every
exercise marked replayable has no difference, 1 otherwise, 2 usage error.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

os.environ.update(TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

_KEY = ("outcome", "part", "message", "cause")


def answers_of(notebook: str, answer_id: str, seed: int | None) -> list[tuple[str, str]]:
    """(label, code) of the reference, each catalogued mistake and the stub of one exercise, for the variant
    of `seed` (None: the notebook's numbers)."""
    from answers import fresh_mistakes, mistakes, stub_answers, variant_reference

    found = [("reference", variant_reference(notebook, answer_id, seed))]
    found += [(f"mistake {m.name}", m.code) for m in mistakes(notebook, seed).get(answer_id, [])]
    found += [(f"fresh {m.name}", m.code) for m in fresh_mistakes(notebook, seed).get(answer_id, [])]
    return found + [("stub", stub_answers(notebook)[answer_id])]


def judge_once() -> None:
    """In this worker process, the judge's values computed once per exercise, case and name, and the live checks'
    not: tests/mutation/inprocess.py `_judged` (which `grade_twice` calls) runs with `expected.compute_once`'s
    store, the live grading without it."""
    from mutation import inprocess
    from tapelab.checker import expected

    judged, shared = inprocess._judged, {}

    def once(*args, **kwargs):
        expected._ONCE = shared
        try:
            return judged(*args, **kwargs)
        finally:
            expected._ONCE = None
    inprocess._judged = once


def compare(task: tuple[str, str, int | None]) -> list[tuple[str, str, str, object, object]]:
    """(answer id, seed shown, label, live, judged) of every answer of one exercise on one variant."""
    from mutation.inprocess import exercises, grade_twice

    notebook, answer_id, seed = task
    exercise = next(e for e in exercises(notebook) if e.answer_id == answer_id)
    rows = []
    for label, code in answers_of(notebook, answer_id, seed):
        live, judged = grade_twice(exercise, code, f"replay {label} {seed}", seed=seed)
        rows.append((answer_id, "default" if seed is None else str(seed), label, live, judged))
    return rows


def tasks(notebooks: list[str], seeds: tuple[int, ...]) -> list[tuple[str, str, int | None]]:
    """(notebook, answer id, seed) to grade: every exercise on its default numbers, the varying ones on `seeds`."""
    from answers import exercise_named, reference_answers

    found = []
    for notebook in notebooks:
        for answer_id in reference_answers(notebook):
            varies = exercise_named(answer_id.removesuffix("_answer")).space.varies
            found += [(notebook, answer_id, seed) for seed in (None, *(seeds if varies else ()))]
    return found


def same(live, judged) -> bool:
    return all(getattr(live, k) == getattr(judged, k) for k in _KEY)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebook names (default: all six)")
    parser.add_argument("--variants", type=int, default=0, help="also grade each varying exercise on N variants")
    parser.add_argument("--show", choices=("diff",), help="print each answer graded differently live and judged")
    parser.add_argument("--jobs", type=int, default=2, help="exercises graded side by side (default 2)")
    parser.add_argument("--once", action="store_true", help="the judge computes each expected value once, as graded")
    args = parser.parse_args(argv)
    from answers import chosen_notebooks, exercise_named, variant_seeds

    # tasks() imports TensorFlow: the workers start afresh, not forked
    todo = tasks(chosen_notebooks(parser, args.notebooks), tuple(variant_seeds(args.variants)))
    with ProcessPoolExecutor(max_workers=max(1, args.jobs), mp_context=multiprocessing.get_context("spawn"),
                             initializer=judge_once if args.once else None) as pool:
        rows = [row for found in pool.map(compare, todo) for row in found]
    print(f"{'exercise':10}{'answers':>9}{'same':>7}{'differ':>8}  replayable")
    failed = False
    for answer_id in dict.fromkeys(r[0] for r in rows):
        mine = [r for r in rows if r[0] == answer_id]
        differ = sum(not same(r[3], r[4]) for r in mine)
        marked = exercise_named(answer_id.removesuffix("_answer")).replayable
        failed |= marked and differ > 0
        print(f"{answer_id.removesuffix('_answer'):10}{len(mine):>9}{len(mine) - differ:>7}{differ:>8}  {marked}")
    print(f"{'total':10}{len(rows):>9}{sum(same(r[3], r[4]) for r in rows):>7}")
    if args.show:
        for answer_id, seed, label, live, judged in rows:
            if not same(live, judged):
                print(f"\n{answer_id} ({seed}) {label}")
                for name, verdict in (("live", live), ("judged", judged)):
                    print(f"  {name:6} {verdict.outcome} {verdict.part or '-'} cause={verdict.cause}: {verdict.message}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
