"""The grader's judge: graded checks decided from the kernel's records, in a process student code never runs in.

A test cell is judged when each statement of its visible part and of its hidden part is a call
`exN_M.check(...)` with literal keyword arguments of an exercise marked `replayable`
(tapelab.checker.replay). The kernel still runs the cell's checks, with TAPELAB_RECORD=1 in its
environment, so that they call the student's functions and record what those returned; the executor
then reads the records (`RECORDS_EXPRESSION`) and the judge runs each check again on them: its outcome
is the cell's. The hidden part reaches the kernel without its `expected=` values, which stay here.

Where the judge runs: with warm kernels, in a process the worker's zygote forks for it (`serve`; the
zygote imported TensorFlow already, so the judge's first request imports only tapelab's exercises), one
per worker process, kept for its life; with cold kernels, or when that fails, in the worker itself. Its
exercises are fresh instances of the classes the notebook's trusted imports name.
"""
from __future__ import annotations

import ast
import contextlib
import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Callable

from tapelab.checker.replay import ENV as RECORD  # in a kernel whose environment has it, checks record their runs
from tapelab.grading import hidden

__all__ = ["RECORD", "RECORDS_EXPRESSION", "Judge", "JudgedCells", "Plan", "serve"]

RECORDS_EXPRESSION = "__import__('tapelab.checker.replay', fromlist=['taken']).taken()"
ANSWER_SECONDS = 120  # for one answer of the judge's process (a check's own computations take well under a second)
_LOCK = threading.Lock()  # a Dask worker runs executions in threads: one request at a time per process
_MODULES: dict[tuple[str, ...], dict] = {}  # imports -> the names they bind, once per process
_REMOTE: dict[str, socket.socket] = {}  # "judge" -> this worker process's connection to its judge
_DIED = {"passed": False, "outputs": [{"output_type": "error", "ename": "JudgeFailed", "evalue": (
    "the grader's judge stopped twice while deciding this check from what your code returned, so it counts as "
    "failed; your instructor is told to look at it"),
    "traceback": ["JudgeFailed: the grader could not judge this check"]}]}


# -- in the judge's process --------------------------------------------------------------------------------
def _exercises(imports: tuple[str, ...]) -> dict:
    if imports not in _MODULES:
        namespace: dict = {}
        for statement in imports:
            exec(statement, namespace)  # the instructor's tapelab imports (tapelab.grading.course.trusted_imports)
        _MODULES[imports] = namespace
    return _MODULES[imports]


def _calls(imports: tuple[str, ...], source: str) -> list[tuple[str, dict]] | None:
    """The `name.check(**kwargs)` calls of a test cell's part, or None when it is not judged."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    calls = []
    for statement in tree.body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "check"
                and isinstance(call.func.value, ast.Name) and not call.args
                and all(k.arg is not None for k in call.keywords)):
            return None
        try:
            kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        if not getattr(_exercises(imports).get(call.func.value.id), "replayable", False):
            return None
        calls.append((call.func.value.id, kwargs))
    return calls


def _kernel_source(name: str, kwargs: dict) -> str:
    """The call as the kernel runs it: without `expected=`, whose values never enter the kernel."""
    return f"{name}.check({', '.join(f'{k}={v!r}' for k, v in kwargs.items() if k != 'expected')})"


def _answer(request: dict) -> dict:
    """One request: {"op": "plan" | "verdict", "imports", "source", "records"} -> its answer (plain JSON)."""
    from tapelab.checker import replay
    from tapelab.checker.messages import Feedback

    imports = tuple(str(i) for i in request["imports"])
    calls = _calls(imports, str(request["source"]))
    if request["op"] == "plan":
        return {"kernel": None if calls is None else [_kernel_source(*call) for call in calls]}
    records = [r for r in request["records"] if isinstance(r, str)]
    mine = records[len(records) - len(calls):] if len(records) >= len(calls) else [None] * len(calls)
    outputs: list = []
    for (name, kwargs), record in zip(calls, mine):
        outcome = replay.judge(type(_exercises(imports)[name])(), kwargs, record)
        if isinstance(outcome, Feedback):
            return {"passed": False, "outputs": [_display(outcome.box()), {
                "output_type": "error", "ename": type(outcome).__name__, "evalue": str(outcome),
                "traceback": [outcome.status_line()]}]}
        outputs.append(_display(outcome))
    return {"passed": True, "outputs": outputs}


def _display(message) -> dict:
    return {"output_type": "display_data", "data": message._repr_mimebundle_(), "metadata": {}}


def serve(path: str, status: int) -> int:
    """The judge process's life (forked by the worker's zygote): listen on `path`, say "ready" on `status`,
    then answer its one connection's requests, a JSON line each, until it closes. It checks the answers of a
    whole class on the same cases, so it computes each expected value once (`expected.compute_once`)."""
    from tapelab.checker import expected

    expected.compute_once()
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(1)
    os.write(status, b"ready")
    os.close(status)
    connection, _ = server.accept()
    server.close()
    os.unlink(path)
    for line in connection.makefile("rb"):
        try:
            answer = _answer(json.loads(line))
        except Exception as error:  # a request this judge cannot answer: the worker judges in its own process
            answer = {"error": f"{type(error).__name__}: {error}"}
        connection.sendall(json.dumps(answer).encode() + b"\n")
    return 0


# -- in the worker -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """A judged part of a test cell: its source (the judge's) and the code the kernel runs instead."""

    source: str
    kernel: list

    def code(self) -> str:
        return "\n".join(self.kernel)


@dataclass(frozen=True)
class Verdict:
    passed: bool
    outputs: list


class Judge:
    """The checks of one notebook, judged from records: in the judge process `connect()` reaches (None, or a
    failure to reach it: in this process)."""

    def __init__(self, imports: list[str], connect: Callable[[], socket.socket] | None = None):
        self.imports, self.connect = list(imports), connect
        self.where = ""  # where its last answer came from: "zygote" (a judge process) or "worker"

    def _ask(self, request: dict) -> dict:
        with _LOCK:
            answer = self._remote(request) if self.connect is not None else None
            self.where = "worker" if answer is None else "zygote"
            return answer if answer is not None else _answer(request)

    def _remote(self, request: dict) -> dict | None:
        """The judge process's answer; None when none can be reached (then this process judges). A judge that
        ends while answering (a record it cannot survive) is started anew once; then the answer is `_DIED`."""
        for _ in range(2):
            try:
                channel = _REMOTE.get("judge") or _REMOTE.setdefault("judge", self.connect())
            except (OSError, RuntimeError):  # the zygote cannot fork a judge (RuntimeError: ZygoteError)
                self.connect = None
                return None
            channel.settimeout(ANSWER_SECONDS)  # a judge stuck on a record is a judge that ended
            try:
                channel.sendall(json.dumps(request).encode() + b"\n")
                line = b""
                while not line.endswith(b"\n"):
                    chunk = channel.recv(1 << 20)
                    if not chunk:
                        raise OSError("the judge ended")
                    line += chunk
                answer = json.loads(line)
                return _DIED if "error" in answer else answer
            except (OSError, ValueError):
                _REMOTE.pop("judge").close()
        return _DIED

    def plan(self, source: str) -> Plan | None:
        """The part `source` as the judge decides it, or None when it is not judged (it runs as before)."""
        kernel = self._ask({"op": "plan", "imports": self.imports, "source": source}).get("kernel")
        return None if kernel is None else Plan(source, list(kernel))

    def verdict(self, plan: Plan, records: list[str]) -> Verdict:
        """Judge the part's calls in order on the last records the kernel made (one per call)."""
        from nbformat import from_dict  # here: the judge's process never imports nbformat (jsonschema takes seconds)

        answer = self._ask({"op": "verdict", "imports": self.imports, "source": plan.source, "records": records})
        return Verdict(bool(answer["passed"]), [from_dict(o) for o in answer["outputs"]])


class JudgedCells:
    """The executor's part for judged test cells (mixed into executor.GuardedClient, whose methods it uses)."""

    @contextlib.contextmanager
    def _judging(self):
        """The judge's seconds: its own phase, and not the notebook's, whose deadline moves on by as much."""
        start = time.monotonic()
        with self._clock("judge"):
            yield
        self.deadline += time.monotonic() - start

    async def _judged_cell(self, index: int, cell) -> bool:
        """Run a test cell whose checks the judge decides: the kernel runs the visible part and records; the
        judge's outcome replaces the cell's outputs. False when the cell is not judged here."""
        if self.judge is None:
            return False
        visible, hidden_code = hidden.split(cell.source)
        with self._judging():  # the first plan of a judge imports the exercises
            plan = self.judge.plan(visible)
            hidden_plan = self.judge.plan(hidden_code) if plan is not None else None
        if plan is None or hidden_plan is None:
            return False
        self.judged_hidden[index] = hidden_plan
        self.unstepped = self.guard is not None
        await self._run_cell(cell, visible)
        if not plan.kernel or self.replies[index] == "timed_out":
            return True
        with self._judging():
            verdict = self.judge.verdict(plan, await self._records())
        if any(o.get("ename") == "JudgeFailed" for o in verdict.outputs):
            self.facts["flags"].append(f"the grader's judge stopped on the check of cell {self._label(index)}: "
                                       "review it by hand (scored 0)")
        elif self.replies[index] == "ok" and not verdict.passed:
            self.facts["flags"].append(f"the check of cell {self._label(index)} passed in the notebook's kernel but "
                                       "not in the grader's judge (scored 0)")
        cell.outputs = verdict.outputs
        self.replies[index] = "ok" if verdict.passed else "error"
        self.facts["judged_by"] = self.judge.where
        return True

    async def _records(self) -> list[str]:
        """The records of the checks the kernel ran since the last read (tapelab.checker.replay), [] if none came."""
        reply = await self._execute("pass", expressions={"records": RECORDS_EXPRESSION})
        try:
            records = ast.literal_eval(reply["content"]["user_expressions"]["records"]["data"]["text/plain"])
        except (KeyError, TypeError, ValueError, SyntaxError, MemoryError, RecursionError):
            return []
        return [r for r in records if isinstance(r, str)] if isinstance(records, list) else []

    async def _judged_hidden(self, index: int, plan: Plan) -> None:
        """A judged cell's hidden part: the kernel runs its calls without their expected values; the judge decides."""
        try:
            with self._clock("hidden"):
                reply = await self._execute(plan.code())
            with self._judging():
                records = await self._records() if reply is not None else []
        except BaseException:  # the executor's stop (the kernel died, flooded or ran out of time)
            self._hidden_verdict(index, False)
            raise
        self.facts["hidden_timed_out"] += reply is None
        with self._judging():
            passed = reply is not None and self.judge.verdict(plan, records).passed
        self._hidden_verdict(index, passed)
