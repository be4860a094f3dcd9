"""The mount script's first step: other kernels' scratch folders are unmounted from a new kernel's namespace,
also when one of them vanishes on its own meanwhile (its kernel ended and the host removed its folder)."""
import os
import shutil
import subprocess

import pytest

from tapelab.grading.execution.mountview import drop_siblings

UMOUNT = shutil.which("umount")
# `umount` as the script finds it on PATH: the first call detaches the mount, as the host's removal of the
# folder does to this namespace's copy, so the script's own unmount then fails on a mount already gone.
VANISHED = f'#!/bin/sh\n{UMOUNT} "$@" 2>/dev/null\nexec {UMOUNT} "$@"\n'
STUCK = "#!/bin/sh\necho 'umount: target is busy' >&2\nexit 32\n"


def _run(tmp_path, umount: str | None) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Three scratch tmpfs mounts (two siblings and the kernel's own) in a new mount namespace, then the
    step; its result and the mount points left under the scratch root."""
    root = os.path.realpath(tmp_path / "scratch")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if umount is not None:
        (bin_dir / "umount").write_text(umount)
        (bin_dir / "umount").chmod(0o755)
    script = "\n".join([
        "set -e",
        *(f"mkdir -p {root}/kernel-{n} && mount -t tmpfs tapelab-test {root}/kernel-{n}" for n in ("a", "b", "me")),
        drop_siblings(f"{root}/kernel-", [f"{root}/kernel-me"]),
        "echo DONE",
        f"awk 'index($5, \"{root}/\") == 1 {{print \"LEFT \" $5}}' /proc/self/mountinfo",
    ])
    result = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                            env={"PATH": f"{bin_dir}:/usr/sbin:/usr/bin:/sbin:/bin"}, capture_output=True,
                            text=True, timeout=60)
    left = {line.split(" ", 1)[1] for line in result.stdout.splitlines() if line.startswith("LEFT ")}
    return result, left


@pytest.mark.parametrize("umount", [None, VANISHED], ids=["unmounted", "vanished-meanwhile"])
def test_only_the_kernels_own_scratch_is_left(tmp_path, umount):
    """Is the kernel's own scratch the only mount left under the scratch root, and does the step succeed
    when a sibling's mount was already gone by the time the script unmounts it?"""
    result, left = _run(tmp_path, umount)
    assert result.returncode == 0 and "DONE" in result.stdout, result.stderr
    assert left == {os.path.realpath(tmp_path / "scratch" / "kernel-me")}


def test_a_sibling_that_stays_mounted_stops_the_script_and_is_named(tmp_path):
    """Does a sibling whose unmount fails and that is still mounted stop the script (the kernel then does
    not start), with a message naming it?"""
    result, _ = _run(tmp_path, STUCK)
    assert result.returncode != 0 and "DONE" not in result.stdout
    root = os.path.realpath(tmp_path / "scratch")
    assert "still mounted" in result.stderr, result.stderr
    assert f"{root}/kernel-a" in result.stderr and f"{root}/kernel-b" in result.stderr, result.stderr
