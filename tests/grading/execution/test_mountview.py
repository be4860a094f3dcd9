"""The mount plan's first step (`mountcalls`): other kernels' scratch folders are unmounted from a new kernel's
namespace, also when one of them vanishes on its own meanwhile (its kernel ended and the host removed its folder)."""
import os
import subprocess
import sys

import pytest

from tapelab.grading.execution import mountcalls

# How the step's detach behaves. VANISHED: the first call detaches the mount, as the host's removal of the
# folder does to this namespace's copy, so the step's own detach then fails on a mount already gone.
VANISHED = "real = calls._detach\ndef detach(point):\n    real(point)\n    real(point)\ncalls._detach = detach\n"
STUCK = ("import errno\ndef detach(point):\n    raise OSError(errno.EBUSY, 'target is busy')\n"
         "calls._detach = detach\n")
RUN = """
import importlib.util, os, subprocess, sys
spec = importlib.util.spec_from_file_location("calls", {path!r})
calls = importlib.util.module_from_spec(spec)
spec.loader.exec_module(calls)
root = {root!r}
for n in ("a", "b", "me"):
    os.makedirs(f"{{root}}/kernel-{{n}}")
    subprocess.run(["mount", "-t", "tmpfs", "tapelab-test", f"{{root}}/kernel-{{n}}"], check=True)
{detach}
try:
    calls.build([["drop", f"{{root}}/kernel-", [f"{{root}}/kernel-me"]]])
except RuntimeError as error:
    sys.exit(str(error))
print("DONE")
for line in open("/proc/self/mountinfo"):
    if line.split()[4].startswith(root + "/"):
        print("LEFT " + line.split()[4])
"""


def _run(tmp_path, detach: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Three scratch tmpfs mounts (two siblings and the kernel's own) in a new mount namespace, then the
    step; its result and the mount points left under the scratch root."""
    root = os.path.realpath(tmp_path / "scratch")
    script = RUN.format(path=mountcalls.__file__, root=root, detach=detach)
    result = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable, "-I", "-c", script],
                            capture_output=True, text=True, timeout=60)
    left = {line.split(" ", 1)[1] for line in result.stdout.splitlines() if line.startswith("LEFT ")}
    return result, left


@pytest.mark.parametrize("detach", ["", VANISHED], ids=["unmounted", "vanished-meanwhile"])
def test_only_the_kernels_own_scratch_is_left(tmp_path, detach):
    """Is the kernel's own scratch the only mount left under the scratch root, and does the step succeed
    when a sibling's mount was already gone by the time the step detaches it?"""
    result, left = _run(tmp_path, detach)
    assert result.returncode == 0 and "DONE" in result.stdout, result.stderr
    assert left == {os.path.realpath(tmp_path / "scratch" / "kernel-me")}


def test_a_sibling_that_stays_mounted_stops_the_plan_and_is_named(tmp_path):
    """Does a sibling whose detach fails and that is still mounted stop the plan (the kernel then does
    not start), with a message naming it?"""
    result, _ = _run(tmp_path, STUCK)
    assert result.returncode != 0 and "DONE" not in result.stdout
    root = os.path.realpath(tmp_path / "scratch")
    assert "still mounted" in result.stderr, result.stderr
    assert f"{root}/kernel-a" in result.stderr and f"{root}/kernel-b" in result.stderr, result.stderr
