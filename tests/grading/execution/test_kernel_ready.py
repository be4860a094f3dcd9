"""A sandbox kernel's client is ready once its kernel_info request is answered on shell and reported idle on
iopub (kernels.ReadyClient), not after jupyter_client's drain of iopub until 0.2 s of silence."""
import asyncio
from queue import Empty

import pytest

from tapelab.grading.execution.kernels import ReadyClient, SandboxKernelManager

SILENT = object()  # the channel has nothing within the wait


class Channel:
    """Messages a channel delivers, in order; a callable entry makes one from the requests sent so far."""

    def __init__(self, client, script):
        self.client, self.script = client, list(script)

    async def get_msg(self, timeout=None):
        if not self.script:
            raise Empty
        entry = self.script.pop(0)
        if entry is SILENT:
            raise Empty
        return entry(self.client.sent) if callable(entry) else entry


def message(msg_type, parent, **content):
    return {"msg_type": msg_type, "parent_header": {"msg_id": parent}, "content": content}


def reply(sent):
    return message("kernel_info_reply", sent[-1], protocol_version="5.4")


def idle(sent):
    return message("status", sent[-1], execution_state="idle")


class Scripted(ReadyClient):
    def __init__(self, shell, iopub, alive=True):
        super().__init__()
        self.sent, self.alive = [], alive
        self._shell_script, self._iopub_script = Channel(self, shell), Channel(self, iopub)

    shell_channel = property(lambda self: self._shell_script)
    iopub_channel = property(lambda self: self._iopub_script)

    def kernel_info(self):
        self.sent.append(f"request-{len(self.sent)}")
        return self.sent[-1]

    async def _async_is_alive(self):
        return self.alive


def test_ready_at_the_idle_of_its_request_whatever_iopub_holds_after_it():
    """Does the wait end at the idle status of its request, leaving later iopub messages unread?"""
    later = [message("stream", "other", name="stdout", text="x")] * 3
    client = Scripted([reply], [message("status", "", execution_state="starting"), idle, *later])
    asyncio.run(client.wait_for_ready(timeout=5))
    assert client.sent == ["request-0"]
    assert len(client.iopub_channel.script) == 3


def test_an_iopub_that_missed_the_request_gets_another():
    """When iopub says nothing of the first request (not yet subscribed), is kernel_info asked again?"""
    client = Scripted([reply, reply], [message("iopub_welcome", ""), SILENT, idle])
    asyncio.run(client.wait_for_ready(timeout=5))
    assert client.sent == ["request-0", "request-1"]


def test_an_idle_of_another_request_is_not_readiness():
    """Is an idle status parented to another request ignored?"""
    client = Scripted([reply], [message("status", "someone-else", execution_state="idle")], alive=False)
    with pytest.raises(RuntimeError, match="died"):
        asyncio.run(client.wait_for_ready(timeout=5))


def test_a_dead_kernel_ends_the_wait():
    client = Scripted([], [], alive=False)
    with pytest.raises(RuntimeError, match="died before replying"):
        asyncio.run(client.wait_for_ready(timeout=5))


def test_the_sandbox_manager_makes_ready_clients():
    km = SandboxKernelManager(transport="ipc")
    km.configure(["python"], lambda path: None, 1 << 20)
    assert type(km.client()) is ReadyClient
