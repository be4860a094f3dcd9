"""How a grading kernel is launched: the kernel manager both start paths share.

Cold, the kernel is a subprocess of the sandbox Slot's command line (`Slot.argv`); warm, a provisioner
(`warm.ForkedProvisioner`) forks it from the worker's zygote. Either way the manager writes the
connection file, hands it to the sandbox uid and bounds every message frame, and the executor's
client drives, interrupts and kills the kernel alike.
"""
from __future__ import annotations

import functools
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from queue import Empty
from typing import Callable

import zmq
import zmq.asyncio
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager

from tapelab.errors import InfraError

__all__ = ["KernelStartError", "ReadyClient", "SandboxKernelManager", "kernel_env", "kernel_sys_path"]


RECONNECT_MS = 5  # how often the client retries connecting to a kernel that is not listening yet


class KernelStartError(InfraError, RuntimeError):
    """The kernel did not start: an infrastructure fault, never the student's (no student code ran)."""


class SandboxKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel command comes from a sandbox Slot, and whose sockets refuse
    any message frame longer than `max_frame` bytes (ZeroMQ drops that connection instead).
    With `provisioner` (a callable taking a provisioner's traits and returning one, such as
    warm.provisioner) the kernel is launched by that provisioner instead of as a subprocess of `argv`."""

    def configure(self, argv: list[str], give: Callable[[str], None], max_frame: int,
                  provisioner: Callable[..., object] | None = None) -> None:
        self._kernel_spec = KernelSpec(argv=argv, display_name="tapelab sandbox", language="python",
                                       interrupt_mode="message", env={})
        self._give = give
        self._provisioner = provisioner
        self.client_factory = ReadyClient
        self.context = zmq.asyncio.Context()
        self.context.setsockopt(zmq.MAXMSGSIZE, max_frame)
        # The client connects before the kernel has bound its sockets; ZeroMQ retries a failed connection every
        # 100 ms by default, so the kernel's first message waited up to that long, and iopub's subscription often
        # came after the kernel had reported the first kernel_info idle (then asked again, 0.2 s later).
        self.context.setsockopt(zmq.RECONNECT_IVL, RECONNECT_MS)

    def client(self, **kw):
        return super().client(context=self.context, **kw)  # the client's sockets get the same bound

    async def _async_wait(self, pollinterval: float = 0.1) -> None:
        """Until the kernel's process has ended: a forked kernel's pidfd says so at once (warm.ForkedProcess.ended),
        where jupyter_client polls every `pollinterval` seconds (so each stop waited about 0.1 s more)."""
        ended = getattr(getattr(self.provisioner, "process", None), "ended", None)
        if ended is None:
            return await super()._async_wait(pollinterval)
        await ended()

    async def _async_pre_start_kernel(self, **kw):
        if self.provisioner is None and getattr(self, "_provisioner", None) is not None:
            self.kernel_id = self.kernel_id or kw.pop("kernel_id", str(uuid.uuid4()))
            self.provisioner = self._provisioner(kernel_id=self.kernel_id, kernel_spec=self.kernel_spec, parent=self)
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        self._give(self.connection_file)  # the sandbox uid must read its connection file
        return cmd, kw


class ReadyClient(AsyncKernelClient):
    """The client of a sandbox kernel: ready as soon as the kernel has answered a kernel_info request on
    shell and reported that request idle on iopub (so iopub is connected and holds nothing more of it).
    jupyter_client's wait then drains iopub until 0.2 s pass without a message, idle in every start; the
    executor ignores any message whose parent is not its own request, so nothing is left to drain."""

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        end = time.monotonic() + (float("inf") if timeout is None else timeout)
        sent: set[str] = set()
        while True:
            sent.add(self.kernel_info())
            reply = await self._first(self.shell_channel, 1.0, lambda m: m["msg_type"] == "kernel_info_reply"
                                      and m["parent_header"].get("msg_id") in sent)
            if reply is not None and await self._first(self.iopub_channel, 0.2, lambda m: (
                    m["msg_type"] == "status" and m["content"].get("execution_state") == "idle"
                    and m["parent_header"].get("msg_id") in sent)):
                self._handle_kernel_info_reply(reply)
                return
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > end:
                raise RuntimeError(f"Kernel didn't respond in {timeout} seconds")

    @staticmethod
    async def _first(channel, seconds: float, wanted) -> dict | None:
        """The first message of `channel` that is `wanted` within `seconds` (the others are dropped), or None."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            try:
                msg = await channel.get_msg(timeout=left)
            except Empty:
                return None
            if wanted(msg):
                return msg
        return None


@functools.lru_cache(maxsize=None)
def kernel_sys_path(python: str = sys.executable) -> tuple[str, ...]:
    """The kernel interpreter's sys.path, without the working folder (which the student can write)."""
    out = subprocess.run([python, "-c", "import sys, json; print(json.dumps(sys.path))"],
                         capture_output=True, text=True, check=True, cwd="/", env={"PATH": "/usr/bin:/bin"})
    return tuple(p for p in json.loads(out.stdout) if p not in ("", "/", "."))



def kernel_env(scratch: Path, python: str) -> dict[str, str]:
    """A minimal environment: nothing of the grader's (database URLs, tokens) reaches student code."""
    return {
        "PATH": f"{Path(python).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(scratch), "IPYTHONDIR": str(scratch / ".ipython"), "MPLCONFIGDIR": str(scratch / ".mpl"),
        "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TMPDIR": "/tmp",
        "TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0",
        "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1", "NBGRADER_EXECUTION": "autograde",
    }

