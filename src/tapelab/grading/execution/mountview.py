"""The kernel's view of the host's file systems: the plan of mount(2) calls that builds its mount namespace.

Carried out by `mountcalls` as root inside a new mount namespace (after `unshare` on the cold path, in the
zygote's child on the warm one), the plan mounts one private tmpfs for every folder others may write,
empties the folders the kernel must not see, and brings back, at their own paths, the paths it needs (see
`sandbox` for what that protects).
"""
from __future__ import annotations

import functools
import os
import stat
import subprocess
from pathlib import Path

from tapelab.errors import InfraError
from tapelab.grading.execution.mountcalls import mounts

__all__ = ["TEMP_DIRS", "ViewError", "mount_plan"]

TEMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")  # always private, whatever the scan finds
# File systems that hold no one's files (their writable entries are per process or kernel knobs).
_VIRTUAL = {"proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "securityfs", "debugfs", "tracefs", "bpf",
            "pstore", "configfs", "fusectl", "binfmt_misc", "efivarfs", "autofs", "rpc_pipefs", "nsfs", "selinuxfs"}


class ViewError(InfraError, ValueError):
    """No view can be built for these paths (`sandbox` turns it into a SandboxError)."""


@functools.lru_cache(maxsize=None)
def _shared_writable(extra: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(directories, other files) that every user may write, on the real file systems and in `extra`.

    Folders others cannot enter are skipped: nothing in them is reachable, except what `extra` holds."""
    starts = sorted({p for p, fstype in mounts() if fstype not in _VIRTUAL and os.path.isdir(p)} | set(extra))
    found = subprocess.run(["find", *starts, "-xdev", "(", "-type", "d", "!", "-perm", "-0001", "-prune", ")",
                            "-o", "-perm", "-0002", "(", "-type", "d", "-printf", "d%p\\0", "-o", "-type", "f,p,s",
                            "-printf", "f%p\\0", ")"], capture_output=True).stdout
    items = {os.fsdecode(item) for item in found.split(b"\0") if item}
    return (tuple(sorted(i[1:] for i in items if i[0] == "d")), tuple(sorted(i[1:] for i in items if i[0] == "f")))


# -- the kernel's mount namespace ----------------------------------------------------------------------
def _ancestors(path: str) -> list[str]:
    """Every folder above `path`, nearest first, without /."""
    return [str(p) for p in Path(path).parents if str(p) != "/"]


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _covers(hide: tuple[str, ...], needed: list[str]) -> tuple[dict[str, int], set[str]]:
    """(folder -> mode of the empty folder shown there, files to show as /dev/null)."""
    closed = {f for n in needed for f in _ancestors(n) if not os.stat(f).st_mode & stat.S_IXOTH}
    behind = tuple(n for n in needed if os.path.isdir(n) and any(_inside(n, c) for c in closed))
    dirs, files = _shared_writable(behind)  # what is behind closed folders is not reached by the scan
    covers = {os.path.realpath(p): 0o1777 for p in [*TEMP_DIRS, *dirs] if os.path.isdir(p)}
    nulls = set(files)
    for path in map(os.path.realpath, hide):
        if os.path.isdir(path):
            covers.setdefault(path, 0o711 if any(_inside(n, path) for n in needed) else 0)
        elif os.path.exists(path):
            nulls.add(path)
    for folder in closed:  # others cannot enter: show only the way to what the kernel needs
        covers.setdefault(folder, 0o711)
    return {p: m for p, m in covers.items() if p not in needed}, nulls - set(needed)


def _staging(covers: dict[str, int], needed: list[str]) -> str:
    """A folder the kernel does not need, with no needed path in it or above it and no cover above it:
    the private tmpfs is mounted there first, holds the needed paths while the covers go up, and is
    itself covered last."""
    for place in map(os.path.realpath, (*TEMP_DIRS, "/run")):
        if os.path.isdir(place) and not any(_inside(n, place) or _inside(place, n) for n in needed) \
                and not any(_inside(place, c) for c in covers if c != place):
            return place
    raise ViewError(f"the sandbox needs one of {', '.join(TEMP_DIRS)} or /run to hold no part of the Python "
                       f"environment ({', '.join(needed)}): move the checkout and its .venv elsewhere")


def mount_plan(hide: tuple[str, ...], needed: list[str], tmp_bytes: int, tmp_inodes: int,
               siblings: str) -> list[list]:
    """The steps (`mountcalls`' plan) that build the kernel's view, done as root inside its new mount namespace.

    Mounts whose point starts with `siblings` (other kernels' scratch folders, copied from the host
    with the rest) and that are not needed are detached first: a kernel's namespace holds no other
    kernel's files, not even under a cover, and does not keep them alive after that kernel ends."""
    covers, nulls = _covers(hide, needed)
    stage = _staging(covers, needed)
    covers.setdefault(stage, 0o755)  # /run, when no temp folder would do: shown empty
    keep = [n for n in needed if _inside(n, os.path.dirname(siblings))]
    head = [["drop", siblings, keep], ["tmpfs", stage, f"size={tmp_bytes},nr_inodes={tmp_inodes},mode=0755"],
            ["dir", f"{stage}/.stage", 0o700]]
    body, tail, done = [], [], {}  # done: path -> "cover" | "needed", for the paths handled so far
    for n, path in enumerate(sorted({*covers, *needed, *nulls}, key=lambda p: Path(p).parts)):
        above = next((a for a in _ancestors(path) if a in done), None)
        hidden = done.get(above) == "cover"
        if path in covers:
            if not hidden:  # (a cover in a cover is already hidden, and only shows the way to needed paths)
                done[path] = "cover"
                head.append(["dir", f"{stage}/{n}", covers[path]])
                (tail if path == stage else body).append(["bind", f"{stage}/{n}", path])
        elif path in needed:
            done[path] = "needed"
            if hidden:  # bring it back at its own path, through empty folders
                point = (lambda p: ["dir", p, 0o700]) if os.path.isdir(path) else (lambda p: ["file", p])
                head += [point(f"{stage}/.stage/{n}"), ["rbind", path, f"{stage}/.stage/{n}"]]
                body += [["way", f, 0o711] for f in reversed(_ancestors(path)) if f != above and _inside(f, above)]
                body += [point(path), ["move", f"{stage}/.stage/{n}", path]]
        elif not hidden:
            body.append(["bind", "/dev/null", path])
    return [*head, *body, *tail]
