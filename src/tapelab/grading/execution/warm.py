"""Warm kernels: the zygotes, and the provisioner that forks from them.

A Dask worker (threads and all) starts a zygote (`zygote.py`) at its first warm kernel and keeps it
for its life, one for each set of preloaded modules its notebooks ask for (TensorFlow's, or the light
one of a notebook without it: `zygote.preload_for`). A local pool's coordinator starts one shared zygote
per set (`Zygote(shared=True)`, at the first notebook that asks for it) and its workers connect to it
(`joined`): the TensorFlow import is paid once per pool, or per Dask worker, and only where a notebook
uses it; nothing is shared between students, since each kernel is a fork that isolates itself before
ipykernel starts. `ForkedProvisioner` is jupyter_client's local provisioner with the launch replaced, so the
kernel manager, the executor's client, interrupts and kills (the process group of the kernel's
middle process, see zygote._middle) work as on the cold path.

A zygote that cannot start, dies, refuses or times out raises ZygoteError (a KernelStartError: no
student code ran), and the worker starts that kernel cold. A zygote that failed MAX_STARTS times is
not started again in this process. A zygote ends when its control socket reads end of file, which the
death of the process that started it (however it dies) causes: no parent-death signal, which fires when
the *thread* that started a process ends, and Dask runs tasks in a pool of threads.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from jupyter_client.provisioning import LocalProvisioner

from tapelab.grading.execution import zygote as zygote_module
from tapelab.grading.execution.kernels import KernelStartError, kernel_env
from tapelab.grading.execution.sandbox import KERNEL_ARGS, Slot

__all__ = ["ForkedProcess", "ForkedProvisioner", "Joined", "Zygote", "ZygoteError", "current", "joined", "judge",
           "provisioner", "stop"]

START_SECONDS = 180  # for the zygote's imports, on a loaded machine
ANSWER_SECONDS = zygote_module.SETUP_SECONDS + 30
MAX_STARTS = 3
INLINE = "module://matplotlib_inline.backend_inline"  # ipykernel's default backend, set before the imports
_BOOT = ("import sys\n"
         "del sys.path[0]\n"  # -c's '', as ipykernel_launcher drops its folder's entry
         "from importlib.util import module_from_spec, spec_from_file_location\n"
         "spec = spec_from_file_location('tapelab_zygote', {path!r})\n"
         "zygote = module_from_spec(spec)\n"
         "spec.loader.exec_module(zygote)\n"
         "zygote.serve({fd}, {preload!r}, {listener!r})\n")


class ZygoteError(KernelStartError):
    """The zygote could not fork this kernel (it is gone, refused or timed out): start it cold."""


class _Channel:
    """A socket to a zygote; requests from several threads take turns, each with its answer."""

    process: subprocess.Popen | None = None

    def __init__(self, connected: socket.socket):
        self._socket, self._buffer, self._lock = connected, b"", threading.Lock()
        self.broken = ""

    def _ready(self) -> dict:
        """The facts the zygote tells once it has prepared (ZygoteError if it says why not, or ends)."""
        with self._lock:
            answer = self._receive(START_SECONDS)
        if "ready" not in answer:
            raise ZygoteError(answer.get("error") or "the zygote did not say it was ready")
        return answer["ready"]

    def alive(self) -> bool:
        return not self.broken and (self.process is None or self.process.poll() is None)

    def _receive(self, seconds: float) -> dict:
        end = time.monotonic() + seconds
        while b"\n" not in self._buffer:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self._socket], [], [], left)[0]:
                self.broken = f"the zygote did not answer within {seconds:.0f} s"
                raise ZygoteError(self.broken)
            try:
                chunk = self._socket.recv(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                status = "" if self.process is None else f" (exit status {self.process.poll()})"
                self.broken = f"the zygote ended{status}"
                raise ZygoteError(self.broken)
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def ask(self, request: dict) -> dict:
        """One request and its answer; ZygoteError when the zygote is gone, stuck or says no."""
        with self._lock:
            if not self.alive():
                raise ZygoteError(self.broken or "the zygote has ended")
            try:
                self._socket.sendall(json.dumps(request).encode() + b"\n")
            except OSError as error:
                self.broken = f"the zygote's socket failed ({error})"
                raise ZygoteError(self.broken) from None
            answer = self._receive(ANSWER_SECONDS)
        if "error" in answer:
            raise ZygoteError(answer["error"])
        return answer

    def close(self) -> None:
        self.broken = self.broken or "closed"
        self._socket.close()


class Zygote(_Channel):
    """A zygote this process started, through its control socket. `shared`: it also listens at `address`
    (in its home folder, which only this user may enter) for the connections of `Joined`, and this
    constructor returns without waiting for it to be ready (each connection is told so)."""

    def __init__(self, python: str, preload: tuple[str, ...] = zygote_module.PRELOAD, shared: bool = False):
        self.home = tempfile.mkdtemp(prefix="tapelab-zygote-", dir="/tmp")
        self.address = os.path.join(self.home, "zygote.sock")
        ours, theirs = socket.socketpair()
        listener = socket.socket(socket.AF_UNIX) if shared else None
        passed = [theirs] if listener is None else [theirs, listener]
        env = {**kernel_env(Path(self.home), python), "OPENBLAS_NUM_THREADS": "1", "MPLBACKEND": INLINE}
        boot = _BOOT.format(path=zygote_module.__file__, fd=theirs.fileno(), preload=tuple(preload),
                            listener=listener and listener.fileno())
        try:
            if listener is not None:
                listener.bind(self.address)
                listener.listen(64)
            self.process = subprocess.Popen([python, "-c", boot], pass_fds=[s.fileno() for s in passed], cwd="/",
                                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError as error:
            ours.close()
            shutil.rmtree(self.home, ignore_errors=True)
            raise ZygoteError(f"the zygote could not be started ({error})") from None
        finally:
            for socket_ in passed:
                socket_.close()
        super().__init__(ours)
        self.facts: dict = {}
        if not shared:
            try:
                self.facts = self._ready()
            except ZygoteError:
                self.close()
                raise

    def close(self) -> None:
        """Stop the zygote (its kernels die with it) and remove its home folder."""
        self.broken = self.broken or "closed"
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait(10)
        super().close()
        shutil.rmtree(self.home, ignore_errors=True)


class Joined(_Channel):
    """A connection to a pool's shared zygote (at `address`): closing it leaves the zygote running."""

    def __init__(self, address: str):
        connected = socket.socket(socket.AF_UNIX)
        try:
            connected.connect(address)
        except OSError as error:
            connected.close()
            raise ZygoteError(f"the pool's zygote is gone ({error})") from None
        super().__init__(connected)
        try:
            self.facts = self._ready()
        except ZygoteError:
            self.close()
            raise


_zygotes: dict[tuple[str, ...], Zygote] = {}  # by what each preloads
_joined: dict[str, Joined] = {}  # by address
_failed: list[str] = []
_guard = threading.Lock()


def current(python: str = sys.executable, preload: tuple[str, ...] = zygote_module.PRELOAD) -> Zygote:
    """This worker process's zygote preloading `preload`, started on first use (or again after it ended).
    MAX_STARTS failures of any of them end the warm path in this worker process."""
    with _guard:
        zygote = _zygotes.get(preload)
        if zygote is not None and zygote.alive():
            return zygote
        if zygote is not None:
            _failed.append(zygote.broken)
            zygote.close()
            del _zygotes[preload]
        if len(_failed) >= MAX_STARTS:
            raise ZygoteError(f"the zygote of this worker failed {len(_failed)} times (last: {_failed[-1]}); "
                              "this worker starts its kernels cold")
        try:
            _zygotes[preload] = Zygote(python, preload)
        except ZygoteError as error:
            _failed.append(str(error))
            raise
        return _zygotes[preload]


def judge(preload: tuple[str, ...] = zygote_module.PRELOAD, shared: str | None = None) -> socket.socket:
    """A connection to a judge (tapelab.grading.execution.judge.serve) forked by the shared zygote at address
    `shared`, or (None) by this worker process's zygote that preloads `preload`."""
    answer = (joined(shared) if shared else current(preload=preload)).ask({"op": "judge"})
    channel = socket.socket(socket.AF_UNIX)
    channel.connect(answer["path"])
    return channel


def joined(address: str) -> Joined:
    """This process's connection to the shared zygote at `address`, made on first use; ZygoteError once it
    is broken (the zygote ended: the pool starts another, at another address, for the next notebooks)."""
    with _guard:
        if address not in _joined:
            _joined[address] = Joined(address)
        if not _joined[address].alive():
            raise ZygoteError(_joined[address].broken)
        return _joined[address]


def stop() -> None:
    """Stop this process's zygotes and close its connections, if any (the worker is ending)."""
    with _guard:
        while _zygotes:
            _zygotes.popitem()[1].close()
        while _joined:
            _joined.popitem()[1].close()


class ForkedProcess:
    """The middle process of a forked kernel, with the part of Popen's interface jupyter_client uses.
    It is the zygote's child, so it is watched through a pidfd and reaped by the zygote; it is reaped
    only in `wait`, after it ended, so its pid (and process group) cannot be reused before."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int, zygote: Zygote):
        self.pid, self._zygote = pid, zygote
        self._pidfd: int | None = os.pidfd_open(pid)
        self.returncode: int | None = None

    def _ended(self, seconds: float = 0.0) -> bool:
        return self._pidfd is None or bool(select.select([self._pidfd], [], [], seconds)[0])

    def poll(self) -> int | None:
        if self.returncode is not None:
            return self.returncode
        return -signal.SIGKILL if self._ended() else None  # the true status comes with `wait`

    async def ended(self) -> None:
        """Return once the process has ended: woken by its pidfd, not by polling."""
        if self._ended():
            return
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        loop.add_reader(self._pidfd, lambda: done.done() or done.set_result(None))
        try:
            await done
        finally:
            loop.remove_reader(self._pidfd)

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended(timeout if timeout is not None else 3600):
            raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout)
        if self.returncode is None:
            try:
                self.returncode = self._zygote.ask({"op": "reap", "pid": self.pid})["status"]
            except ZygoteError:  # the zygote ended too: init reaps its children
                self.returncode = -signal.SIGKILL
            self.release()
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self._pidfd is not None and self.returncode is None:
            signal.pidfd_send_signal(self._pidfd, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def release(self) -> None:
        """Kill the kernel if it still runs, reap it, and close the pidfd (the provisioner's cleanup)."""
        if self._pidfd is None:
            return
        if self.returncode is None:
            with contextlib.suppress(OSError):
                self.kill()
            if self._ended(10):
                self.wait()
                return
        os.close(self._pidfd)
        self._pidfd = None


def provisioner(slot: Slot, preload: tuple[str, ...] = zygote_module.PRELOAD,
                shared: str | None = None) -> Callable[..., ForkedProvisioner]:
    """What SandboxKernelManager.configure takes: makes the provisioner of a kernel in `slot`, forked from
    the shared zygote at address `shared`, or (None) from this process's zygote that preloads `preload`."""
    def make(**traits) -> ForkedProvisioner:
        made = ForkedProvisioner(**traits)
        made.slot, made.preload, made.shared = slot, preload, shared
        return made
    return make


class ForkedProvisioner(LocalProvisioner):
    """LocalProvisioner (the connection file, ports, poll, kill) whose launch forks from the zygote."""

    slot: Slot | None = None
    preload: tuple[str, ...] = zygote_module.PRELOAD
    shared: str | None = None

    async def launch_kernel(self, cmd: list[str], **kwargs) -> dict:
        if cmd[1:len(KERNEL_ARGS)] != list(KERNEL_ARGS[:-1]):
            raise ZygoteError(f"not an ipykernel command line: {cmd[:4]}")
        zygote = await (asyncio.to_thread(joined, self.shared) if self.shared else  # the first waits for the imports
                        asyncio.to_thread(current, cmd[0], self.preload))
        cwd = str(kwargs.get("cwd") or self.slot.scratch)
        env = {**kwargs.get("env", {}), "JPY_PARENT_PID": str(os.getpid()), "PWD": cwd}  # as the cold path adds
        request = {"op": "spawn", "uid": self.slot.uid, "cwd": cwd, "env": env, "argv": cmd[len(KERNEL_ARGS) - 1:],
                   "view": self.slot.mount_plan(cmd[0]), "rlimits": self.slot.sandbox.limits.rlimits()}
        self.process = ForkedProcess(zygote.ask(request)["pid"], zygote)  # here, so a cancellation cannot orphan it
        self.pid = self.pgid = self.process.pid
        self.cwd = cwd
        return self.connection_info

    async def cleanup(self, restart: bool = False) -> None:
        if self.process is not None:
            self.process.release()
        await super().cleanup(restart)
