"""Execute one sanitized notebook in a sandboxed kernel, with every limit enforced as it runs.

A NotebookClient that
- starts its kernel through the sandbox wrappers, over the IPC transport, in a scratch folder,
- bounds each cell (`cell_timeout`) and the whole notebook (`notebook_timeout`),
- counts output bytes as messages arrive and kills the kernel past `output_limit`,
- runs the guard's restore step before every graded test cell (not stored in the notebook),
- records each cell's execute_reply status; a cell whose reply was an error but whose outputs
  show none (a patched showtraceback, or IPython 9 with a custom exception handler) gets an
  error output, as nbgrader's Execute does, so a failed test scores 0,
- gives every graded test cell that never ran an error output saying why.
"""
from __future__ import annotations

import asyncio
import os
import signal
import time

from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError
from nbformat import NotebookNode

__all__ = ["GuardedClient", "SandboxKernelManager", "KernelStartError", "is_test_cell"]

TIMEOUT_ERROR = {"ename": "CellTimeoutError", "evalue": "",
                 "traceback": ["\x1b[0;31mCellTimeoutError\x1b[0m: No reply from kernel before timeout"]}


class KernelStartError(RuntimeError):
    """The kernel did not start: an infrastructure fault, never the student's (no student code ran)."""


def is_test_cell(cell: NotebookNode) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


class SandboxKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel command comes from a sandbox Slot."""

    def configure(self, argv: list[str], give) -> None:
        self._kernel_spec = KernelSpec(argv=argv, display_name="tapelab sandbox", language="python",
                                       interrupt_mode="message", env={})
        self._give = give

    async def _async_pre_start_kernel(self, **kw):
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        self._give(self.connection_file)  # the sandbox uid must read its connection file
        return cmd, kw


class GuardedClient(NotebookClient):
    """Runs the notebook; the outcome is in `facts` (replies, timed_out, kernel_died, output_limit)."""

    def __init__(self, nb: NotebookNode, km: SandboxKernelManager, *, cell_timeout: int,
                 notebook_timeout: int, output_limit: int, restore: str | None):
        super().__init__(nb, km=km, timeout=cell_timeout, interrupt_on_timeout=True, allow_errors=True,
                         error_on_timeout=TIMEOUT_ERROR, record_timing=False, shutdown_kernel="immediate",
                         startup_timeout=120, raise_on_iopub_timeout=False, iopub_timeout=10)
        self.cell_timeout, self.notebook_timeout = cell_timeout, notebook_timeout
        self.output_limit, self.restore = output_limit, restore
        self.deadline = 0.0
        self.output_bytes = 0
        self.replies: dict[int, str] = {}
        self.facts: dict = {"timed_out": False, "kernel_died": False, "output_limit": False,
                            "flags": [], "stopped_at": None}

    # -- limits ---------------------------------------------------------------------------------
    def _get_timeout(self, cell):
        remaining = self.deadline - time.monotonic()
        return max(1, int(min(self.cell_timeout, remaining) + 0.999))

    def _kill(self) -> None:
        provisioner = getattr(self.km, "provisioner", None)
        pid = getattr(provisioner, "pid", None)
        try:
            if pid:
                os.killpg(os.getpgid(pid), signal.SIGKILL)
        except (ProcessLookupError, PermissionError, OSError):
            pass

    def process_message(self, msg, cell, cell_index):
        if self.facts["output_limit"]:
            if msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle":
                return super().process_message(msg, cell, cell_index)
            return None
        content = msg.get("content", {})
        size = len(content.get("text", "")) + sum(len(str(v)) for v in content.get("data", {}).values())
        size += sum(len(line) for line in content.get("traceback", []) or [])
        self.output_bytes += size
        if self.output_bytes > self.output_limit:
            self.facts["output_limit"] = True
            self._kill()
            return None
        return super().process_message(msg, cell, cell_index)

    async def _check_raise_for_error(self, cell, cell_index, exec_reply):
        if exec_reply is not None:
            content = exec_reply["content"]
            self.replies[cell_index] = content.get("status", "?")
            if content.get("ename") == "CellTimeoutError":
                self.facts["timed_out"] = True
            if content.get("status") == "error":
                self._ensure_error(cell, content)
        return await super()._check_raise_for_error(cell, cell_index, exec_reply)

    @staticmethod
    def _ensure_error(cell: NotebookNode, content: dict) -> None:
        """nbgrader's rule: an error reply without a matching error output gets one (scores 0).

        Needed for every failed check, since IPython 9 does not display custom-handled exceptions,
        and it also defeats a replaced showtraceback.
        """
        ename = content.get("ename", "Error")
        if any(o.get("output_type") == "error" and o.get("ename") == ename for o in cell.outputs):
            return
        cell.outputs.append(NotebookNode(
            output_type="error", ename=ename, evalue=content.get("evalue", ""),
            traceback=content.get("traceback") or ["ERROR: An error occurred while showtraceback was disabled"]))

    # -- the run ----------------------------------------------------------------------------------
    async def _restore_step(self, index: int) -> None:
        msg_id = self.kc.execute(self.restore, silent=True, store_history=False, allow_stdin=False)
        reply = await self.async_wait_for_reply(msg_id)
        if reply is None or reply["content"].get("status") != "ok":
            what = "no reply" if reply is None else f"{reply['content'].get('ename')}: {reply['content'].get('evalue')}"
            self.facts["flags"].append(f"restore step failed before cell {index} ({what})")

    async def run(self, cwd: str, env: dict[str, str]) -> NotebookNode:
        """Execute every code cell; never raises for anything the student's code does."""
        self.reset_execution_trackers()
        self.deadline = time.monotonic() + self.notebook_timeout
        try:
            await self.async_start_new_kernel(cwd=cwd, env=env)
            await self.async_start_new_kernel_client()
        except Exception as error:
            await self._cleanup()
            raise KernelStartError(f"{type(error).__name__}: {error}") from None
        try:
            await self._cells()
        finally:
            await self._cleanup()
        return self.nb

    async def _cells(self) -> None:
        for index, cell in enumerate(self.nb.cells):
            if cell.cell_type != "code" or not cell.source.strip():
                continue
            if time.monotonic() >= self.deadline:
                self.facts["timed_out"] = True
                self.facts["stopped_at"] = index
                return
            try:
                if self.restore and is_test_cell(cell):
                    await self._restore_step(index)
                await self.async_execute_cell(cell, index, execution_count=self.code_cells_executed + 1)
            except (DeadKernelError, asyncio.CancelledError, RuntimeError) as error:
                if not self.facts["output_limit"]:
                    self.facts["kernel_died"] = True
                    self.facts["flags"].append(f"kernel stopped at cell {index}: {type(error).__name__}")
                self.facts["stopped_at"] = index
                return
            if self.facts["output_limit"]:
                self.facts["stopped_at"] = index
                return
            if time.monotonic() >= self.deadline:
                self.facts["timed_out"] = True
                self.facts["stopped_at"] = index + 1
                return

    async def _cleanup(self) -> None:
        self._kill()
        try:
            await asyncio.wait_for(self._async_cleanup_kernel(), 15)
        except Exception:  # the kernel is dead already; resources are cleaned by the slot
            pass

    def mark_not_run(self) -> None:
        """Give every graded test cell that did not run an error output, so it scores 0."""
        stopped = self.facts["stopped_at"]
        if stopped is None:
            return
        why = ("the output limit was exceeded" if self.facts["output_limit"] else
               "the kernel died" if self.facts["kernel_died"] else "the time limit was reached")
        for index, cell in enumerate(self.nb.cells):
            if is_test_cell(cell) and (index > stopped or index not in self.replies) and not any(
                    o.get("output_type") == "error" for o in cell.get("outputs", [])):
                cell.outputs = [NotebookNode(output_type="error", ename="NotRun", evalue=why,
                                             traceback=[f"NotRun: this test did not run because {why}."])]
