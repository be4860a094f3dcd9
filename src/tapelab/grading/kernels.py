"""How a grading kernel is launched: the kernel manager both start paths share.

Cold, the kernel is a subprocess of the sandbox Slot's command line (`Slot.argv`); warm, a provisioner
(`warm.ForkedProvisioner`) forks it from the worker's zygote. Either way the manager writes the
connection file, hands it to the sandbox uid and bounds every message frame, and the executor's
client drives, interrupts and kills the kernel alike.
"""
from __future__ import annotations

import uuid
from typing import Callable

import zmq
import zmq.asyncio
from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager

__all__ = ["KernelStartError", "SandboxKernelManager"]


class KernelStartError(RuntimeError):
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
        self.context = zmq.asyncio.Context()
        self.context.setsockopt(zmq.MAXMSGSIZE, max_frame)

    def client(self, **kw):
        return super().client(context=self.context, **kw)  # the client's sockets get the same bound

    async def _async_pre_start_kernel(self, **kw):
        if self.provisioner is None and getattr(self, "_provisioner", None) is not None:
            self.kernel_id = self.kernel_id or kw.pop("kernel_id", str(uuid.uuid4()))
            self.provisioner = self._provisioner(kernel_id=self.kernel_id, kernel_spec=self.kernel_spec, parent=self)
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        self._give(self.connection_file)  # the sandbox uid must read its connection file
        return cmd, kw
