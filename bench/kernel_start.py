"""Warm kernel start: a zygote that preloads what ipykernel's start imports against one that does not.

    python bench/kernel_start.py [--rounds 8]      (as root, where warm kernels can start; `make bench`)

Two zygotes in this process, the light one of a notebook without TensorFlow (`zygote.LIGHT`) and a baseline
preloading only NumPy and ipykernel.ipkernel (what LIGHT was before `zygote.KERNEL_START`), start kernels in
turns, A B A B..., for the same one-cell notebook under the full sandbox; each kernel's `start` phase (slot
made, kernel forked, isolated and answering) is read from its facts. Prints both medians and their ratio,
measured in the same run, so a loaded machine slows both alike.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

os.environ.update(TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")

import nbformat  # noqa: E402
from nbformat.v4 import new_code_cell, new_notebook  # noqa: E402

from tapelab.grading.execution import warm, worker, zygote  # noqa: E402
from tapelab.grading.execution.sandbox import Sandbox  # noqa: E402

BASELINE = ("numpy", "ipykernel.ipkernel")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    rounds = parser.parse_args().rounds
    nb = nbformat.writes(new_notebook(cells=[new_code_cell("print(1 + 1)")]))
    settings = worker.Settings(60, 120, 10**7, Sandbox(isolate=True, rlimits=True, kernels="warm"),
                               packages=frozenset())
    starts: dict[tuple[str, ...], list[float]] = {BASELINE: [], zygote.LIGHT: []}
    chosen = zygote.LIGHT
    worker.zygote.preload_for = lambda packages: chosen  # this process's worker only: pick the zygote
    try:
        for preload in starts:  # each zygote's own start (the imports) is not a kernel's
            warm.current(sys.executable, preload)
        for _ in range(rounds):
            for preload in starts:
                chosen = preload
                facts = worker.execute(nb, settings)["facts"]
                if facts.get("kernel") != "warm":
                    print(f"a kernel did not start warm: {facts.get('warm_failed') or facts}", file=sys.stderr)
                    return 1
                starts[preload].append(facts["timing"]["start"])
    finally:
        warm.stop()
    base, light = (statistics.median(starts[p]) for p in (BASELINE, zygote.LIGHT))
    print(f"kernel start, median of {rounds}: baseline preload {base:.3f} s, with KERNEL_START {light:.3f} s; "
          f"ratio {light / base:.2f} (load {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
