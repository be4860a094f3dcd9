"""Name the mistake behind an exception a student's tape code raised (`error_cause`), from the error's text
and the code's facts: a tape asked twice, NumPy or a Python number reaching the tape, a name used after `del`,
a `None` gradient an operation could not use.

Like `tapelab.checker.explanations` (why a gradient is None), every explanation carries a cause code from
`tapelab.causes`, or None when the facts do not establish a cause.
"""
from __future__ import annotations

import ast
import re
import traceback
from typing import Any, Mapping

from tapelab.checker.code_facts import CodeFacts
from tapelab.checker.explanations import Explanation, explain_none, origin, predict_on_path
from tapelab.checker.known_errors import KNOWN_ERRORS

__all__ = ["error_cause"]


def _second_use(facts: CodeFacts) -> Explanation:
    """A non-persistent tape asked twice: the fix that works for this code."""
    calls = facts.gradient_calls
    by_tape = {c.tape for c in calls if sum(d.tape == c.tape for d in calls) > 1}
    twice = [c for c in calls if c.tape in by_tape]
    if facts.nested() and any(origin(facts, c.target, c.line) and origin(facts, c.target, c.line).made_by
                              == "gradient" for c in twice):
        inner = twice[-1]
        outer = next((t.name for t in facts.tape_blocks if t.name != inner.tape), "outer")
        return Explanation(f"`{inner.tape}` answered its one `gradient` call already: asking it again for the "
                           f"derivative of `{inner.target}` cannot work, even with `persistent=True`, because "
                           f"`{inner.tape}` never recorded how `{inner.target}` was computed. Did you mean "
                           f"`{outer}.{inner.method}({inner.target}, {inner.source})`?", "wrong-tape")
    if twice and len({c.target for c in twice}) == 1:
        sources = ", ".join(s for c in twice for s in c.sources)
        return Explanation(f"A non-persistent tape answers one `gradient` call and is then released. Did you call "
                           f"`{twice[0].tape}.gradient` twice? Ask for both in one call: "
                           f"`{twice[0].tape}.gradient({twice[0].target}, [{sources}])`.", "tape-used-twice")
    looped = [c for c in calls if any(loop.contains(c.line) for loop in facts.loops)]  # one call, made again
    name = twice[0].tape if twice else looped[0].tape if looped else "tape"
    return Explanation(f"A non-persistent tape answers one `gradient` call and is then released. Did you call "
                       f"`{name}.gradient` twice? To ask one tape several times, open it with "
                       f"`tf.GradientTape(persistent=True)` and `del {name}` after the last call.", "tape-used-twice")


def _numpy_reached_tape(facts: CodeFacts, text: str) -> Explanation:
    for call in facts.gradient_calls:
        tape = facts.tape(call.tape)
        up = facts.upstream(call.target)
        numpy_on_path = next((a for a in facts.assignments if a.made_by == "numpy" and set(a.names) & up
                              and (tape is None or tape.contains(a.line))), None)
        if numpy_on_path is not None:
            fix = ("Keep the value a tensor: leave out `.numpy()`." if numpy_on_path.call.endswith(".numpy()") else
                   "Did you use the `tf.` operation inside the `with` block?")
            return Explanation(f"`{numpy_on_path.call}` turned a value on the path to `{call.target}` into NumPy, and "
                               f"`tape.gradient` needs tensors. {fix}", "numpy-in-path")
        source = origin(facts, call.source, call.line) if len(call.sources) == 1 else None
        if source is not None and source.made_by == "numpy":
            return Explanation(f"The source `{call.source}` is a NumPy array (`{source.call}`), which the tape cannot "
                               f"differentiate by. Did you convert it with `tf.constant` and watch it?", "numpy-source")
    return _plain_value_in_gradient(facts, text) or Explanation(
        f"{_what_reached(text)} reached `tape.gradient` as its target or a source, where it needs tensors.")


def _what_reached(text: str) -> str:
    kind = re.search(r"'([\w.]+)' object has no attribute '(?:_id|dtype)'", text)
    name = kind.group(1) if kind else "float" if "to a TensorFlow DType" in text else ""
    return ("A Python number" if name in ("float", "int") else "A NumPy value" if name.startswith("numpy")
            else f"A `{name}`" if name else "A value that is not a tensor")


def _plain_value_in_gradient(facts: CodeFacts, text: str) -> Explanation | None:
    """The target a gradient call got is a plain number or array: which code fact made it so, when one does
    (a Keras `predict` on its path, or a target computed without the source)."""
    for call in facts.gradient_calls:
        predicted = predict_on_path(facts, call)
        if predicted is not None:
            return predicted
        up = facts.upstream(call.target)
        sources = [s for s in call.sources if re.fullmatch(r"[A-Za-z_]\w*", s)]
        made = facts.assignments_of(call.target, before=call.line)
        if made and sources and not any(s in up for s in sources):
            reads = ", ".join(f"`{n}`" for n in sorted(up - {call.target}) if n in facts.params) or "other values"
            return Explanation(f"{_what_reached(text)} reached `{call.text()}`: `{call.target}` is computed from "
                               f"{reads}, not from `{call.source}`, so it is a plain value the tape never recorded. "
                               f"Compute `{call.target}` from `{call.source}`.", "not-connected")
    return None


def _after_del(error: BaseException, facts: CodeFacts) -> Explanation | None:
    name = re.search(r"variable '(\w+)'|name '(\w+)'", str(error))
    name = name and (name.group(1) or name.group(2))
    if name and facts.tape(name) and name in facts.deleted:
        return Explanation(f"`{name}` was used after `del {name}`. Did you delete the tape before its last "
                           "`gradient` call? Move `del` after it.", "tape-deleted")
    return None


def _positional_compute_loss(facts: CodeFacts) -> Explanation | None:
    if facts.positional.get("compute_loss"):
        return Explanation("`compute_loss` takes keyword arguments, and called positionally it puts `y_pred` in the "
                           "wrong slot. Did you mean `self.compute_loss(x=x, y=y, y_pred=y_pred)`?",
                           "compute-loss-positional")
    return None




def _one_none_explanation(facts: CodeFacts, values: Mapping[str, Any] | None) -> Explanation:
    """Why some gradient the function returns was None, when the error does not say which: each returned
    element's gradient call is explained, and a cause is given only if exactly one is established."""
    returned = facts.returns[-1] if facts.returns else None
    count = len(returned.elts) if isinstance(returned, (ast.List, ast.Tuple)) else 0
    calls = [facts.returned_call(i) for i in range(count)] if count else [facts.returned_call()]
    if not any(calls):  # the result is built from the calls (a list, a stack): every call is a candidate
        calls = facts.gradient_calls
    found = {why.cause: why for why in (explain_none(facts, c, values) for c in calls if c) if why.cause}
    return next(iter(found.values())) if len(found) == 1 else Explanation("")


def _operator_met_none_gradient(error: BaseException, facts: CodeFacts) -> bool:
    """A Python operator raised on a None (`x * None`) at a line that reads a gradient: its call, or a name it gave."""
    if not (isinstance(error, TypeError) and "unsupported operand" in str(error) and "'NoneType'" in str(error)):
        return False
    frames = traceback.extract_tb(error.__traceback__)
    line = (frames[-1].line or "") if frames else ""
    gradients = {n for a in facts.assignments if a.made_by == "gradient" for n in a.names}
    return any(f".{c.method}(" in line for c in facts.gradient_calls) or bool(gradients & set(re.findall(r"\w+", line)))


def error_cause(error: BaseException, facts: CodeFacts | None = None,
                values: Mapping[str, Any] | None = None) -> Explanation | None:
    """The likely mistake behind an exception raised by a student's tape code, if known.

    With the code's facts, the explanation depends on them (how many tapes, which calls): a second
    `gradient` call on a nested tape points to the outer tape rather than to `persistent=True`.
    `values` are the parameters' kinds, as for `explain_none`.
    """
    facts = facts or CodeFacts()
    text = str(error)
    if facts.found and ("Attempt to convert a value (None)" in text or _operator_met_none_gradient(error, facts)):
        if _positional_compute_loss(facts):  # eagerly, the `y_pred` it leaves empty fails this way
            return _positional_compute_loss(facts)
        why = _one_none_explanation(facts, values)
        return Explanation(f"A gradient was `None` and the next operation could not use it. {why.text}".strip(),
                           why.cause)
    if "non-persistent GradientTape can only be used to compute one set" in text:
        return _second_use(facts)
    if "has no attribute '_id'" in text:
        return _numpy_reached_tape(facts, text)
    if re.search(r"'(float|int)' object has no attribute 'dtype'|Cannot convert the argument `type_value`: \S+ to a "
                 r"TensorFlow DType", text):  # how a Python number as a gradient's target fails, by its value
        return _plain_value_in_gradient(facts, text)
    if isinstance(error, (NameError, UnboundLocalError)) and facts.found:
        return _after_del(error, facts)
    if "None values not supported" in text and facts.found:
        return _positional_compute_loss(facts)
    return next((Explanation(why, code) for needle, code, why in KNOWN_ERRORS if needle in text), None)
