"""How long `tapelab` takes to start, per command, against the bare interpreter measured in the same run.

    python bench/cli.py [--repeats 15] [--python PATH]     (`make bench`)

Each command runs `--repeats` times in a fresh process (`python -m tapelab.cli ...`), interleaved with
`python -c pass` so that both see the same machine; the table gives the median wall time of each, its
excess over the bare interpreter and the ratio. Goal: `--help` and `lint FILE` within 0.3 s of the bare
interpreter (a miss prints MISSED; the exit status is non-zero only when a command fails). `--python`
measures another checkout's interpreter (an older tapelab, for a before-and-after). The first run of
each command, not timed, writes its bytecode, as an installed package has it.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_OVER_BARE_S = 0.3
GOALS = {"--help", "lint FILE"}
LINTED = ("import tensorflow as tf\nx = tf.constant(3.0)\nwith tf.GradientTape() as tape:\n    y = x * x\n"
          "print(tape.gradient(y, x))\n")


def _wall(argv: list[str], env: dict[str, str], ok: set[int]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in ok:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-400:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--python", default=sys.executable, help="the interpreter whose tapelab is measured")
    args = parser.parse_args()
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # the warm-up writes the bytecode an installed tapelab has
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "step.py"
        target.write_text(LINTED)
        commands = {  # label -> (arguments, exit statuses that mean it worked)
            "--help": (["--help"], {0}),
            "lint --help": (["lint", "--help"], {0}),
            "lint FILE": (["lint", str(target)], {1}),  # the file has one finding
            "grade --help": (["grade", "--help"], {0}),
        }
        bare_argv = [args.python, "-c", "pass"]
        times: dict[str, list[float]] = {label: [] for label in commands}
        bare: list[float] = []
        _wall(bare_argv, env, {0})  # warm the file cache and the bytecode once
        for arguments, ok in commands.values():
            _wall([args.python, "-m", "tapelab.cli", *arguments], env, ok)
        for _ in range(args.repeats):
            bare.append(_wall(bare_argv, env, {0}))
            for label, (arguments, ok) in commands.items():
                times[label].append(_wall([args.python, "-m", "tapelab.cli", *arguments], env, ok))
    floor = statistics.median(bare)
    print(f"interpreter: {args.python}; {args.repeats} runs each; python -c pass: {floor:.3f} s (median)")
    print(f"{'command':<16}{'median s':>10}{'over bare s':>13}{'ratio':>8}")
    for label, seconds in times.items():
        median = statistics.median(seconds)
        goal = ""
        if label in GOALS:
            goal = "  goal met" if median - floor <= GOAL_OVER_BARE_S else f"  MISSED (goal {GOAL_OVER_BARE_S} s over bare)"
        print(f"{label:<16}{median:>10.3f}{median - floor:>13.3f}{median / floor:>8.1f}{goal}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
