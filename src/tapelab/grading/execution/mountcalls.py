"""The kernel's view of the host, built with mount(2) calls: the plan `mountview` makes, carried out without
starting a process.

Run as root inside the kernel's new mount namespace: on the warm path by the kernel's own process (the zygote
loads this file by its path, as it is itself loaded), on the cold path as a script between `unshare` and the
rest of the kernel's command line (`python -I -S mountcalls.py PLAN NEXT...`: it builds the view, then
executes NEXT with PWD set, as the shell that built it before did). Imports nothing of tapelab.

A plan is a JSON list of steps, each [name, *arguments], done in order; the first that fails stops it
(RuntimeError; the script exits with its message):
- ["drop", prefix, keep]: detach every mount whose point starts with `prefix`, but those in `keep` (see `_drop`);
- ["tmpfs", point, options]: mount a tmpfs (nosuid, nodev) with `options` (size=..., nr_inodes=..., mode=...);
- ["dir", path, mode]: make a folder with exactly `mode` (whatever the umask), as `mkdir -m` does;
- ["way", path, mode]: the same, unless a folder is there already (a folder on the way to a needed path);
- ["file", path]: make an empty file, as the shell's `: > path` does;
- ["bind", source, point], ["rbind", source, point], ["move", source, point]: as `mount --bind`, `--rbind`
  and `--move` call mount(2).
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import sys

MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 12, 1 << 13, 1 << 14, 1 << 18
MNT_DETACH = 2
libc = ctypes.CDLL(None, use_errno=True)


def check(result: int, what: str) -> None:
    """Raise OSError, naming `what`, when a libc call returned non-zero."""
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else os.fsencode(text)


def mount(source: str | None, point: str, fstype: str | None, flags: int, options: str | None = None) -> None:
    check(libc.mount(_bytes(source), _bytes(point), _bytes(fstype), ctypes.c_ulong(flags), _bytes(options)),
          f"mount {point}")


def _detach(point: str) -> None:
    check(libc.umount2(os.fsencode(point), ctypes.c_int(MNT_DETACH)), f"umount {point}")


def mounts() -> list[tuple[str, str]]:
    """(mount point, file system type) of every mount this process sees, in table order."""
    found = []
    with open("/proc/self/mountinfo", "rb") as table:
        for line in table:
            left, right = line.split(b" - ", 1)
            point = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), left.split()[4])
            found.append((os.fsdecode(point), right.split()[0].decode()))
    return found


def _points(prefix: str, keep: list[str]) -> list[str]:
    """The mount points this namespace holds that start with `prefix`, but those in `keep`, in table order."""
    return [point for point, _ in mounts() if point.startswith(prefix) and point not in keep]


def _drop(prefix: str, keep: list[str]) -> None:
    """Detach the mounts `_points` names. A sibling's mount can vanish before its turn: when its kernel ends,
    the host removes its folder, which detaches the copies in every other namespace too. So a failed detach
    is not an error by itself; a mount still listed afterwards is."""
    for point in _points(prefix, keep):
        try:
            _detach(point)
        except OSError:
            pass
    left = _points(prefix, keep)
    if left:
        raise RuntimeError(f"other kernels' scratch folders are still mounted: {' '.join(left)}")


def _folder(path: str, mode: int) -> None:
    os.mkdir(path, mode)
    os.chmod(path, mode)  # the umask took its bits from mkdir's, and mkdir(2) may drop the sticky bit


def _way(path: str, mode: int) -> None:
    if not os.path.isdir(path):
        _folder(path, mode)


def _file(path: str) -> None:
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666))


STEPS = {
    "drop": _drop,
    "tmpfs": lambda point, options: mount("tapelab-private", point, "tmpfs", MS_NOSUID | MS_NODEV, options),
    "dir": _folder,
    "way": _way,
    "file": _file,
    "bind": lambda source, point: mount(source, point, None, MS_BIND),
    "rbind": lambda source, point: mount(source, point, None, MS_BIND | MS_REC),
    "move": lambda source, point: mount(source, point, None, MS_MOVE),
}


def build(plan: list[list]) -> None:
    """Carry out `plan`, step by step; RuntimeError, naming the step, at the first that fails."""
    for name, *arguments in plan:
        try:
            STEPS[name](*arguments)
        except OSError as error:
            raise RuntimeError(f"the kernel's view could not be built, at {[name, *arguments]}: {error}") from None


if __name__ == "__main__":
    os.environ["PWD"] = os.getcwd()  # as /bin/sh, which ran the view before, set it for the commands it ran
    try:
        build(json.loads(sys.argv[1]))
    except RuntimeError as error:
        sys.exit(str(error))
    for ignored in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores them; the shell left them as Popen set them
        signal.signal(ignored, signal.SIG_DFL)
    os.execvp(sys.argv[2], sys.argv[2:])
