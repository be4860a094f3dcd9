"""What a check costs per exercise: the reference answer (which passes, so the diagnosis engine never runs)
and the first wrong answer of the second catalogue (which fails, so it does), against a baseline checkout.

    python bench/checks.py [--repeats 5] [--baseline SRC]     (`make bench`)

Each exercise's whole test cell is run in-process (tests/mutation/inprocess.py) `--repeats` times on both
answers, after one untimed run that warms TensorFlow's caches; the table gives the median of each. With
`--baseline SRC` (the `src/` folder of another checkout, e.g. a `git worktree` of the commit before the
engine), the same measurement then runs there, in a second process on this machine, and the ratio column
compares the two medians. Goal: a passing check costs what the baseline's does (ratio within 1.0 +- 0.15;
a miss prints MISSED; the exit status is non-zero only when a run fails).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.update(TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")
ROOT = Path(__file__).resolve().parents[1]
TOLERANCE = 0.15


def measure(repeats: int) -> dict[str, dict[str, float]]:
    """answer id -> {"reference": median s, "mistake": median s} in this process's tapelab."""
    sys.path.insert(0, str(ROOT / "tests"))
    from answers import fresh_mistakes
    from mutation.inprocess import exercises, grade
    from tapelab.paths import assignment_names

    times: dict[str, dict[str, float]] = {}
    for notebook in assignment_names():
        wrong = fresh_mistakes(notebook)
        for exercise in exercises(notebook):
            answers = {"reference": exercise.reference, "mistake": wrong[exercise.answer_id][0].code}
            row = {}
            for kind, code in answers.items():
                grade(exercise, code, f"bench {kind}")  # warm: traces, Keras builds
                samples = []
                for _ in range(repeats):
                    start = time.perf_counter()
                    grade(exercise, code, f"bench {kind}")
                    samples.append(time.perf_counter() - start)
                row[kind] = statistics.median(samples)
            times[exercise.answer_id] = row
    return times


def _elsewhere(src: str, repeats: int) -> dict[str, dict[str, float]]:
    env = {**os.environ, "PYTHONPATH": src}
    done = subprocess.run([sys.executable, __file__, "--repeats", str(repeats), "--json"], env=env,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the baseline run in {src} failed: {done.stderr.strip()[-600:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline", metavar="SRC", help="the src/ folder of the checkout to compare with")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # the baseline's own run
    args = parser.parse_args()
    here = measure(args.repeats)
    if args.json:
        print(json.dumps(here))
        return 0
    base = _elsewhere(args.baseline, args.repeats) if args.baseline else {}
    print(f"{'exercise':14}{'reference s':>13}{'mistake s':>11}" + (f"{'base ref s':>12}{'base mis s':>12}"
                                                                     f"{'ref ratio':>11}" if base else ""))
    missed = []
    for answer_id, row in here.items():
        line = f"{answer_id:14}{row['reference']:13.3f}{row['mistake']:11.3f}"
        if answer_id in base:
            ratio = row["reference"] / base[answer_id]["reference"]
            line += f"{base[answer_id]['reference']:12.3f}{base[answer_id]['mistake']:12.3f}{ratio:11.2f}"
            if abs(ratio - 1) > TOLERANCE:
                line += "  MISSED"
                missed.append(answer_id)
        print(line)
    if base:
        total = sum(r["reference"] for r in here.values()) / sum(base[k]["reference"] for k in here if k in base)
        print(f"{'all passing':14} ratio {total:.2f} (goal 1.00 +- {TOLERANCE})" + ("  MISSED" if missed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
