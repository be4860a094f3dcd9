"""A grading worker's pin of a class's submissions: expected values computed once per variant values and case
(tapelab.release_variants._COMPUTED) against the same pins with the memo emptied before each submission.

    python bench/pin.py [--students 12]      (`make bench`)

One process plays one grading worker: it pins 02_model_variables and 06_fit_vs_custom (the notebooks whose
checks take expected values from the references) for N students of one course, in turns, once with the memo kept
and once emptied per submission, after one warm-up pin (TensorFlow and Keras' first-use costs are a worker's, not
a submission's). Prints the mean seconds per submission of each and their ratio, measured in the same run.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.update(TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")

import nbformat  # noqa: E402

from tapelab import release_variants  # noqa: E402
from tapelab.paths import NOTEBOOKS  # noqa: E402

PINNED = ("02_model_variables", "06_fit_vs_custom")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=12)
    students = parser.parse_args().students
    notebooks = {name: nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4) for name in PINNED}
    checkers = {name: release_variants.notebook_exercises(nb) for name, nb in notebooks.items()}
    release_variants.pin(nbformat.from_dict(notebooks[PINNED[0]]), "bench", "warm-up", checkers[PINNED[0]])
    seconds: dict[str, dict[str, list[float]]] = {"memo kept": {}, "memo emptied": {}}
    kept: dict = {}
    for i in range(students):
        for mode, per_notebook in seconds.items():
            release_variants._COMPUTED = kept if mode == "memo kept" else {}
            for name, nb in notebooks.items():
                start = time.monotonic()
                release_variants.pin(nbformat.from_dict(nb), "a course secret", f"student{i}", checkers[name])
                per_notebook.setdefault(name, []).append(time.monotonic() - start)
    print(f"Pin seconds per submission, {students} students of one course, one worker (load {os.getloadavg()[0]:.1f})")
    print(f"{'notebook':22} {'memo emptied':>13} {'memo kept':>10} {'ratio':>6}")
    for name in PINNED:
        cold, warm = (statistics.mean(seconds[m][name]) for m in ("memo emptied", "memo kept"))
        print(f"{name:22} {cold:13.2f} {warm:10.2f} {cold / warm:6.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
