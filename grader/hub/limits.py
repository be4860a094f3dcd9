"""What one user of the course hub may take, and how every process of a user is ended (stdlib only).

JupyterHub's LocalProcessSpawner runs each server as its user and nothing more: no memory, task or CPU
limit, the machine's shared /tmp, and processes that outlive the server. `LimitedSpawner` starts each
server, before it drops root, in that user's own cgroups (cgroup v1: memory, pids, cpu, as this machine
has them) and in a mount namespace of its own whose world-writable folders (/tmp, /var/tmp, /run/lock,
/dev/shm) are small private tmpfs. Everything the server starts (kernels, terminals, what a notebook
forks) stays in both. When the server stops, every process of its user is killed (`end_user`).

`end_user` is also `make hub-stop`'s: a child that becomes the user sends SIGKILL to every process the
user has (kill(-1), as the user can), until none is left, a bounded number of rounds. A process that forks
on SIGTERM or stops itself gets no chance to.
"""
from __future__ import annotations

import ctypes
import os
import signal
import time
from pathlib import Path

CGROUPS = Path("/sys/fs/cgroup")
GROUP = "tapelab-hub"
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/run/lock", "/dev/shm")
PRIVATE_SIZE = "256m"
CPU_PERIOD_US = 100_000
_MS_NOSUID, _MS_NODEV, _MS_REC, _MS_PRIVATE = 2, 4, 16384, 1 << 18
_CLONE_NEWNS = 0x00020000
_LIBC = ctypes.CDLL(None, use_errno=True)  # loaded here: a forked child of a threaded hub must not dlopen


def cgroup(controller: str, user: str) -> Path:
    return CGROUPS / controller / GROUP / user


def set_limits(user: str, memory_bytes: int, tasks: int, cpus: float) -> None:
    """The user's cgroups with their limits (made, or updated)."""
    values = {"memory": [("memory.limit_in_bytes", memory_bytes), ("memory.memsw.limit_in_bytes", memory_bytes)],
              "pids": [("pids.max", tasks)], "cpu": [("cpu.cfs_period_us", CPU_PERIOD_US),
                                                      ("cpu.cfs_quota_us", int(cpus * CPU_PERIOD_US))]}
    for controller, settings in values.items():
        folder = cgroup(controller, user)
        folder.mkdir(parents=True, exist_ok=True)
        for name, value in settings:
            if (folder / name).exists():  # memsw exists only where swap accounting is on
                (folder / name).write_text(str(value))


def join(user: str) -> None:
    """Put the calling process into the user's cgroups (its children follow)."""
    for controller in ("memory", "pids", "cpu"):
        (cgroup(controller, user) / "cgroup.procs").write_text(str(os.getpid()))


def private_tmp() -> None:
    """A mount namespace of the calling process's own, with a small tmpfs on each world-writable folder."""
    libc = _LIBC
    if libc.unshare(_CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        raise OSError(ctypes.get_errno(), "making / private")
    for folder in PRIVATE_DIRS:
        if os.path.isdir(folder) and libc.mount(b"tmpfs", folder.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV,
                                                 f"size={PRIVATE_SIZE},mode=1777".encode()) != 0:
            raise OSError(ctypes.get_errno(), f"mounting a private tmpfs on {folder}")


def processes_of(uid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid and not _zombie(entry):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def _zombie(entry: Path) -> bool:
    try:
        return (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def end_user(uid: int, gid: int, rounds: int = 50) -> bool:
    """SIGKILL every process of `uid` until none is left (at most `rounds` rounds); True when none is."""
    if uid == 0:
        raise ValueError("end_user never signals root's processes")
    for _ in range(rounds):
        if not processes_of(uid):
            return True
        child = os.fork()
        if child == 0:  # pragma: no cover - the child only signals and exits
            try:
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(child, 0)
        time.sleep(0.05)
    return not processes_of(uid)


def remove_groups(user: str) -> None:
    """Remove the user's cgroups (empty once `end_user` is done), and the hub's own when no other is left."""
    for controller in ("memory", "pids", "cpu"):
        for folder in (cgroup(controller, user), cgroup(controller, user).parent):
            try:
                folder.rmdir()
            except OSError:  # gone already, or (the hub's folder) another user's still in it
                pass


def spawner_class():
    """LocalProcessSpawner with the limits above (imported by jupyterhub_config.py, where JupyterHub is)."""
    import pwd

    from jupyterhub.spawner import LocalProcessSpawner
    from traitlets import Float, Integer

    class LimitedSpawner(LocalProcessSpawner):
        """Each server in its user's cgroups and a private /tmp; all the user's processes end with it."""

        memory_bytes = Integer(2 * 1024**3, config=True, help="memory of all the user's processes")
        tasks = Integer(512, config=True, help="processes and threads of the user at once")
        cpus = Float(1.0, config=True, help="cores of CPU time the user's processes may take together")

        def make_preexec_fn(self, name):
            set_user = super().make_preexec_fn(name)
            set_limits(name, self.memory_bytes, self.tasks, self.cpus)

            def preexec():
                join(name)
                private_tmp()
                set_user()
            return preexec

        async def stop(self, now=False):
            await super().stop(now=now)
            entry = pwd.getpwnam(self.user.name)
            end_user(entry.pw_uid, entry.pw_gid)

    return LimitedSpawner
