"""The worker's judge: graded checks decided from the kernel's records, in a process student code never runs in.

A test cell is judged here when each statement of its visible part and of its hidden part is a call
`exN_M.check(...)` with literal keyword arguments of an exercise marked `replayable`
(tapelab.checker.replay). The kernel still runs the cell's checks, with TAPELAB_RECORD=1 in its
environment, so that they call the student's functions and record what those returned; the executor
then reads the records (`RECORDS_EXPRESSION`) and the judge runs each check again on them: its outcome
is the cell's. The hidden part is sent to the kernel without its `expected=` values, which stay here.

The judge's exercises are fresh instances of the classes the notebook's trusted imports name; the
first judged cell of a worker process imports them (TensorFlow with them).
"""
from __future__ import annotations

import ast
import threading
from dataclasses import dataclass

from nbformat import NotebookNode

from tapelab.grading import hidden
from tapelab.checker.replay import ENV as RECORD  # in a kernel whose environment has it, checks record their runs

__all__ = ["RECORD", "RECORDS_EXPRESSION", "Judge", "JudgedCells", "Verdict"]

RECORDS_EXPRESSION = "__import__('tapelab.checker.replay', fromlist=['taken']).taken()"
_LOCK = threading.Lock()  # a Dask worker runs executions in threads; the checker's replay state is one per process
_MODULES: dict[tuple[str, ...], dict] = {}  # imports -> the names they bind, once per worker process


@dataclass(frozen=True)
class Call:
    """One `name.check(**kwargs)` statement of a test cell."""

    name: str
    kwargs: dict

    def source(self) -> str:
        """The call as the kernel runs it: without `expected=`, whose values never enter the kernel."""
        args = ", ".join(f"{key}={value!r}" for key, value in self.kwargs.items() if key != "expected")
        return f"{self.name}.check({args})"


@dataclass(frozen=True)
class Verdict:
    """A judged part: whether it passed, and the outputs its first failing check (or its last Correct) shows."""

    passed: bool
    outputs: list


class Judge:
    """The checks of one notebook, judged from records."""

    def __init__(self, imports: list[str]):
        self.imports = tuple(imports)

    def _exercises(self) -> dict:
        with _LOCK:
            if self.imports not in _MODULES:
                namespace: dict = {}
                for statement in self.imports:
                    exec(statement, namespace)  # the instructor's tapelab imports (tapelab.grading.course)
                _MODULES[self.imports] = namespace
            return _MODULES[self.imports]

    def plan(self, source: str) -> list[Call] | None:
        """The calls of a test cell's part (an empty part: []), or None when it is not judged here."""
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
            if not getattr(self._exercises().get(call.func.value.id), "replayable", False):
                return None
            calls.append(Call(call.func.value.id, kwargs))
        return calls

    def verdict(self, calls: list[Call], records: list[str]) -> Verdict:
        """Judge `calls` in order on the last records the kernel made (one per call); stop at the first failure."""
        from tapelab.checker import replay
        from tapelab.checker.messages import Feedback

        mine = records[len(records) - len(calls):] if len(records) >= len(calls) else []
        outputs: list = []
        for index, call in enumerate(calls):
            exercise = type(self._exercises()[call.name])()
            with _LOCK:
                outcome = replay.judge(exercise, call.kwargs, mine[index] if mine else None)
            if isinstance(outcome, Feedback):
                box = outcome.box()
                return Verdict(False, [_display(box), NotebookNode(
                    output_type="error", ename=type(outcome).__name__, evalue=str(outcome),
                    traceback=[outcome.status_line()])])
            outputs.append(_display(outcome))
        return Verdict(True, outputs)


def _display(message) -> NotebookNode:
    return NotebookNode(output_type="display_data", data=message._repr_mimebundle_(), metadata={})


class JudgedCells:
    """The executor's part for judged test cells (mixed into executor.GuardedClient, whose methods it uses)."""

    async def _judged_cell(self, index: int, cell: NotebookNode) -> bool:
        """Run a test cell whose checks the judge decides (judge.Judge.plan): the kernel runs the visible part and
        records; the judge's outcome replaces the cell's outputs. False when the cell is not judged here."""
        visible, hidden_code = hidden.split(cell.source)
        if self.judge is None:
            return False
        with self._clock("judge"):  # the first plan of a worker process imports the exercises
            calls = self.judge.plan(visible)
            hidden_calls = self.judge.plan(hidden_code) if calls is not None else None
        if calls is None or hidden_calls is None:
            return False
        self.judged_hidden[index] = hidden_calls
        self.unstepped = self.guard is not None
        await self._run_cell(cell, visible)
        if not calls or self.replies[index] == "timed_out":
            return True
        records = await self._records()
        with self._clock("judge"):
            verdict = self.judge.verdict(calls, records)
        if self.replies[index] == "ok" and not verdict.passed:
            self.facts["flags"].append(f"the check of cell {self._label(index)} passed in the notebook's kernel but "
                                       "not in the grader's judge (scored 0)")
        cell.outputs = verdict.outputs
        self.replies[index] = "ok" if verdict.passed else "error"
        return True

    async def _records(self) -> list[str]:
        """The records of the checks the kernel ran since the last read (tapelab.checker.replay), [] if none came."""
        reply = await self._execute("pass", expressions={"records": RECORDS_EXPRESSION})
        try:
            records = ast.literal_eval(reply["content"]["user_expressions"]["records"]["data"]["text/plain"])
        except (KeyError, TypeError, ValueError, SyntaxError, MemoryError, RecursionError):
            return []
        return [r for r in records if isinstance(r, str)] if isinstance(records, list) else []

    async def _judged_hidden(self, index: int, calls: list) -> None:
        """A judged cell's hidden part: the kernel runs its calls without their expected values; the judge decides."""
        try:
            with self._clock("hidden"):
                reply = await self._execute("\n".join(call.source() for call in calls))
            records = await self._records() if reply is not None else []
        except BaseException:  # the executor's stop (the kernel died, flooded or ran out of time)
            self._hidden_verdict(index, False)
            raise
        self.facts["hidden_timed_out"] += reply is None
        with self._clock("judge"):
            passed = reply is not None and self.judge.verdict(calls, records).passed
        self._hidden_verdict(index, passed)
