"""The exercise base class: check, tiered hints and a revealable solution, learntools style.

A notebook binds each exercise to a short name (`ex1_2`) and calls `ex1_2.check()` in a locked
test cell; the hidden part of that cell calls `ex1_2.check(cases=[...])` with other inputs. The
solution, its reason and the last hint tier are not in this package: `tapelab.checker.answers` fetches them
from the answers distribution, or says why they are withheld.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, replace
from sys import audit as _audit  # bound at import: the grading guard re-imports tapelab before each check
from typing import Any, Callable, Iterable

from tapelab.checker import answers, replay
from tapelab.checker.code_facts import CodeFacts
from tapelab.checker.expected import Expectations
from tapelab.checker.departure import departure, function_node, reduced_axis
from tapelab.checker.evident import evident
from tapelab.checker.none_errors import none_error
from tapelab.checker.op_trace import executed_ops, first_departure  # at import: the guard's fresh import covers it
from tapelab.checker.premises import vetted
from tapelab.checker.messages import Feedback, Incorrect, Message, NotAttempted, install_ipython_handler, show
from tapelab.checker.error_causes import error_cause
from tapelab.checker.explanations import Explanation
from tapelab.checker.tf_errors import line_of, short_error, translate
from tapelab.quiet import Quiet
from tapelab.checker.lint_facts import StaticFacts
from tapelab.checker.variants import Space, Variant, fresh_seed

__all__ = ["Exercise", "Call"]

install_ipython_handler()


@dataclass(frozen=True)
class Call:
    """The outcome of calling a student's function: its value, and TensorFlow's log lines."""

    value: Any
    logs: list[str]


class Exercise:
    """One graded exercise. Subclasses set the class attributes and implement `check_case`."""

    number: str = "0.0"
    answer: str = "answer"  # the name the student defines in the answer cell
    visible_cases: tuple = ()
    hints: tuple[str, ...] = ()  # every tier but the last, which lives with the solution (tapelab.checker.answers)
    praise: str = "well done."
    # What the checker passes for each parameter ("constant", "variable"), so that a None gradient met in an
    # error can be explained from the student's own call (tapelab.checker.explanations.explain_none).
    parameter_kinds: dict[str, str] = {}
    # Parameters the reference answer does not read, so that never reading them is no departure
    # (tapelab.checker.departure; tests/checker/test_departure.py checks every reference against it).
    unread_parameters: frozenset[str] = frozenset()
    # Generic fixes this task rules out, by key of tapelab.checker.premises.REMEDIES, each with the fix it asks for
    # instead ("" to say nothing): a persistent tape is no fix where the task asks for nested tapes.
    remedies: dict[str, str] = {}
    # What may vary and how a variant is drawn (tapelab.checker.variants); `statement` is the task, a template
    # filled from the variant (for the default one, the words of the notebook's task cell). An exercise that
    # cannot vary what the student computes says why in `fixed_because`.
    space: Space = Space()
    statement: str = ""
    fixed_because: str = ""
    # The grader judges this check outside the student's kernel from its recorded runs (tapelab.checker.replay):
    # true only for a check whose verdict reads nothing of the kernel but what `run` returns (no argument's state
    # after a call, no stored expected values), shown by tests/checker/test_replay.py to give the same outcome.
    replayable: bool = False
    _variant: Variant | None = None  # a practice variant, set by `new_variant`
    _own: Variant | None = None  # the student's own in a course with per-student variants (variants.course_variants)
    _pinned: Variant | None = None  # the variant a grader's `check(seed=...)` names, while that check runs
    _facts: CodeFacts = CodeFacts()  # the facts of the function under check, set by `check`
    _file: str | None = None  # the file its code was compiled from (the answer cell), set by `check`
    _given: dict = {}  # case key -> the expected values a hidden test passed to `check`, set by `check`

    def check(self, answer: Any = None, *, cases: Iterable | None = None, expected: dict | None = None,
              seed: int | None = None) -> None:
        """Raise Incorrect or NotAttempted on the first failing case, else show a confirmation.

        The function's source is linted once (tapelab.checker.lint_facts): a failure with no cause of its own may take
        a finding's cause when the finding is tied to it, and a Correct box lists the findings as notes.
        `expected` (case key -> name -> stored value) is what a course's hidden test passes for its cases
        (tapelab.checker.expected): written there by the course's set-up, never by hand. `seed` is the variant a
        grader checks (tapelab.release_variants.pin), whatever variant the kernel was practising on.
        """
        __tracebackhide__ = True
        show(self.outcome(answer, cases=cases, expected=expected, seed=seed))

    def outcome(self, answer: Any = None, *, cases: Iterable | None = None, expected: dict | None = None,
                seed: int | None = None) -> Message:
        """`check` without showing anything: the Correct message, or the failure raised. In a grading kernel it
        also records what the student's code returned, for the grader's judge (tapelab.checker.replay)."""
        __tracebackhide__ = True
        self._pinned = None if seed is None else self.space.variant(seed)
        recorded = replay.recording() and not replay.judging()
        if recorded:
            replay.begin(self.number, answer, self.answer, _user_namespace)
        failure = None
        try:
            return self._check(answer, cases, expected)
        except Feedback as raised:
            failure = raised
            raise
        finally:
            self._pinned = None
            if recorded:
                replay.end(failure)

    def _check(self, answer: Any, cases: Iterable | None, expected: dict | None) -> Message:
        __tracebackhide__ = True
        static, fn = StaticFacts(), None
        self._given = dict(expected or {})
        try:
            fn = self._lookup() if answer is None else answer
            if not callable(fn):
                raise Incorrect(f"`{self.answer}` should be a function, but it is a `{type(fn).__name__}`.")
            facts = self._facts = CodeFacts.of(fn)
            self._file = _code_file(fn)
            static = StaticFacts.of(fn)
            chosen = list(self.visible_cases if cases is None else cases)
            for case in chosen:
                try:
                    self.check_case(fn, case, facts)
                except replay.Withheld:  # graded: the rest of this case needs values only the grader's judge holds
                    continue
        except Feedback as failure:  # the box and the JSON name the exercise, whoever raised it
            explained = self._departed(vetted(static.explain(failure, self._facts), self._facts, self.remedies), fn)
            explained.exercise = failure.exercise or self.number
            if explained is failure:
                raise
            raise explained from None
        praise = self.praise if cases is None else f"also right on {len(chosen)} more inputs."
        return Message("correct", f"Exercise {self.number}{self.variant.label()}: {praise}", lint=static.findings)

    @property
    def variant(self) -> Variant:
        """The variant `check`, the hints and the solution speak about: a grader's, a practice one, the student's
        own in a course with per-student variants, else the notebook's. A graded check (tapelab.checker.replay) reads
        only the grader's seed or the notebook's numbers, as the grader's judge does."""
        if self._pinned is None and replay.recording():  # graded: the test's seed or the notebook's numbers
            return self.space.variant(None)
        return self._pinned or self._variant or self._own or self.space.variant(None)

    def task(self) -> None:
        """Show the task with the current variant's numbers (an exercise that does not vary: where it is, and why)."""
        text = (self.variant.fill(self.statement) if self.statement else
                f"the task is the notebook's text above, the same for everyone: {self.fixed_because}")
        show(Message("task", f"Exercise {self.number}{self.variant.label()}: {text}"))

    def new_variant(self, seed: int | None = None) -> None:
        """Practise on other numbers: draw a fresh variant (or the one of `seed`, to share with a tutor) and show
        its task; `check`, the hints and the solution then speak about it. `own_variant()` goes back."""
        if not self.space.varies:
            show(Message("task", f"Exercise {self.number} has no variants: {self.fixed_because}"))
            return
        self._variant = self.space.variant(fresh_seed() if seed is None else int(seed))
        self.task()

    def own_variant(self) -> None:
        """Go back to your own numbers: the notebook's text, or in a course with per-student variants, yours."""
        self._variant = None
        self.task()

    def _departed(self, failure: Feedback, fn: Any) -> Feedback:
        """`failure`, or when it is an Incorrect with no cause and the code shows a departure from the task
        (tapelab.checker.departure: for an error, only the departures that explain one), an Incorrect that adds
        it and names its cause; a constant factor behind a reduction over some axes becomes `wrong-axis`. A cause the
        code shows by itself (tapelab.checker.evident) comes first."""
        if isinstance(failure, Incorrect) and failure.cause == "constant-factor":
            return _adding(failure, reduced_axis(fn))  # the factor, from the values; the reduction that makes it
        if not isinstance(failure, Incorrect) or failure.cause is not None:
            return failure
        shown = evident(self._facts)
        if shown is not None:
            return _adding(failure, shown)
        return _adding(failure, departure(fn, self._facts, self.unread_parameters, raised=bool(failure.observed)))

    def departs_from(self, fn: Callable, args: tuple, formula: Callable) -> Explanation | None:
        """Where the student's `fn(*args)` first departs from the task's forward `formula(*args)`, by the
        operations each executes (tapelab.checker.op_trace); None when it runs the whole formula in order, or
        raises. For a failed check only: it runs the student's function once more."""
        expected = executed_ops(lambda: formula(*args))
        actual = self.run(lambda: executed_ops(lambda: fn(*args)), "Running your function again").value
        if not expected or not actual:
            return None
        lines, start = _source_lines(fn)
        found = first_departure(expected, actual, function_node(fn), lines)
        if found is not None and found.line:  # numbered from the `def`; the message counts the cell's lines
            found = replace(found, line=(start + found.line[0] - 1, found.line[1]))
        return Explanation(found.sentence(), "wrong-target") if found else None

    def _raise_departed(self, problem: Incorrect | None, fn: Callable, args: tuple, formula: Callable) -> None:
        """Raise `problem` if there is one, with the departure from `formula` added when it names no cause."""
        __tracebackhide__ = True
        if problem is None:
            return
        raise _adding(problem, self.departs_from(fn, args, formula) if problem.cause is None else None)

    def check_case(self, fn: Callable, case: Any, facts: CodeFacts) -> None:
        raise NotImplementedError

    def expectations(self, case: Any) -> dict[str, Callable[[Any], Any]]:
        """What this exercise expects of `case`, by name, each a function of the reference computations
        (`tapelab_answers.references`) that computes it: an exercise whose references are close to its answer
        defines it, and `tapelab release` stores every value (tapelab.checker.expected). They may read the
        variant's values, never its seed: a grader computes them once per values and case."""
        return {}

    def case_key(self, case: Any) -> str:
        """The key of `case` in stored expectations: its repr, the same for a case written in a notebook; with the
        variant's seed before it for a variant other than the notebook's."""
        return repr(case) if self.variant.default else repr((self.variant.seed, case))

    def expect(self, case: Any) -> Expectations:
        """The expected values of `case`: the hidden test's, the package's, or computed (tapelab.checker.expected)."""
        key = self.case_key(case)
        return Expectations(self.number, key, self.expectations(case), self._given.get(key), self.variant.label())

    def hint(self, tier: int = 1) -> None:
        """Show hint `tier` (1 is the gentlest). The last tier is nearly the answer, so it comes with the
        solution: from the answers distribution, unless the course locks it or it is not installed here."""
        tiers = len(self.hints) + 1
        tier = min(max(int(tier), 1), tiers)
        if tier < tiers:
            text = f"{self.variant.fill(self.hints[tier - 1])} (ask `hint({tier + 1})` for more)"
        else:
            found = answers.lookup(self.number)
            text = (f"The last hint of Exercise {self.number} {found.reason}."
                    if isinstance(found, answers.Withheld) else self.variant.fill(found.last_hint))
        show(Message("hint", f"{tier}/{tiers}: {text}"))

    def solution(self) -> None:
        """Reveal one solution and the reason it works, or say why it is withheld (tapelab.checker.answers)."""
        found = answers.lookup(self.number)
        if isinstance(found, answers.Withheld):
            show(Message("solution", f"The solution of Exercise {self.number} {found.reason}."))
        else:
            code = found.solution if self.variant.default else self.variant.fill(found.template)
            show(Message("solution", self.variant.fill(found.why), code=code.strip()))

    def given(self, make: Callable[[], Any]) -> Any:
        """`make()`: an input that only the student's code reads, through `call` or `run`. The grader's judge is
        served those from the kernel's record (tapelab.checker.replay), so there it is never made (None)."""
        return None if replay.judging() else make()

    def call(self, fn: Callable, *args: Any, shown: str) -> Call:
        """Call the student's `fn`; wrap its exceptions in feedback naming the input `shown`."""
        __tracebackhide__ = True
        return self.run(lambda: fn(*args), f"Calling `{self.answer}({shown})`")

    def run(self, thunk: Callable[[], Any], doing: str) -> Call:
        """Run student code (`thunk`) quietly; its exceptions become feedback that starts with `doing`.
        In a grading kernel its outcome is recorded; in the grader's judge it is served from that record."""
        __tracebackhide__ = True
        if replay.judging():
            return Call(*replay.served())
        returned = False
        try:
            with Quiet() as quiet:
                try:
                    value = thunk()
                    returned = True
                except NotImplementedError as error:
                    if str(error) and "raise NotImplementedError" not in str(error):
                        # a library's own (TensorFlow's `numpy()` while tracing); the stub's own, re-raised by
                        # `tf.function` with the traced source, names its line
                        observed, why = self._explain_error(error, doing)
                        failure = Incorrect(f"{observed} {why.text}" if why else observed, cause=why and why.cause)
                        failure.observed = observed
                        raise failure from None
                    raise NotAttempted(
                        f"Exercise {self.number}: replace `raise NotImplementedError()` in `{self.answer}` "
                        "with your code, run that cell, then run this one again."
                    ) from None
                except Exception as error:  # the student's bug, reported rather than re-raised
                    observed, why = self._explain_error(error, doing)
                    failure = Incorrect(f"{observed} {why.text}" if why else observed, cause=why and why.cause)
                    failure.observed = observed
                    raise failure from None
        finally:
            # Under `tapelab grade`, the kernel's guard undoes anything the student's code patched
            # while it ran, before the result is compared; elsewhere this event has no listener.
            _audit("tapelab.guard.check")
            if replay.recording():
                replay.note_run(value, quiet.lines) if returned else replay.note_raised()
        return Call(value, quiet.lines)

    def _explain_error(self, error: Exception, doing: str) -> tuple[str, Explanation | None]:
        """What raised what (TensorFlow's text cut to the part that matters) and where in the answer cell; and
        the cause, when the error and the code's facts establish one (tapelab.checker.tf_errors)."""
        text, name = short_error(error), type(error).__name__
        line = line_of(error, self._file)
        at = f" at {line.where()}" if line else ""
        observed = f"{doing} raised `{name}: {text}`{at}." if text else f"{doing} raised `{name}`{at}."
        return observed, (none_error(error, self._facts, self.parameter_kinds, line.text if line else "")
                          or error_cause(error, self._facts, self.parameter_kinds)
                          or translate(error, line, self._facts))

    def _lookup(self) -> Any:
        namespace = replay.namespace() if replay.judging() else _user_namespace()
        if self.answer not in namespace:
            raise NotAttempted(
                f"Exercise {self.number}: `{self.answer}` is not defined yet. "
                "Write it in the answer cell above and run that cell first."
            )
        return namespace[self.answer]


def _adding(failure: Incorrect, why: Explanation | None) -> Incorrect:
    """`failure` with `why` said after it and its cause named, or `failure` itself when `why` is None."""
    if why is None:
        return failure
    said = str(failure).replace(" No known mistake gives exactly these values.", "")  # now one does
    return Incorrect(f"{said} {why.text}", cause=why.cause, expected=failure.expected, actual=failure.actual)


def _source_lines(fn: Any) -> tuple[list[str] | None, int]:
    """`fn`'s source lines (its `def` first, as `function_node(fn)` numbers them) and the cell line it starts on."""
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None, 1
    return lines, max(start, 1)


def _code_file(fn: Any) -> str | None:
    """The file a student's function (or the first method of a class) was compiled from."""
    code = getattr(fn, "__code__", None)
    if code is None and isinstance(fn, type):
        code = next((m.__code__ for m in vars(fn).values() if hasattr(m, "__code__")), None)
    return code.co_filename if code is not None else None


def _user_namespace() -> dict:
    try:
        from IPython import get_ipython
        shell = get_ipython()
    except ImportError:  # pragma: no cover
        shell = None
    if shell is not None:
        return shell.user_ns
    import __main__
    return vars(__main__)
