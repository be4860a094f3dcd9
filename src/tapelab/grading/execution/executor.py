"""Execute one sanitized notebook in a sandboxed kernel, with every limit enforced as it runs.

`GuardedClient` takes from nbclient the kernel's start and stop and the making of outputs from
messages (`process_message`), but drives each execution itself, since the kernel is the student's:
- every message (iopub and shell) is metered (bytes and count, against the output limit) before
  it is decoded; one that is not a well-formed message, or whose handling raises, is dropped and
  counted. ZeroMQ refuses a frame over the limit (MAXMSGSIZE) by cutting the channel: output_limit;
- each execution has a hard deadline (cell timeout, bounded by the notebook's) checked on every
  message: a kernel that floods, never goes idle or stops replying is interrupted, then killed;
- a graded test cell runs only its visible part; the hidden parts run after the last cell, silent,
  their messages counted and discarded, so every output the student receives was made before any
  hidden-test source reached the kernel. A hidden part that fails gets a fixed error text (0 points);
- with a guard (`integrity.channel.Session`) its prologue runs before any cell and its step before and after
  every check: findings before a check are flagged, findings after it void the check;
- an error reply without an error output gets one (nbgrader's rule: a failed test scores 0).
`facts["timing"]` says where the seconds went: starting the kernel, the guard's prologue (which
imports the notebook's trusted modules, TensorFlow with them), the cells, the guard's steps, the
hidden tests, and stopping.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import time

import zmq
import zmq.asyncio
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionComplete
from nbformat import NotebookNode

from tapelab.grading.integrity import channel as guard_channel
from tapelab.grading import hidden
from tapelab.grading.execution.judge import Judge, JudgedCells
from tapelab.grading.execution.kernels import KernelStartError, SandboxKernelManager

__all__ = ["GuardedClient", "is_test_cell"]

MESSAGE_LIMIT = 10_000  # messages per notebook (an honest one sends hundreds): bounds a flood of tiny messages
INTERRUPT_GRACE = 5.0  # seconds a timed-out execution has to answer the interrupt before the kernel is killed
IDLE_GRACE = 3.0  # seconds to wait, after the reply, for the execution's last outputs
POLL_SECONDS = 0.5  # how often a silent kernel is checked for life
HIDDEN_FAILED = ("HiddenTestsFailed", "your answer fails tests on inputs you were not shown")
_QUIET = logging.getLogger("tapelab.grading.execution.executor.nbclient")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False  # a flood of unknown message types must not flood the grader's stderr


class _Stop(Exception):
    """The kernel cannot go on (facts say why); it has been killed."""


def is_test_cell(cell: NotebookNode) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


def _error(ename: str, evalue: str, traceback: list[str] | None = None) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=traceback or [f"{ename}: {evalue}"])


def _text(value: object, limit: int = 10_000) -> str:
    return (value if isinstance(value, str) else repr(value))[:limit]


class GuardedClient(JudgedCells, NotebookClient):
    """Runs the notebook; the outcome is in `facts`, `replies` (cell index -> ok, error, timed_out,
    untrusted) and `output_bytes`."""

    def __init__(self, nb: NotebookNode, km: SandboxKernelManager, *, cell_timeout: int,
                 notebook_timeout: int, output_limit: int, guard: guard_channel.Session | None,
                 judge: Judge | None = None):
        super().__init__(nb, km=km, timeout=cell_timeout, allow_errors=True, record_timing=False,
                         shutdown_kernel="immediate", startup_timeout=min(120, notebook_timeout),
                         store_widget_state=False, log=_QUIET)
        self.cell_timeout, self.notebook_timeout = cell_timeout, notebook_timeout
        self.output_limit, self.guard, self.judge = output_limit, guard, judge
        self.judged_hidden: dict[int, list] = {}  # test cell -> the hidden calls the judge decides
        self.unstepped = False  # a judged check ran with no guard step after it: the run ends with one
        self.deadline = 0.0
        self.output_bytes = self.messages = self.dropped = 0
        self.replies: dict[int, str] = {}
        self.hidden_passed: dict[int, bool] = {}
        self.index: int | None = None  # the cell being executed
        self.hiding = False  # in the hidden phase
        self.facts: dict = {"timed_out": False, "kernel_died": False, "output_limit": False, "flags": [],
                            "stopped_at": None, "hidden_failed": 0, "hidden_timed_out": 0, "hidden_not_run": 0,
                            "untrusted_checks": 0, "dropped_messages": 0,
                            "timing": dict.fromkeys(("start", "prologue", "cells", "guard", "hidden", "judge", "stop"),
                                                      0.0)}

    @contextlib.contextmanager
    def _clock(self, phase: str):
        """Add the seconds the block takes to `facts["timing"][phase]`."""
        start = time.monotonic()
        try:
            yield
        finally:
            self.facts["timing"][phase] += time.monotonic() - start

    # -- stopping ---------------------------------------------------------------------------------
    def _kill(self) -> None:
        pid = getattr(getattr(self.km, "provisioner", None), "pid", None)
        with contextlib.suppress(OSError):  # gone already
            if pid:  # None: never started
                os.killpg(os.getpgid(pid), signal.SIGKILL)

    def _stop(self, fact: str, flag: str) -> _Stop:
        self._kill()
        self.facts[fact] = True
        self.facts["stopped_at"], self.facts["flags"] = self.index, self.facts["flags"] + [flag]
        self.facts["stopped_by"] = flag  # which limit: the output limit is bytes or a count of messages
        return _Stop(flag)

    # -- receiving: every message is metered, then decoded or dropped -------------------------------
    def _open_channels(self) -> None:
        self._shell, self._iopub = self.kc.shell_channel.socket, self.kc.iopub_channel.socket
        self._poller = zmq.asyncio.Poller()
        self._monitors = {}
        for name, sock in (("shell", self._shell), ("iopub", self._iopub)):
            self._poller.register(sock, zmq.POLLIN)
            monitor = sock.get_monitor_socket(zmq.EVENT_DISCONNECTED)
            self._poller.register(monitor, zmq.POLLIN)
            self._monitors[monitor] = name

    async def _next(self, wait: float) -> tuple[str, dict | None] | None:
        """(channel, message, or None when dropped), or None when nothing came within `wait` seconds.
        Shell first, so that a reply is never stuck behind a flood."""
        for _ in range(2):
            for name, sock in (("shell", self._shell), ("iopub", self._iopub)):
                try:
                    frames = await sock.recv_multipart(zmq.NOBLOCK)  # no polling while messages wait
                except zmq.Again:
                    continue
                return name, self._decode(frames)
            events = dict(await self._poller.poll(int(wait * 1000)))
            if any(m in events for m in self._monitors):
                await self._disconnected(next(name for m, name in self._monitors.items() if m in events))
            if not events:
                return None
        return None

    def _decode(self, frames: list[bytes]) -> dict | None:
        self.output_bytes += sum(len(f) for f in frames)
        self.messages += 1
        if self.output_bytes > self.output_limit:
            raise self._stop("output_limit", f"output limit: the kernel sent more than {self.output_limit} bytes")
        if self.messages > MESSAGE_LIMIT:
            raise self._stop("output_limit", f"output limit: the kernel sent more than {MESSAGE_LIMIT} messages")
        try:
            _, parts = self.kc.session.feed_identities(frames)
            msg = self.kc.session.deserialize(parts)
            if isinstance(msg["msg_type"], str) and all(
                    isinstance(msg[k], dict) for k in ("header", "parent_header", "metadata", "content")):
                return msg
        except Exception:  # not a message of the protocol: a forged or broken frame
            pass
        self.dropped += 1
        return None

    async def _disconnected(self, channel: str) -> None:
        for _ in range(10):  # a kernel that exits drops its connections too: tell the two apart
            if not await self.km.is_alive():
                raise self._stop("kernel_died", f"the kernel exited at {self._where()}")
            await asyncio.sleep(0.1)
        raise self._stop("output_limit", f"the kernel's {channel} channel was cut at {self._where()}: a message "
                         f"longer than the {self.output_limit}-byte output limit (or the kernel closed its sockets)")

    async def _wait(self, msg_id: str, cell: NotebookNode | None, end: float) -> dict | None:
        """The execute_reply to `msg_id` before `end` (None: none came), its outputs routed into `cell`
        (None: every message is discarded)."""
        reply, idle, settle = None, cell is None, end
        while reply is None or not idle:
            now = time.monotonic()
            if now >= settle:
                return reply
            if self.messages % 256 == 0:
                await asyncio.sleep(0)  # let other tasks (and outer timeouts) run during a flood
            got = await self._next(min(POLL_SECONDS, settle - now))
            if got is None:
                if not await self.km.is_alive():
                    raise self._stop("kernel_died", f"the kernel exited at {self._where()}")
                continue
            channel, msg = got
            if msg is None or msg["parent_header"].get("msg_id") != msg_id:
                continue
            if channel == "shell":
                if msg["msg_type"] == "execute_reply" and reply is None:
                    reply, settle = msg, min(now + IDLE_GRACE, self.deadline)
            elif cell is not None:
                idle = self._route(msg, cell)
        return reply

    def _route(self, msg: dict, cell: NotebookNode) -> bool:
        """Hand one output message to nbclient; True once the execution is idle."""
        try:
            self.process_message(msg, cell, self.index)
        except CellExecutionComplete:
            return True
        except Exception:  # malformed content: wrong types, missing keys
            self.dropped += 1
        return False

    # -- executing ---------------------------------------------------------------------------------
    async def _execute(self, code: str, cell: NotebookNode | None = None, expressions: dict | None = None):
        """Run `code`; its reply, or None when it timed out and the kernel answered the interrupt.
        With `cell`, it is a notebook cell (history, outputs); otherwise silent and discarded."""
        msg_id = self.kc.execute(code, silent=cell is None, store_history=cell is not None, allow_stdin=False,
                                 stop_on_error=False, user_expressions=expressions or {})
        reply = await self._wait(msg_id, cell, min(time.monotonic() + self.cell_timeout, self.deadline))
        if reply is not None:
            return reply
        if time.monotonic() >= self.deadline:
            raise self._stop("timed_out", f"notebook time limit ({self.notebook_timeout} s) reached at {self._where()}")
        with contextlib.suppress(Exception):  # a kernel that just died: the wait below finds out
            await self.km.interrupt_kernel()
        if await self._wait(msg_id, cell, min(time.monotonic() + INTERRUPT_GRACE, self.deadline)) is None:
            raise self._stop("timed_out", f"{self._where()} ran past {self.cell_timeout} s and ignored the interrupt")
        self.facts["timed_out"] = True
        self.facts["flags"].append(f"{self._where()} ran past its time limit ({self.cell_timeout} s)")
        return None

    async def _guard_step(self, fresh: bool = True) -> list[str]:
        """One guard step; what it found and undid (a failed step or a missing report is a finding).
        `fresh` when a check follows it: not after the last check before the next step."""
        with self._clock("guard"):
            reply = await self._execute(self.guard.step(fresh),
                                        expressions={"tapelab_guard": guard_channel.REPORT_EXPRESSION})
        return self.guard.findings(reply)

    async def _run_cell(self, cell: NotebookNode, code: str) -> None:
        cell.outputs = []
        self.clear_before_next_output = False
        if not code.strip():  # a test cell that is all hidden tests
            self.replies[self.index] = "ok"
            return
        self.code_cells_executed += 1
        with self._clock("cells"):
            reply = await self._execute(code, cell)
        cell.execution_count = self.code_cells_executed
        if reply is None:
            self.replies[self.index] = "timed_out"
            cell.outputs.append(_error("CellTimeoutError", f"the cell ran past its time limit ({self.cell_timeout} s)"))
            return
        content = reply["content"]
        self.replies[self.index] = "ok" if content.get("status") == "ok" else "error"
        if self.replies[self.index] == "error":
            self._ensure_error(cell, content)

    @staticmethod
    def _ensure_error(cell: NotebookNode, content: dict) -> None:
        """nbgrader's rule: an error reply without a matching error output gets one (scores 0); IPython 9
        does not display custom-handled exceptions, and a replaced showtraceback displays nothing."""
        ename = _text(content.get("ename", "Error"), 200)
        if any(o.get("output_type") == "error" and o.get("ename") == ename for o in cell.outputs):
            return
        traceback = content.get("traceback")
        if not (isinstance(traceback, list) and all(isinstance(t, str) for t in traceback)):
            traceback = ["ERROR: An error occurred while showtraceback was disabled"]
        cell.outputs.append(_error(ename, _text(content.get("evalue", "")), traceback))

    # -- the run ----------------------------------------------------------------------------------
    async def run(self, cwd: str, env: dict[str, str]) -> NotebookNode:
        """Execute the notebook, then the hidden tests; never raises for anything the student's code does."""
        self.reset_execution_trackers()
        self.deadline = time.monotonic() + self.notebook_timeout
        try:
            try:
                with self._clock("start"):
                    # No terminal for the kernel: what it writes to its own fds 1 and 2 goes nowhere (as a
                    # warm kernel's, forked from a zygote holding /dev/null), not to the instructor's screen.
                    await self.async_start_new_kernel(cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                                                      stderr=subprocess.DEVNULL)
                    await self.async_start_new_kernel_client()
                    self._open_channels()
                if self.guard is not None:
                    with self._clock("prologue"):
                        await self._prologue()
            except KernelStartError:
                raise
            except Exception as error:
                raise KernelStartError(f"{type(error).__name__}: {error}") from None
            await self._cells()
            await self._hidden_phase()
        except _Stop:
            pass
        finally:  # also when cancelled: the kernel never outlives its run
            with self._clock("stop"):
                await self._cleanup()
            self.facts["dropped_messages"] = self.dropped
            if self.dropped:
                self.facts["flags"].append(f"the kernel sent {self.dropped} malformed message(s); they were dropped "
                                           "(an unmodified kernel never does: review the notebook)")
        return self.nb

    async def _prologue(self) -> None:
        """The guard's prologue; before any student code, so a failure is the grader's."""
        try:
            reply = await self._execute(self.guard.prologue())
        except _Stop as stop:
            raise KernelStartError(f"the guard's prologue did not complete: {stop}") from None
        if reply is None or reply["content"].get("status") != "ok":
            raise KernelStartError("the guard's prologue failed in a fresh kernel")

    async def _cells(self) -> None:
        for index, cell in enumerate(self.nb.cells):
            if cell.cell_type != "code" or not cell.source.strip():
                continue
            self.index = index
            if is_test_cell(cell) and await self._judged_cell(index, cell):
                continue
            if not (self.guard is not None and is_test_cell(cell)):
                await self._run_cell(cell, hidden.split(cell.source)[0] if is_test_cell(cell) else cell.source)
                continue
            label = self._label(index)
            self.facts["flags"] += [f"before the check of cell {label}, undone: {f}" for f in await self._guard_step()]
            await self._run_cell(cell, hidden.split(cell.source)[0])
            after = await self._guard_step(fresh=False)  # the next check's own step re-imports
            if after:  # patched during the check, or by code it triggered: the verdict is void
                self.replies[index] = "untrusted"
                self.facts["untrusted_checks"] += 1
                cell.outputs.append(_error("CheckNotTrusted", "the check in this cell could not be trusted: "
                                           + "; ".join(after)))
                self.facts["flags"].append(f"the check of cell {label} was void (scored 0): {'; '.join(after)}")

    async def _hidden_phase(self) -> None:
        """Each passed test cell's hidden part, in order; nothing they send is kept (only its size).
        A part during which the kernel dies, floods or runs out of time has failed."""
        stepped, self.hiding = False, True
        parts = [(index, hidden.split(cell.source)[1]) for index, cell in enumerate(self.nb.cells)
                 if is_test_cell(cell) and self.replies.get(index) == "ok"]
        parts = [(index, code) for index, code in parts if code]
        for number, (index, code) in enumerate(parts, 1):
            self.index = index
            if index in self.judged_hidden:
                await self._judged_hidden(index, self.judged_hidden[index])
                stepped = False  # the kernel ran checks since the last step
                continue
            try:
                before = await self._guard_step() if self.guard is not None and not stepped else []
                with self._clock("hidden"):
                    reply = await self._execute(code)
                after = await self._guard_step(fresh=number < len(parts)) if self.guard is not None else []
            except _Stop:
                self._hidden_verdict(index, False)
                raise
            stepped = True  # the step after this part is the step before the next one
            self.facts["hidden_timed_out"] += reply is None
            if before or after:  # counts only: findings made after hidden code ran may carry its text
                self.facts["flags"].append(f"the hidden tests of cell {self._label(index)}: the guard undid "
                                           f"{len(before)} patch(es) before and {len(after)} after them "
                                           "(any after: scored 0)")
            self._hidden_verdict(index, reply is not None and reply["content"].get("status") == "ok" and not after)
        if self.unstepped:  # what the guard undid while judged checks ran, for review (the verdicts are the judge's)
            self.facts["flags"] += [f"while the judged checks ran, undone: {f}" for f in await self._guard_step(False)]

    def _hidden_verdict(self, index: int, passed: bool) -> None:
        self.hidden_passed[index] = passed
        if not passed:
            self.facts["hidden_failed"] += 1
            self.nb.cells[index].outputs.append(_error(*HIDDEN_FAILED))

    def unchecked(self) -> list[int]:
        """Test cells whose visible check passed but whose hidden tests never ran, because the run
        stopped before the hidden phase (a replay of the cells before the stop can run them)."""
        if self.hiding or self.facts["stopped_at"] is None:
            return []
        return [i for i, c in enumerate(self.nb.cells)
                if is_test_cell(c) and self.replies.get(i) == "ok" and hidden.split(c.source)[1]]

    def adopt(self, replay: GuardedClient, indices: list[int]) -> None:
        """Take the hidden-test verdicts of `indices` from `replay`, a run of this notebook's first cells."""
        for index in indices:
            if index in replay.hidden_passed:
                self._hidden_verdict(index, replay.hidden_passed[index])

    def _label(self, index: int) -> str:
        cell = self.nb.cells[index]
        return str(cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or cell.get("id") or index)

    def _where(self) -> str:
        if self.index is None:
            return "the guard's prologue"
        return f"cell {self._label(self.index)}" + (" (its hidden tests)" if self.hiding else "")

    async def _cleanup(self) -> None:
        self._kill()
        context = self.km.context if self.km is not None else None
        with contextlib.suppress(Exception):  # the kernel is dead already; the slot cleans up the rest
            await asyncio.wait_for(self._async_cleanup_kernel(), 15)
        if context is not None:
            context.destroy(linger=0)

    def mark_not_run(self) -> None:
        """Give every graded test cell whose check did not complete an error output, so it scores 0
        (a kernel that dies after the visible checks must not skip the hidden ones)."""
        why = ("the output limit was exceeded" if self.facts["output_limit"] else
               "the kernel died" if self.facts["kernel_died"] else "the time limit was reached")
        for index, cell in enumerate(self.nb.cells):
            count = cell.get("execution_count")
            if cell.cell_type == "code" and not (count is None or type(count) is int and count >= 0):
                cell.execution_count = None  # a forged message may set it; the schema wants a count or null
            if not is_test_cell(cell):
                continue
            if index not in self.replies:
                cell.outputs = [_error("NotRun", why, [f"NotRun: this test did not run because {why}."])]
            elif self.replies[index] == "ok" and hidden.split(cell.source)[1] and index not in self.hidden_passed:
                self.facts["hidden_not_run"] += 1
                cell.outputs.append(_error("NotRun", f"the hidden tests of this cell did not run because {why}"))
