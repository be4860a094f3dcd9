"""How many mistakes of the second catalogue (tests/fresh_mistakes/) the feedback names, per notebook.

    python tools/named.py [NOTEBOOK ...] [--show unnamed|all] [--jobs N] [--variants N]

Each mistake is graded in-process through its exercise's whole test cell (tests/mutation/inprocess.py,
as nbgrader runs it). It is *named* when the student's own check rejects it with one of the cause codes
the catalogue gives for it; *bare* when rejected with no cause; *misnamed* when rejected with another
cause; *Correct* when the visible check passes it (a wrong answer called right). Prints a table per
notebook and the total, then (with --show) each mistake's message. Exit status: 0 when no wrong answer is
called Correct and every named share is at least --goal percent, 1 otherwise, 2 usage error.

With --variants N, a second table grades the mistakes of the exercises that vary (tapelab.checker.variants)
on N variants each, every mistake written for its variant (tests/answers.py); the goal holds for it too.
"""
from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

os.environ.update(TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

_KINDS = ("named", "misnamed", "bare", "hidden only", "Correct", "other")


def judge(notebook: str, seeds: tuple[int | None, ...] = (None,)) -> list[tuple[str, str, str, str, str]]:
    """(answer id, mistake name, kind, cause given, message) for every fresh mistake of `notebook`; with seeds
    other than None, for the mistakes of its exercises that vary, once per variant of each seed."""
    from answers import exercise_named, fresh_mistakes
    from mutation.inprocess import exercises, grade

    by_id = {e.answer_id: e for e in exercises(notebook)}
    rows = []
    for seed in seeds:
        for answer_id, found in sorted(fresh_mistakes(notebook, seed).items()):
            if seed is None or exercise_named(answer_id.removesuffix("_answer")).space.varies:
                rows += _judged(by_id[answer_id], found, seed, grade)
    return rows


def _judged(exercise, found, seed, grade) -> list[tuple[str, str, str, str, str]]:
    rows = []
    for mistake in found:
        verdict = grade(exercise, mistake.code, f"fresh {mistake.name}", seed=seed)
        if verdict.passed:
            kind = "Correct"
        elif verdict.outcome != "incorrect":
            kind = "other"
        elif verdict.part != "visible":
            kind = "hidden only"
        elif verdict.cause in mistake.causes:
            kind = "named"
        else:
            kind = "misnamed" if verdict.cause else "bare"
        rows.append((exercise.answer_id, mistake.name, kind, verdict.cause or "-", verdict.message))
    return rows


def _table(results: dict[str, list], goal: float) -> bool:
    """Print one table of kinds per notebook and the total; whether any notebook misses the goal or has Correct."""
    print(f"{'notebook':22}" + "".join(f"{k:>13}" for k in _KINDS) + f"{'named share':>14}")
    totals = dict.fromkeys(_KINDS, 0)
    failed = False
    for nb, rows in results.items():
        if not rows:
            continue
        counts = {k: sum(r[2] == k for r in rows) for k in _KINDS}
        share = 100 * counts["named"] / len(rows)
        failed |= share < goal or counts["Correct"] > 0
        totals = {k: totals[k] + counts[k] for k in _KINDS}
        print(f"{nb:22}" + "".join(f"{counts[k]:>13}" for k in _KINDS) + f"{counts['named']:>6}/{len(rows)} {share:3.0f}%")
    total = sum(totals.values())
    print(f"{'total':22}" + "".join(f"{totals[k]:>13}" for k in _KINDS)
          + f"{totals['named']:>6}/{total} {100 * totals['named'] / max(total, 1):3.0f}%")
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebook names (default: all six)")
    parser.add_argument("--show", choices=("unnamed", "all"), help="print the message of each (unnamed) mistake")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks graded side by side (default 2)")
    parser.add_argument("--goal", type=float, default=90.0, help="named share each notebook must reach (%%)")
    parser.add_argument("--variants", type=int, default=0, help="also grade each varying exercise's mistakes on N variants")
    args = parser.parse_args(argv)
    from answers import chosen_notebooks, variant_seeds

    names = chosen_notebooks(parser, args.notebooks)
    seeds = tuple(variant_seeds(args.variants))
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = dict(zip(names, pool.map(judge, names)))
        varied = dict(zip(names, pool.map(judge, names, [seeds] * len(names)))) if seeds else {}
    failed = _table(results, args.goal)
    if varied:
        print(f"\nthe mistakes of the exercises that vary, each on {len(seeds)} variants:")
        failed |= _table(varied, args.goal)
    if args.show:
        for nb, rows in {**results, **{f"{n} (variants)": r for n, r in varied.items()}}.items():
            for answer_id, name, kind, cause, message in rows:
                if args.show == "all" or kind != "named":
                    print(f"\n[{kind}] {nb} {answer_id}: {name} (cause {cause})\n    {message}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
