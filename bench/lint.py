"""`tapelab lint` against `ruff check` on the same tree of real code, in one run: wall times and their ratio.

    python bench/lint.py [--tree DIR] [--rounds 5] [--src OTHER/src]     (`make bench`)

The tree is the corpus of bench/corpus.py by default (public TensorFlow packages from PyPI, pinned by SHA-256
and fetched on first use into a cache outside the repository), or any folder `--tree` names. Both tools read
every .py file of it as a user runs them, each a fresh process from a neutral folder: `tapelab lint TREE`
(start-up included, default jobs: every core, no configuration) and `ruff check --isolated --no-cache
--exit-zero TREE` (Ruff's default rules, no configuration, no cache, so it really reads every file). One
untimed run of each warms the file cache and the bytecode; then `--rounds` rounds, interleaved ruff, lint,
ruff, lint..., so both see the same machine; the medians and their ratio are printed. Goal: lint within 3x
of Ruff (a miss prints MISSED; the exit status is non-zero only when a tool fails). `--src` lints with another
checkout's `src/` (an older tapelab, for a before-and-after).

Then the installed TensorFlow and Keras sources, in this process: files per second in one process and over
every core, and the findings per rule (the aim is none: see docs/lint.md, "Keras 2 idioms").
"""
from __future__ import annotations

import argparse
import collections
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from tapelab.lint import lint_paths

GOAL_RATIO = 3.0
SITE = Path(sysconfig.get_paths()["purelib"])
TREES = [SITE / "tensorflow", SITE / "keras"]


def _ruff() -> str:
    beside = Path(sys.executable).with_name("ruff")  # the venv's, pinned in requirements.lock
    found = str(beside) if beside.is_file() else shutil.which("ruff")
    if found is None:
        raise SystemExit("ruff is not installed: `make venv` (requirements.lock pins it)")
    return found


def _wall(argv: list[str], cwd: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):  # lint exits 1 on findings; ruff, with --exit-zero, 0
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-400:]}")
    return seconds


def versus_ruff(tree: Path, rounds: int, src: Path | None) -> tuple[float, float]:
    """(median s of ruff, median s of tapelab lint) over `tree`, `rounds` interleaved runs each."""
    env = dict(os.environ, PYTHONPATH=str(src)) if src else dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    commands = {"ruff": [_ruff(), "check", "--isolated", "--no-cache", "--exit-zero", str(tree)],
                "lint": [sys.executable, "-m", "tapelab.cli", "lint", str(tree)]}
    times: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory() as neutral:  # no pyproject.toml above: neither tool is configured
        for argv in commands.values():
            _wall(argv, neutral, env)
        for _ in range(rounds):
            for name, argv in commands.items():
                times[name].append(_wall(argv, neutral, env))
    return statistics.median(times["ruff"]), statistics.median(times["lint"])


def site_report() -> None:
    timings = {}
    for jobs in (1, None):
        start = time.perf_counter()
        findings, warnings, files = lint_paths(TREES, jobs=jobs)
        timings[jobs] = time.perf_counter() - start
    per_rule = collections.Counter(f"{f.number} {f.code}" for f in findings)
    print(f"installed TensorFlow and Keras: {files} files, warnings (not parsed): {len(warnings)}")
    print(f"  one process: {files / timings[1]:.0f} files/s; all cores: {files / timings[None]:.0f} files/s "
          f"({timings[1] / timings[None]:.2f}x)")
    print(f"  findings: {len(findings)}")
    for rule, count in sorted(per_rule.items()):
        print(f"    {rule}: {count}")
    for finding in findings[:40]:
        print(f"    {finding.where()}: {finding.code}: {finding.message}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, help="the folder both tools lint (default: bench/corpus.py's corpus)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--src", type=Path, help="lint with the tapelab package under this folder instead")
    args = parser.parse_args(argv)
    if args.tree is None:
        from corpus import corpus_root  # bench/corpus.py, beside this file

        args.tree = corpus_root()
    tree = args.tree.resolve()
    files = sum(1 for _ in tree.rglob("*.py"))
    print(f"tree: {tree}, {files} .py files; {args.rounds} rounds, {os.cpu_count()} cores")
    ruff, lint = versus_ruff(tree, args.rounds, args.src and args.src.resolve())
    ratio = lint / ruff
    goal = "goal met" if ratio <= GOAL_RATIO else f"MISSED (goal {GOAL_RATIO:.0f}x)"
    print(f"ruff check: {ruff:.2f} s; tapelab lint: {lint:.2f} s (medians): {ratio:.1f}x ruff  {goal}")
    site_report()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
