"""Kernel isolation on Linux: which protections this machine offers, and the kernel's command line.

With root, `unshare`, `setpriv` and `prlimit`, each kernel runs:
- in its own network namespace (no network at all; the kernel talks over Unix sockets, IPC transport),
- in its own mount namespace where the course folder, solutions/, the submissions and the repo's
  instructor folders are covered by empty tmpfs mounts, and /tmp, /dev/shm are private and small,
- in its own PID namespace with a private /proc (other students' kernels are invisible),
- as a sandbox user of its own (one uid per concurrent kernel slot, never root, no groups,
  no new privileges): it cannot write the installed packages nor read another kernel's files,
- under rlimits: address space, CPU seconds, file size, process count, no core dumps,
- in a fresh scratch folder (mode 0700, owned by its uid) as cwd and HOME.
Anything unavailable is reported as off in the run's `protections`; grading still works.
"""
from __future__ import annotations

import fcntl
import functools
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Limits", "Sandbox", "probe", "protections", "Slot", "unavailable"]

UID_BASE = 2_000_000_000  # far from real and container-mapped users
UID_SLOTS = 64
SCRATCH_ROOT = "/var/tmp/tapelab-sandbox"


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 4 * 1024**3  # address space: TensorFlow reserves about 1.2 GB at import
    cpu_seconds: int = 900
    file_bytes: int = 256 * 1024**2
    processes: int = 512  # threads count too; TensorFlow starts dozens
    tmp_bytes: int = 256 * 1024**2


@dataclass(frozen=True)
class Sandbox:
    """What the worker should do; picklable, built by the coordinator from `probe()`."""

    isolate: bool  # namespaces + sandbox uid (needs root)
    rlimits: bool
    hide: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)
    scratch_root: str = SCRATCH_ROOT


@functools.lru_cache(maxsize=None)
def probe() -> dict[str, str]:
    """Which isolation tools work here: name -> "" when available, else why not."""
    missing = {}
    if not sys.platform.startswith("linux"):
        return {k: f"not Linux ({sys.platform})" for k in ("namespaces", "user", "rlimits")}
    tools = {t: shutil.which(t) for t in ("unshare", "setpriv", "prlimit")}
    if os.geteuid() != 0:
        missing["namespaces"] = "not running as root"
        missing["user"] = "not running as root"
    elif not tools["unshare"]:
        missing["namespaces"] = "`unshare` not found (util-linux)"
    else:
        test = subprocess.run(["unshare", "--net", "--mount", "--pid", "--fork", "--kill-child",
                               "--mount-proc", "--propagation", "private", "true"], capture_output=True)
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
        "network": entry(iso, "own network namespace, no interfaces up", why["namespaces"] or "disabled"),
        "filesystem": entry(iso, "mount namespace: course, solutions, submissions hidden; private "
                            + (", ".join(_private_tmp_dirs(sandbox.scratch_root)) or "temp folders: none (the "
                               "grader runs from one)"), why["namespaces"] or "disabled"),
        "processes": entry(iso, "PID namespace with private /proc", why["namespaces"] or "disabled"),
        "user": entry(iso, "unprivileged sandbox uid per kernel slot, no new privileges",
                      why["user"] or why["namespaces"] or "disabled"),
        "memory": entry(sandbox.rlimits, f"address space <= {lim.memory_bytes // 1024**2} MB",
                        why["rlimits"] or "disabled"),
        "cpu": entry(sandbox.rlimits, f"<= {lim.cpu_seconds} CPU seconds", why["rlimits"] or "disabled"),
        "scratch": entry(True, "fresh empty working folder per submission", ""),
        "output": entry(True, "output bytes counted as they arrive; kernel stopped past the limit", ""),
        "time": entry(True, "per-cell and per-notebook timeouts", ""),
    }


def _private_tmp_dirs(scratch_root: str) -> list[str]:
    """The shared temp folders to replace by a private tmpfs: all but those holding what the
    kernel needs (the scratch folder, the Python environment, the tapelab package)."""
    needed = [scratch_root, sys.prefix, sys.base_prefix, os.path.realpath(sys.executable),
              str(Path(__file__).resolve().parents[2])]
    return [p for p in ("/tmp", "/dev/shm", "/var/tmp")
            if os.path.isdir(p) and not any((n + "/").startswith(p + "/") for n in needed)]


def _mount_script(hide: tuple[str, ...], limits: Limits, scratch_root: str) -> str:
    lines = ["set -e"]
    covered = _private_tmp_dirs(scratch_root)
    for private in covered:
        lines.append(f"mount -t tmpfs -o size={limits.tmp_bytes},mode=1777 tmpfs {private}")
    for path in hide:
        if any((path + "/").startswith(p + "/") for p in covered):
            continue  # already under a private tmpfs
        if os.path.isdir(path):
            lines.append(f"mount -t tmpfs -o size=4k,mode=0 tmpfs {shlex.quote(path)}")
        elif os.path.exists(path):
            lines.append(f"mount --bind /dev/null {shlex.quote(path)}")
    lines.append('exec "$@"')
    return "\n".join(lines)


class Slot:
    """A sandbox uid and a scratch folder for one kernel; the uid is held with a lock file."""

    def __init__(self, sandbox: Sandbox):
        self.sandbox = sandbox
        self.uid: int | None = None
        self._lock = None
        root = Path(sandbox.scratch_root if sandbox.isolate else tempfile.gettempdir())
        if sandbox.isolate:
            root.mkdir(mode=0o711, parents=True, exist_ok=True)
            os.chmod(root, 0o711)
            self._acquire(root)
        self.scratch = Path(tempfile.mkdtemp(prefix="kernel-", dir=root))
        if self.uid is not None:
            os.chown(self.scratch, self.uid, self.uid)
        os.chmod(self.scratch, 0o700)

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
                if stale.stat().st_uid == self.uid:
                    shutil.rmtree(stale, ignore_errors=True)
            return
        raise RuntimeError(f"all {UID_SLOTS} sandbox uids are busy")

    def argv(self, python: str) -> list[str]:
        """The kernel's command line: isolation wrappers, then ipykernel."""
        sb, lim = self.sandbox, self.sandbox.limits
        prefix: list[str] = []
        if sb.isolate:
            # The parent-death signal makes `unshare` die with the worker; --kill-child takes the kernel along.
            prefix += ["setpriv", "--pdeathsig=KILL", "--", "unshare", "--net", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc",
                       "--propagation", "private", "--", "/bin/sh", "-c",
                       _mount_script(sb.hide, lim, sb.scratch_root), "tapelab-sandbox"]
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
        """Kill whatever the sandbox uid still runs, delete the scratch folder, free the uid."""
        if self.uid is not None:
            kill_uid(self.uid)
        shutil.rmtree(self.scratch, ignore_errors=True)
        if self._lock is not None:
            self._lock.close()
            self._lock = None


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
