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

The kernel can start cold (this module's command line: a fresh interpreter that imports everything)
or warm (`zygote`: forked from a process that imported TensorFlow once, or only NumPy for a notebook
that does not use it). Both paths take the mount
plan (`Slot.mount_plan`, carried out by `mountcalls`), the rlimits (`Limits.rlimits`) and the uid from
here, so every protection above holds alike on both.
"""
from __future__ import annotations

import fcntl
import functools
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tapelab.errors import UsageError
from tapelab.grading.execution import mountcalls
from tapelab.grading.execution.kernels import kernel_sys_path
from tapelab.grading.execution.mountview import TEMP_DIRS, ViewError, mount_plan

__all__ = ["KERNEL_ARGS", "TEMP_DIRS", "Limits", "Sandbox", "SandboxError", "Slot", "environment_problem",
           "kernel_start", "probe", "protections", "release_all", "unavailable"]

UID_BASE = 2_000_000_000  # far from real and container-mapped users
UID_SLOTS = 64
SCRATCH_ROOT = "/var/tmp/tapelab-sandbox"
KERNEL_ARGS = ("-m", "ipykernel_launcher", "-f", "{connection_file}")  # after the interpreter, on both paths
KERNELS_VARIABLE = "TAPELAB_KERNELS"  # "cold" forces the cold start (for comparison); "warm", the default


class SandboxError(UsageError, ValueError):
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

    def rlimits(self) -> dict[str, int]:
        """Each rlimit by its name (RLIMIT_<name>, prlimit's --<name>), soft and hard alike."""
        return {"AS": self.memory_bytes, "CPU": self.cpu_seconds, "FSIZE": self.file_bytes,
                "NPROC": self.processes, "CORE": 0}


def kernel_start() -> str:
    """How kernels should start, from TAPELAB_KERNELS: "warm" (the default) or "cold"."""
    wanted = os.environ.get(KERNELS_VARIABLE, "warm").strip().lower() or "warm"
    if wanted not in ("warm", "cold"):
        raise SandboxError(f"{KERNELS_VARIABLE}={wanted!r} is neither `warm` nor `cold`: unset it (warm kernels "
                           "where the sandbox allows them) or set it to `cold`")
    return wanted


@dataclass(frozen=True)
class Sandbox:
    """What the worker should do; picklable, built by the coordinator from `probe()`."""

    isolate: bool  # namespaces + sandbox uid (needs root)
    rlimits: bool
    hide: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)
    scratch_root: str = SCRATCH_ROOT
    kernels: str = field(default_factory=kernel_start)  # "warm": where probe()["warm"] allows it; or "cold"

    @property
    def warm(self) -> bool:
        """Whether kernels may start warm: asked for, and with every protection on (never with fewer)."""
        return self.kernels == "warm" and self.isolate and self.rlimits


_UNSHARE = ["unshare", "--net", "--ipc", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc",
            "--propagation", "private", "--"]


@functools.lru_cache(maxsize=None)
def probe() -> dict[str, str]:
    """Which isolation tools work here: name -> "" when available, else why not."""
    missing = {}
    if not sys.platform.startswith("linux"):
        return {k: f"not Linux ({sys.platform})" for k in ("namespaces", "user", "rlimits", "warm")}
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
    missing["warm"] = missing.get("namespaces") or missing.get("user") or missing.get("rlimits") or _warm_problem()
    return {k: missing.get(k, "") for k in ("namespaces", "user", "rlimits", "warm")}


def _warm_problem() -> str:
    """Why kernels cannot be forked from a zygote here ("" when they can): it needs pidfds (Linux 5.3)."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError) as error:
        return f"no pidfd_open on this system ({error})"
    return ""


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
        "kernel start": _start_entry(sandbox, why),
    }


def _start_entry(sandbox: Sandbox, why: dict[str, str]) -> dict[str, object]:
    """Which path starts the kernels; either keeps every protection above, so it is always "on"."""
    if sandbox.warm and not why.get("warm", "not probed"):
        return {"on": True, "path": "warm", "how": "warm: forked from a zygote per local pool (or per Dask worker "
                "process) that imported TensorFlow, Keras, NumPy, matplotlib and ipykernel (NumPy and ipykernel alone "
                "for a notebook that does not use TensorFlow) and ran no op, then isolated as above before any student "
                "code; a submission whose warm start fails is started cold"}
    because = (f"{KERNELS_VARIABLE}=cold" if sandbox.kernels == "cold" else
               "the sandbox is not fully on" if not (sandbox.isolate and sandbox.rlimits) else why.get("warm"))
    return {"on": True, "path": "cold", "how": f"cold: a fresh interpreter per kernel ({because})"}


# -- what the kernel needs, and what must not be shared ------------------------------------------------
@functools.lru_cache(maxsize=None)
def _environment(python: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(every real path the kernel needs of this machine, the sys.path entries among them)."""

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

    def mount_plan(self, python: str) -> list[list]:
        """The steps (`mountcalls`' plan), done as root in the kernel's new mount namespace, that build its
        view of the host."""
        needed = [*_environment(python)[0], os.path.realpath(self.scratch)]
        lim = self.sandbox.limits
        try:
            return mount_plan(self.sandbox.hide, needed, lim.tmp_bytes, lim.tmp_inodes,
                                f"{os.path.realpath(self.sandbox.scratch_root)}/kernel-")
        except ViewError as error:
            raise SandboxError(str(error)) from None

    def argv(self, python: str) -> list[str]:
        """The cold kernel's command line: isolation wrappers, then ipykernel."""
        sb = self.sandbox
        prefix: list[str] = []
        if sb.isolate:
            # The parent-death signal makes `unshare` die with the worker; --kill-child takes the kernel along.
            prefix += ["setpriv", "--pdeathsig=KILL", "--", *_UNSHARE, python, "-I", "-S", mountcalls.__file__,
                       json.dumps(self.mount_plan(python))]
        if sb.rlimits:
            prefix += ["prlimit", *(f"--{name.lower()}={value}" for name, value in sb.limits.rlimits().items()), "--"]
        if sb.isolate:
            prefix += ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups",
                       "--no-new-privs", "--pdeathsig=KILL", "--"]
        return prefix + [python, *KERNEL_ARGS]

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
