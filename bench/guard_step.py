"""The kernel guard's steps and checks, two versions in one run: the working tree's against a revision's.

    python bench/guard_step.py [--notebook 06_fit_vs_custom] [--base REVISION] [--rounds 3] [--steps 8]

Each version runs in its own interpreter (the guard's audit hook cannot be removed), set up as a warm grading kernel
is: NumPy, TensorFlow, Keras and pyplot imported first (the zygote's preload), the zygote's snapshot for the guard
when the version has one (in_kernel.py `snapshot`, taken outside the timing), an IPython shell, then the guard's
prologue (`channel.Session` and in_kernel.py of the version under test) with the notebook's trusted imports, read from
solutions/<notebook>.ipynb as `Course.trusted_imports` reads the instructor's notebook. Then, `--steps` times: a small
Keras fit and a gradient (so TensorFlow's own modules and classes change as they do while cells run), a fresh step
(the executor's step before a check: restore, re-import tapelab, snapshot it), a check ("tapelab.guard.check", what a
checker sends after each call of student code) and a restore-only step (after the last check in a row).
Interpreters alternate, base, ours, ours, base, base, ours..., so a loaded machine slows both alike. Prints each
phase's median per version, the ratios ours / base, and the load.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GUARD = "src/tapelab/grading/integrity"
FILES = ("channel.py", "in_kernel.py")  # the executor's side and the kernel's
BEFORE = "3a5b747"  # the guard before issue 55's block scans (it scans module by module, class by class)
PHASES = ("prologue", "fresh step", "check", "restore step")

KERNEL = r'''
import json, statistics, sys, time
import numpy as np, tensorflow as tf, keras, matplotlib.pyplot  # the zygote's preload
from IPython.core.interactiveshell import InteractiveShell
import importlib.util

folder, imports, steps = json.loads(sys.argv[1])
spec = importlib.util.spec_from_file_location("guard_channel", f"{folder}/channel.py")
channel = importlib.util.module_from_spec(spec)
spec.loader.exec_module(channel)
for name in [m for m in sys.modules if m.startswith("tapelab.") and ".grading." not in m]:
    del sys.modules[name]  # the kernel's first import of the notebook's tapelab modules is the prologue's
spec = importlib.util.spec_from_file_location("guard_in_kernel", f"{folder}/in_kernel.py")
in_kernel = importlib.util.module_from_spec(spec)
spec.loader.exec_module(in_kernel)
if hasattr(in_kernel, "snapshot"):  # a version whose zygote hands its snapshot to the kernel's prologue
    vars(sys)[in_kernel.HANDOVER] = in_kernel.snapshot()
shell = InteractiveShell.instance()
session = channel.Session(imports, list(sys.path))
times = {"prologue": [], "fresh step": [], "check": [], "restore step": []}

def timed(phase, code):
    start = time.perf_counter()
    exec(code, shell.user_ns)
    times[phase].append(time.perf_counter() - start)

def step(phase, fresh):
    timed(phase, session.step(fresh))
    text = repr(shell.user_ns[channel.REPORT_EXPRESSION])
    assert session.findings({"content": {"user_expressions": {"tapelab_guard": {"data": {"text/plain": text}}}}}) == []

timed("prologue", session.prologue())
for _ in range(steps):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile("adam", "mse")
    model.fit(np.ones((8, 3)), np.ones((8, 2)), verbose=0, epochs=2)
    x = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        y = x * x
    tape.gradient(y, x)
    step("fresh step", True)
    timed("check", "__import__('sys').audit('tapelab.guard.check')")
    step("restore step", False)
print(json.dumps({phase: statistics.median(values) for phase, values in times.items()}))
'''


def trusted_imports(notebook: str) -> list[str]:
    """The notebook's trusted imports, as the grader reads them from a course's source folder."""
    from tapelab.grading.course import Course

    folder = Path(tempfile.mkdtemp(prefix="guard-step-"))
    (folder / "source" / notebook).mkdir(parents=True)
    (folder / "source" / notebook / f"{notebook}.ipynb").symlink_to(REPO / "solutions" / f"{notebook}.ipynb")
    course = Course.__new__(Course)
    course.root = folder
    return course.trusted_imports(notebook, notebook)


def run(folder: Path, imports: list[str], steps: int) -> dict[str, float]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")
    out = subprocess.run([sys.executable, "-c", KERNEL, json.dumps([str(folder), imports, steps])],
                         capture_output=True, text=True, env=env, cwd=REPO, check=False)
    if out.returncode:
        raise SystemExit(f"the kernel of {folder} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebook", default="06_fit_vs_custom")
    parser.add_argument("--base", default=BEFORE, help="the revision whose guard is the old way")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    from tapelab.grading.execution.worker import cache_bytecode

    cache_bytecode()  # as the worker does before its kernels: a re-import reads bytecode, not source
    imports = trusted_imports(args.notebook)
    base = Path(tempfile.mkdtemp(prefix="guard-base-"))
    for name in FILES:
        (base / name).write_text(subprocess.run(["git", "show", f"{args.base}:{GUARD}/{name}"], cwd=REPO,
                                                capture_output=True, text=True, check=True).stdout, encoding="utf-8")
    results: dict[str, list[dict]] = {"base": [], "ours": []}
    folders = {"base": base, "ours": REPO / GUARD}
    for round_ in range(args.rounds):
        for name in ("base", "ours") if round_ % 2 == 0 else ("ours", "base"):
            results[name].append(run(folders[name], imports, args.steps))
    shutil.rmtree(base)
    print(f"{args.notebook}, {len(imports)} trusted imports, {args.rounds} rounds of {args.steps} steps, "
          f"base {args.base}; medians in ms (load {os.getloadavg()[0]:.1f}):")
    for phase in PHASES:
        old, new = (statistics.median(r[phase] for r in results[name]) for name in ("base", "ours"))
        print(f"  {phase:<13} base {old * 1000:7.1f}  ours {new * 1000:7.1f}  ratio {new / old:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
