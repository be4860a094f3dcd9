"""Kernel isolation on Linux: which protections this machine offers, and the kernel's command line.

With root, `unshare`, `setpriv` and `prlimit`, each kernel runs:
- in its own network and IPC namespaces (no network at all; the kernel talks over Unix sockets),
- in its own mount namespace that shows exactly what the kernel needs of the hidden parts of the
  host: one fresh private tmpfs (bounded bytes and inodes) serves /tmp, /var/tmp, /dev/shm and every
  directory that other users may write; other files they may write read as /dev/null; the course
  folder, solutions/, the submissions and the repo's instructor folders are empty; every folder on
  the way to the Python environment that other users cannot enter is an empty tmpfs holding only
  the path to it. The needed paths (interpreter, prefixes, sys.path, scratch) are bind-mounted back
  at their original paths, so a checkout in a 0700 folder works,
- in its own PID namespace with a private /proc (other students' kernels are invisible),
- as a sandbox user of its own (one uid per concurrent kernel slot, never root, no groups,
  no new privileges): it cannot write the installed packages nor read another kernel's files,
- under rlimits: address space, CPU seconds, file size, process count, no core dumps,
- in a scratch folder that is a tmpfs of its own (bounded bytes and inodes, mode 0700, owned by its
  uid) as cwd and HOME, unmounted when the kernel ends.
Anything unavailable is reported as off in the run's `protections`; grading still works.
"""
from __future__ import annotations

import fcntl
import functools
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Limits", "Sandbox", "SandboxError", "Slot", "environment_problem", "probe", "protections",
           "release_all", "unavailable"]

UID_BASE = 2_000_000_000  # far from real and container-mapped users
UID_SLOTS = 64
SCRATCH_ROOT = "/var/tmp/tapelab-sandbox"
TEMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")  # always private, whatever the scan finds
# File systems that hold no one's files (their writable entries are per process or kernel knobs).
_VIRTUAL = {"proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "securityfs", "debugfs", "tracefs", "bpf",
            "pstore", "configfs", "fusectl", "binfmt_misc", "efivarfs", "autofs", "rpc_pipefs", "nsfs", "selinuxfs"}


class SandboxError(ValueError):
    """The kernels' user could not use this machine's Python environment: nothing is graded."""


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 4 * 1024**3  # address space: TensorFlow reserves about 1.2 GB at import
    cpu_seconds: int = 900
    file_bytes: int = 256 * 1024**2
    processes: int = 512  # threads count too; TensorFlow starts dozens
    tmp_bytes: int = 256 * 1024**2  # /tmp, /var/tmp, /dev/shm and the other shared folders, together
    tmp_inodes: int = 16_384
    scratch_bytes: int = 256 * 1024**2
    scratch_inodes: int = 16_384


@dataclass(frozen=True)
class Sandbox:
    """What the worker should do; picklable, built by the coordinator from `probe()`."""

    isolate: bool  # namespaces + sandbox uid (needs root)
    rlimits: bool
    hide: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)
    scratch_root: str = SCRATCH_ROOT


_UNSHARE = ["unshare", "--net", "--ipc", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc",
            "--propagation", "private", "--"]


@functools.lru_cache(maxsize=None)
def probe() -> dict[str, str]:
    """Which isolation tools work here: name -> "" when available, else why not."""
    missing = {}
    if not sys.platform.startswith("linux"):
        return {k: f"not Linux ({sys.platform})" for k in ("namespaces", "user", "rlimits")}
    tools = {t: shutil.which(t) for t in ("unshare", "setpriv", "prlimit", "mount")}
    if os.geteuid() != 0:
        missing["namespaces"] = "not running as root"
        missing["user"] = "not running as root"
    elif not tools["unshare"] or not tools["mount"]:
        missing["namespaces"] = "`unshare` or `mount` not found (util-linux)"
    else:
        test = subprocess.run([*_UNSHARE, "mount", "-t", "tmpfs", "-o", "size=4k", "tapelab-probe", "/tmp"],
                              capture_output=True)
        if test.returncode != 0:
            missing["namespaces"] = f"unshare failed: {test.stderr.decode(errors='replace').strip()[:200]}"
    if os.geteuid() == 0 and not tools["setpriv"]:
        missing["user"] = "`setpriv` not found (util-linux)"
    if not tools["prlimit"]:
        missing["rlimits"] = "`prlimit` not found (util-linux)"
    return {k: missing.get(k, "") for k in ("namespaces", "user", "rlimits")}


def unavailable(sandbox: Sandbox) -> list[str]:
    """What `sandbox` asks for that this machine cannot do ("name: why"), empty when it can do all."""
    why = probe()
    wanted = {"namespaces": sandbox.isolate, "user": sandbox.isolate, "rlimits": sandbox.rlimits}
    return [f"{name}: {why[name]}" for name, on in wanted.items() if on and why[name]]


def protections(sandbox: Sandbox, why: dict[str, str] | None = None) -> dict[str, dict[str, object]]:
    """The report's `protections`: each measure, whether it is on, and how (or why not).

    `why` is the probe of the machines that execute (default: this one)."""
    why = why or probe()
    iso = sandbox.isolate
    lim = sandbox.limits

    def entry(on: bool, how: str, off: str) -> dict[str, object]:
        return {"on": on, "how": how if on else f"OFF: {off}"}

    return {
        "network": entry(iso, "own network and IPC namespaces, no interfaces up", why["namespaces"] or "disabled"),
        "filesystem": entry(iso, "mount namespace: course, solutions, submissions hidden; private /tmp, /var/tmp, "
                            "/dev/shm and every folder others may write; only the Python environment visible in "
                            "folders others cannot enter", why["namespaces"] or "disabled"),
        "processes": entry(iso, "PID namespace with private /proc", why["namespaces"] or "disabled"),
        "user": entry(iso, "unprivileged sandbox uid per kernel slot, no new privileges",
                      why["user"] or why["namespaces"] or "disabled"),
        "memory": entry(sandbox.rlimits, f"address space <= {lim.memory_bytes // 1024**2} MB",
                        why["rlimits"] or "disabled"),
        "cpu": entry(sandbox.rlimits, f"<= {lim.cpu_seconds} CPU seconds", why["rlimits"] or "disabled"),
        "disk": entry(iso, f"writable only in tmpfs, gone with the kernel: scratch <= {lim.scratch_bytes // 1024**2} "
                      f"MB and {lim.scratch_inodes} files; /tmp, /var/tmp, /dev/shm and shared folders together <= "
                      f"{lim.tmp_bytes // 1024**2} MB and {lim.tmp_inodes} files",
                      why["namespaces"] or "disabled"),
        "scratch": entry(True, "fresh empty working folder per submission, deleted afterwards", ""),
        "output": entry(True, "output bytes counted as they arrive; kernel stopped past the limit", ""),
        "time": entry(True, "per-cell and per-notebook timeouts", ""),
    }


# -- what the kernel needs, and what must not be shared ------------------------------------------------
@functools.lru_cache(maxsize=None)
def _environment(python: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(every real path the kernel needs of this machine, the sys.path entries among them)."""
    from tapelab.grading.worker import kernel_sys_path  # worker imports this module

    entries = {os.path.realpath(p) for p in kernel_sys_path(python) if os.path.exists(p)}
    needed = entries | {os.path.realpath(p) for p in (python, sys.prefix, sys.base_prefix)}
    return tuple(sorted(needed)), tuple(sorted(entries))


def environment_problem(python: str = sys.executable) -> str:
    """Why the sandbox uid cannot use the kernel's Python environment safely ("" when it can, or when
    kernels run as the grader's own user): each needed path (and each entry of a sys.path folder) must
    be readable, and not writable, by others."""
    why = probe()
    if why["namespaces"] or why["user"]:
        return ""
    needed, entries = _environment(python)
    for path in needed:
        inside = os.listdir(path) if path in entries and os.path.isdir(path) else []
        for item in [path, *(os.path.join(path, name) for name in inside)]:
            problem = _unusable(item, path, executable=item == os.path.realpath(python))
            if problem:
                return problem
    return ""


def _unusable(item: str, path: str, executable: bool) -> str:
    try:
        mode = os.stat(item).st_mode
    except OSError:
        return ""  # a dangling link: nothing to read
    want = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) or executable else 0)
    if mode & want != want:
        what = f"the Python environment {path}" if item == path else f"{item} in the Python environment {path}"
        return (f"the grading kernels run as an unprivileged user, who cannot read {what} (mode "
                f"{stat.filemode(mode)}): run `chmod -R o+rX {path}`, or move the checkout and its .venv where "
                "other users may read them, then grade again")
    if item == path and mode & stat.S_IWOTH:
        return (f"{path}, part of the Python environment the kernels import from, is writable by every user "
                f"(mode {stat.filemode(mode)}), so a student could plant modules there: run `chmod o-w {path}`, "
                "then grade again")
    return ""


def _mounts() -> list[tuple[str, str]]:
    """(mount point, file system type) of every mount this process sees."""
    found = []
    with open("/proc/self/mountinfo", "rb") as table:
        for line in table:
            left, right = line.split(b" - ", 1)
            point = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), left.split()[4])
            found.append((os.fsdecode(point), right.split()[0].decode()))
    return found


@functools.lru_cache(maxsize=None)
def _shared_writable(extra: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(directories, other files) that every user may write, on the real file systems and in `extra`.

    Folders others cannot enter are skipped: nothing in them is reachable, except what `extra` holds."""
    starts = sorted({p for p, fstype in _mounts() if fstype not in _VIRTUAL and os.path.isdir(p)} | set(extra))
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
    raise SandboxError(f"the sandbox needs one of {', '.join(TEMP_DIRS)} or /run to hold no part of the Python "
                       f"environment ({', '.join(needed)}): move the checkout and its .venv elsewhere")


def _mount_script(hide: tuple[str, ...], limits: Limits, needed: list[str]) -> str:
    """Shell commands, run as root inside the new mount namespace, that build the kernel's view."""
    covers, nulls = _covers(hide, needed)
    stage = _staging(covers, needed)
    covers.setdefault(stage, 0o755)  # /run, when no temp folder would do: shown empty
    q = shlex.quote
    head = ["set -e", f"mount -t tmpfs -o size={limits.tmp_bytes},nr_inodes={limits.tmp_inodes},mode=0755,"
            f"nosuid,nodev tapelab-private {q(stage)}", f"mkdir -m 0700 {q(stage)}/.stage"]
    body, tail, done = [], [], {}  # done: path -> "cover" | "needed", for the paths handled so far
    for n, path in enumerate(sorted({*covers, *needed, *nulls}, key=lambda p: Path(p).parts)):
        above = next((a for a in _ancestors(path) if a in done), None)
        hidden = done.get(above) == "cover"
        if path in covers:
            if not hidden:  # (a cover in a cover is already hidden, and only shows the way to needed paths)
                done[path] = "cover"
                head.append(f"mkdir -m {covers[path]:o} {q(stage)}/{n}")
                (tail if path == stage else body).append(f"mount --bind {q(stage)}/{n} {q(path)}")
        elif path in needed:
            done[path] = "needed"
            if hidden:  # bring it back at its own path, through empty folders
                point = (lambda p: f"mkdir -m 0700 {q(p)}") if os.path.isdir(path) else (lambda p: f": > {q(p)}")
                head += [point(f"{stage}/.stage/{n}"), f"mount --rbind {q(path)} {q(stage)}/.stage/{n}"]
                body += [f"[ -d {q(f)} ] || mkdir -m 0711 {q(f)}" for f in reversed(_ancestors(path))
                         if f != above and _inside(f, above)]
                body += [point(path), f"mount --move {q(stage)}/.stage/{n} {q(path)}"]
        elif not hidden:
            body.append(f"mount --bind /dev/null {q(path)}")
    return "\n".join([*head, *body, *tail, 'exec "$@"'])


# -- slots ---------------------------------------------------------------------------------------------
_ACTIVE: set[Slot] = set()


class Slot:
    """A sandbox uid and a scratch folder for one kernel; the uid is held with a lock file."""

    def __init__(self, sandbox: Sandbox):
        self.sandbox = sandbox
        self.uid: int | None = None
        self._lock = None
        self.scratch: Path | None = None
        _ACTIVE.add(self)
        try:
            self.scratch = self._scratch() if sandbox.isolate else Path(tempfile.mkdtemp(prefix="kernel-"))
        except BaseException:
            self.release()
            raise

    def _scratch(self) -> Path:
        """A uid of its own, and a tmpfs of its own (mode 0700, owned by that uid) as scratch folder."""
        root = Path(self.sandbox.scratch_root)
        root.mkdir(mode=0o711, parents=True, exist_ok=True)
        os.chmod(root, 0o711)
        self._acquire(root)
        scratch = Path(tempfile.mkdtemp(prefix="kernel-", dir=root))
        os.chown(scratch, self.uid, self.uid)  # so that a killed run's leftover is found by its uid
        lim = self.sandbox.limits
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={lim.scratch_bytes},nr_inodes="
                                  f"{lim.scratch_inodes},mode=0700,uid={self.uid},gid={self.uid},nosuid,nodev",
                                  "tapelab-scratch", str(scratch)], capture_output=True, text=True)
        if mounted.returncode != 0:
            os.rmdir(scratch)
            raise RuntimeError(f"cannot mount the kernel's scratch tmpfs on {scratch}: {mounted.stderr.strip()}")
        return scratch

    def _acquire(self, root: Path) -> None:
        locks = root / ".locks"
        locks.mkdir(mode=0o700, exist_ok=True)
        for n in range(UID_SLOTS):
            handle = open(locks / f"uid-{n}", "w")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.close()
                continue
            self.uid, self._lock = UID_BASE + n, handle
            kill_uid(self.uid)  # leftovers of a killed run
            for stale in root.glob("kernel-*"):
                try:
                    mine = stale.stat().st_uid == self.uid
                except OSError:  # released meanwhile
                    continue
                if mine:
                    _remove_scratch(stale)
            return
        raise RuntimeError(f"all {UID_SLOTS} sandbox uids are busy")

    def argv(self, python: str) -> list[str]:
        """The kernel's command line: isolation wrappers, then ipykernel."""
        sb, lim = self.sandbox, self.sandbox.limits
        prefix: list[str] = []
        if sb.isolate:
            needed = [*_environment(python)[0], os.path.realpath(self.scratch)]
            # The parent-death signal makes `unshare` die with the worker; --kill-child takes the kernel along.
            prefix += ["setpriv", "--pdeathsig=KILL", "--", *_UNSHARE, "/bin/sh", "-c",
                       _mount_script(sb.hide, lim, needed), "tapelab-sandbox"]
        if sb.rlimits:
            prefix += ["prlimit", f"--as={lim.memory_bytes}", f"--cpu={lim.cpu_seconds}",
                       f"--fsize={lim.file_bytes}", f"--nproc={lim.processes}", "--core=0", "--"]
        if sb.isolate:
            prefix += ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups",
                       "--no-new-privs", "--pdeathsig=KILL", "--"]
        return prefix + [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"]

    def give(self, path: Path) -> None:
        """Hand a file the kernel must read (its connection file) to the sandbox uid."""
        if self.uid is not None:
            os.chown(path, self.uid, self.uid)

    def release(self) -> None:
        """Kill whatever the sandbox uid still runs, remove the scratch folder, free the uid."""
        _ACTIVE.discard(self)
        if self.uid is not None:
            kill_uid(self.uid)
        if self.scratch is not None:
            _remove_scratch(self.scratch)
        if self._lock is not None:
            self._lock.close()
            self._lock = None


def release_all() -> None:
    """Release every slot of this process (its kernels die): for a worker whose coordinator is gone."""
    for slot in list(_ACTIVE):
        slot.release()


def _remove_scratch(path: Path) -> None:
    if os.path.ismount(path):
        subprocess.run(["umount", "--lazy", str(path)], capture_output=True)
    shutil.rmtree(path, ignore_errors=True)


def kill_uid(uid: int) -> None:
    """SIGKILL every process whose real uid is `uid` (a sandbox uid runs nothing else)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as status:
                for line in status:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            os.kill(int(entry), signal.SIGKILL)
                        break
        except (OSError, ValueError):
            continue
