"""What a check costs per exercise: the reference answer (which passes, so the diagnosis engine never runs)
and the first wrong answer of the second catalogue (which fails, so it does), against a baseline checkout.

    python bench/checks.py [--repeats 5] [--baseline SRC]     (`make bench`)

Each exercise's whole test cell is run in-process (tests/mutation/inprocess.py) `--repeats` times on both
answers, after one untimed run that warms TensorFlow's caches; the table gives the median of each. With
`--baseline SRC` (the `src/` folder of another checkout, e.g. a `git worktree` of the commit before the
engine), the same measurement runs there too; each checkout runs `--rounds` times in its own process, in
ABBA order, and each keeps its fastest median per exercise, so that drift of this shared machine does not
fall on one side. Goal: a passing check costs what the baseline's does (ratio within 1.0 +- 0.15 over all exercises,
and on each one unless it differs by under 5 ms;
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
NOISE_S = 0.005  # a difference under 5 ms on one exercise is timer and cache noise, not the engine


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


def _best(runs: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Per exercise and answer, the fastest of several runs' medians: interference only ever adds time."""
    return {key: {kind: min(run[key][kind] for run in runs) for kind in runs[0][key]} for key in runs[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2, help="runs of each checkout, in ABBA order (default 2)")
    parser.add_argument("--baseline", metavar="SRC", help="the src/ folder of the checkout to compare with")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # one checkout's own run
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.repeats)))
        return 0
    sources = {"here": str(ROOT / "src"), **({"base": args.baseline} if args.baseline else {})}
    runs: dict[str, list] = {name: [] for name in sources}
    for round_ in range(args.rounds):
        for name in (list(sources) if round_ % 2 == 0 else list(sources)[::-1]):
            runs[name].append(_elsewhere(sources[name], args.repeats))
    here = _best(runs["here"])
    base = _best(runs["base"]) if args.baseline else {}
    print(f"{'exercise':14}{'reference s':>13}{'mistake s':>11}" + (f"{'base ref s':>12}{'base mis s':>12}"
                                                                     f"{'ref ratio':>11}" if base else ""))
    missed = []
    for answer_id, row in here.items():
        line = f"{answer_id:14}{row['reference']:13.3f}{row['mistake']:11.3f}"
        if answer_id in base:
            ratio = row["reference"] / base[answer_id]["reference"]
            line += f"{base[answer_id]['reference']:12.3f}{base[answer_id]['mistake']:12.3f}{ratio:11.2f}"
            if abs(ratio - 1) > TOLERANCE and abs(row["reference"] - base[answer_id]["reference"]) > NOISE_S:
                line += "  MISSED"
                missed.append(answer_id)
        print(line)
    if base:
        total = sum(r["reference"] for r in here.values()) / sum(base[k]["reference"] for k in here if k in base)
        print(f"{'all passing':14} ratio {total:.2f} (goal 1.00 +- {TOLERANCE})"
              + ("  MISSED" if abs(total - 1) > TOLERANCE else "") + (f"; missed on {', '.join(missed)}" if missed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
