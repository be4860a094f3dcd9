"""How many mistakes of the second catalogue (tests/fresh_mistakes/) the feedback names, per notebook.

    python tools/named.py [NOTEBOOK ...] [--show unnamed|all] [--jobs N]

Each mistake is graded in-process through its exercise's whole test cell (tests/mutation/inprocess.py,
as nbgrader runs it). It is *named* when the student's own check rejects it with one of the cause codes
the catalogue gives for it; *bare* when rejected with no cause; *misnamed* when rejected with another
cause; *Correct* when the visible check passes it (a wrong answer called right). Prints a table per
notebook and the total, then (with --show) each mistake's message. Exit status: 0 when no wrong answer is
called Correct and every named share is at least --goal percent, 1 otherwise, 2 usage error.
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


def judge(notebook: str) -> list[tuple[str, str, str, str, str]]:
    """(answer id, mistake name, kind, cause given, message) for every fresh mistake of `notebook`."""
    from answers import fresh_mistakes
    from mutation.inprocess import exercises, grade

    by_id = {e.answer_id: e for e in exercises(notebook)}
    rows = []
    for answer_id, found in sorted(fresh_mistakes(notebook).items()):
        for mistake in found:
            verdict = grade(by_id[answer_id], mistake.code, f"fresh {mistake.name}")
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
            rows.append((answer_id, mistake.name, kind, verdict.cause or "-", verdict.message))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebook names (default: all six)")
    parser.add_argument("--show", choices=("unnamed", "all"), help="print the message of each (unnamed) mistake")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks graded side by side (default 2)")
    parser.add_argument("--goal", type=float, default=90.0, help="named share each notebook must reach (%%)")
    args = parser.parse_args(argv)
    from tapelab.paths import assignment_names

    known = assignment_names()
    unknown = [n for n in args.notebooks if n not in known]
    if unknown:
        parser.error(f"unknown notebook(s) {', '.join(unknown)}; known: {', '.join(known)}")
    names = args.notebooks or known
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = dict(zip(names, pool.map(judge, names)))
    print(f"{'notebook':22}" + "".join(f"{k:>13}" for k in _KINDS) + f"{'named share':>14}")
    totals = dict.fromkeys(_KINDS, 0)
    failed = False
    for nb, rows in results.items():
        counts = {k: sum(r[2] == k for r in rows) for k in _KINDS}
        share = 100 * counts["named"] / len(rows) if rows else 0.0
        failed |= share < args.goal or counts["Correct"] > 0
        totals = {k: totals[k] + counts[k] for k in _KINDS}
        print(f"{nb:22}" + "".join(f"{counts[k]:>13}" for k in _KINDS) + f"{counts['named']:>6}/{len(rows)} {share:3.0f}%")
    total = sum(totals.values())
    print(f"{'total':22}" + "".join(f"{totals[k]:>13}" for k in _KINDS)
          + f"{totals['named']:>6}/{total} {100 * totals['named'] / max(total, 1):3.0f}%")
    if args.show:
        for nb, rows in results.items():
            for answer_id, name, kind, cause, message in rows:
                if args.show == "all" or kind != "named":
                    print(f"\n[{kind}] {nb} {answer_id}: {name} (cause {cause})\n    {message}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
