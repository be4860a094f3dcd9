"""Errors that a `None` gradient causes one step later, traced back to the gradient call that gave it.

Python says "'NoneType' object is not subscriptable" or "unsupported operand type(s) ... 'NoneType'", and
`tape.gradient` says its target was None when that target is itself an earlier gradient: neither names the call
that returned None. This module finds that call in the code's facts and explains it (tapelab.checker.explanations).
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from tapelab.checker.code_facts import CodeFacts, GradientCall
from tapelab.checker.explanations import Explanation, explain_none

__all__ = ["none_error"]


def none_error(error: BaseException, facts: CodeFacts, values: Mapping[str, Any] | None = None,
               line: str = "") -> Explanation | None:
    """Why a `None` gradient raised `error` downstream, when the code shows which call returned it; else None.
    `line` is the student's line that raised: a `None` of its own (not a gradient's) explains nothing here."""
    if not facts.found or not facts.gradient_calls:
        return None
    text = str(error)
    if "Argument `target` should be" in text:
        return _none_target(facts, values)
    if not (isinstance(error, (TypeError, AttributeError)) and "'NoneType'" in text and _reads_a_gradient(facts, line)):
        return None
    chained = _none_target(facts, values, line)  # a gradient call on this line was given an earlier gradient's None
    if chained is not None:
        return chained
    if isinstance(error, TypeError):
        for call in facts.gradient_calls:
            why = _sliced_target(facts, call) or explain_none(facts, call, values)
            if why.cause:
                return Explanation(f"A gradient was `None` and the next operation could not use it. {why.text}", why.cause)
    return None


def _reads_a_gradient(facts: CodeFacts, line: str) -> bool:
    """Whether the line that raised calls the tape or reads a name a gradient call's value was given to."""
    results = {c.result for c in facts.gradient_calls if c.result}
    names = set(re.findall(r"[A-Za-z_]\w*", line))
    return bool(re.search(r"\.(gradient|jacobian|batch_jacobian)\(", line) or names & results)


def _none_target(facts: CodeFacts, values, line: str | None = None) -> Explanation | None:
    """A gradient call (written on `line`, when given) whose target is the result of an earlier gradient call,
    which returned None."""
    for call in facts.gradient_calls:
        if line is not None and not re.search(rf"\b{call.tape}\.{call.method}\(\s*{re.escape(call.target)}\b", line):
            continue
        earlier = next((c for c in facts.gradient_calls if c.result == call.target and c.line < call.line), None)
        if earlier is None:
            continue
        why = explain_none(facts, earlier, values)
        if why.cause:
            both = (" Each tape watches for itself: the source must be watched by every tape that differentiates "
                    "by it (or be a `tf.Variable`)." if why.cause == "not-watched" and facts.nested() else "")
            return Explanation(f"`{call.text()}` got `None` as its target: `{call.target}` comes from "
                               f"`{earlier.text()}`, which returned `None`. {why.text}{both}", why.cause)
    return None


def _sliced_target(facts: CodeFacts, call: GradientCall) -> Explanation | None:
    """The target is a slice written in the gradient call, after the tape's block: the slice was never recorded."""
    tape = facts.tape(call.tape)
    if tape is None or tape.contains(call.line) or not re.fullmatch(r"[A-Za-z_]\w*\[.+\]", call.target):
        return None
    whole = call.target.split("[", 1)[0]
    return Explanation(f"The target `{call.target}` is sliced when `{call.text()}` runs, after the `with` block: the "
                       f"slice is a new tensor `{tape.name}` never recorded, so its gradient is `None`. Differentiate "
                       f"`{whole}` itself (or slice inside the block).", "outside-tape")
