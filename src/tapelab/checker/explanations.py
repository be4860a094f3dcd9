"""Name a student's mistake from what their code did: why a gradient is None (`explain_none`, `none_feedback`);
`tapelab.checker.error_causes` names what an error means.

Every explanation carries a cause code from `tapelab.causes`, or None when the code facts do not
establish a cause; then the message says only what was observed. A wrong diagnosis is worse than none.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Mapping

from tapelab.checker.sources import beside, copied_variable, made_before, variable_from_path
from tapelab.checker.code_facts import CodeFacts, GradientCall, Tape
from tapelab.checker.messages import Incorrect

__all__ = ["Explanation", "explain_none", "none_feedback", "origin", "predict_on_path"]


@dataclass(frozen=True)
class Explanation:
    """A cause as a sentence or question for the student (`text`) and its catalogue code (`cause`)."""

    text: str
    cause: str | None = None

    def __str__(self) -> str:
        return self.text


_NOTHING = Explanation("")


def _kind(name: str, facts: CodeFacts, tape: Tape, before: int, values: Mapping[str, Any]) -> str | None:
    """"variable", "frozen" (trainable=False), "constant", "int" or None (unknown) for the source `name`."""
    made = facts.assignments_of(name, before=before)
    if made:
        last = made[-1]
        if last.made_by == "variable":
            return "frozen" if re.search(r"trainable\s*=\s*False", last.call) else "variable"
        if last.made_by == "constant":
            return "constant"
        return None  # computed: its kind is its inputs'
    value = values.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        return value
    dtype = getattr(getattr(value, "dtype", None), "is_integer", False)
    if dtype:
        return "int"
    if hasattr(value, "assign"):
        return "variable" if getattr(value, "trainable", True) else "frozen"
    return "constant" if hasattr(value, "dtype") and hasattr(value, "numpy") else None


def _first_use(facts: CodeFacts, tape: Tape, name: str) -> int | None:
    """The line of the first assignment inside `tape`'s block that reads `name`."""
    return next((a.line for a in facts.assignments if tape.contains(a.line) and name in a.reads), None)


def origin(facts: CodeFacts, expr: str, before: int):
    """The assignment that last computed the plain name `expr` before line `before`, aliases followed."""
    for _ in range(5):
        made = facts.assignments_of(expr, before=before) or facts.assignments_of(expr)
        if not made:
            return None
        last = made[-1]
        if not re.fullmatch(r"[A-Za-z_]\w*", last.value) or last.value == expr:
            return last
        expr, before = last.value, last.line
    return None


def _where_target(facts: CodeFacts, call: GradientCall, tape: Tape) -> Explanation | None:
    """Was the target computed where `tape` recorded it? An explanation if not."""
    target, name = call.target, tape.name
    if not re.fullmatch(r"[A-Za-z_]\w*", target):
        inline_op = re.search(r"[(*+/@\[-]", target)  # an index is an operation too
        if inline_op and not tape.contains(call.line):
            return Explanation(f"`{target}` is computed inside the `{call.text()}` call, after `{name}`'s `with` "
                               f"block closed, so `{name}` never recorded it. Did you compute it inside the block?",
                               "outside-tape")
        return None
    loop = next((lp for lp in facts.loops if lp.target == target and lp.contains(call.line)), None)
    if loop is not None and facts.assignments_of(target, before=call.line) == []:
        return _where_iterated(facts, call, tape, loop)
    made = origin(facts, target, call.line)
    if made is None or tape.contains(made.line):
        return None
    recorder = next((t for t in facts.tape_blocks if t.contains(made.line) and t.name != name), None)
    if made.made_by == "gradient" and recorder is None:
        if facts.nested():
            return Explanation(
                f"`{target} = {made.value}` runs after the outer tape's `with` block has closed, so no tape recorded "
                f"how `{target}` depends on the source, and `{call.text()}` is `None`. Did you call it inside the "
                "outer `with` block?", "unrecorded-gradient")
        return Explanation(
            f"`{target}` comes from `{made.value}` after `{name}`'s `with` block closed, so no tape recorded how it "
            f"was computed and differentiating it again gives `None`. Did you nest two tapes, computing `{target}` "
            "inside the outer tape's block?", "unrecorded-gradient")
    if recorder is not None:
        return Explanation(f"`{target}` was computed inside the `with` block of `{recorder.name}`, not `{name}`, so "
                           f"`{name}` has no record of it. Did you mean `{recorder.name}.{call.method}({target}, "
                           f"{call.source})`?", "wrong-tape")
    when = "before" if made.line < tape.start else "after"
    return Explanation(f"`{target}` is computed {when} `{name}`'s `with` block, so `{name}` never recorded it. "
                       f"Did you compute `{target}` inside the `with tf.GradientTape() as {name}:` block?",
                       "outside-tape")


def _where_iterated(facts: CodeFacts, call: GradientCall, tape: Tape, loop) -> Explanation | None:
    """The target is a loop's variable: were the tensors it runs over computed where `tape` recorded them?"""
    plain = re.fullmatch(r"[A-Za-z_]\w*", loop.iterable)
    made = origin(facts, loop.iterable, call.line) if plain else None
    # an expression is evaluated where the loop starts: after the block when the loop starts at or after its end
    line = made.line if made is not None else (None if plain or loop.start < tape.end else loop.end)
    if line is None or tape.contains(line) or line < tape.start:
        return None
    return Explanation(f"`{call.target}` runs over `{loop.iterable}`, which is computed after `{tape.name}`'s `with` "
                       f"block closed, so `{tape.name}` never recorded it. Did you compute `{loop.iterable}` inside "
                       "the block?", "outside-tape")


def _watched(facts: CodeFacts, tape: Tape, name: str, line: int, values, depth: int = 0) -> bool | None:
    """Whether `tape` records `name` at `line`: True, False, or None when the code does not tell."""
    watch = tape.watch_line(name)
    if watch is not None and watch < line:
        first = _first_use(facts, tape, name)
        return first is None or watch < first  # watched after a line used it: that use was not recorded
    kind = _kind(name, facts, tape, line, values)
    if kind == "variable":
        return tape.watch_accessed
    if kind in ("constant", "frozen", "int"):
        return False
    made = facts.assignments_of(name, before=line)
    if not made or depth > 5 or not tape.contains(made[-1].line):
        return None
    inputs = [_watched(facts, tape, read, made[-1].line, values, depth + 1) for read in made[-1].reads
              if read in facts.params or facts.assignments_of(read)]
    if any(inputs):
        return True
    return False if inputs and all(w is False for w in inputs) else None


def _unwatched_root(facts: CodeFacts, tape: Tape, name: str, line: int, values) -> str:
    """The name whose missing watch leaves `name` unrecorded: `name` itself or the input it came from."""
    made = facts.assignments_of(name, before=line)
    if made and tape.contains(made[-1].line):
        for read in sorted(made[-1].reads):
            if _watched(facts, tape, read, made[-1].line, values) is False:
                return _unwatched_root(facts, tape, read, made[-1].line, values)
    return name


def _about_source(facts: CodeFacts, call: GradientCall, tape: Tape, values) -> Explanation | None:
    target, source, name = call.target, call.source, tape.name
    target_up = facts.upstream(target)
    kind = _kind(source, facts, tape, call.line, values)
    if kind == "int":
        return Explanation(f"`{source}` holds integers, and only floating-point and complex values have "
                           "gradients. Did you make it a float?", "int-dtype")
    if kind == "frozen":
        return Explanation(f"`{source}` is a variable created with `trainable=False`, which the tape does not watch by "
                           f"itself. Did you mean a trainable variable, or `{name}.watch({source})`?", "not-trainable")
    if re.fullmatch(r"[A-Za-z_]\w*", source) and _watched(facts, tape, source, call.line, values) is False:
        root = _unwatched_root(facts, tape, source, call.line, values)
        late = tape.watch_line(root)
        if late is not None:
            return Explanation(f"`{name}.watch({root})` comes after a line that already used `{root}`, and the tape "
                               f"only records operations on a tensor from the moment it is watched. Did you call "
                               f"`{name}.watch({root})` before computing anything from it?", "watched-too-late")
        via = f" `{source}` is computed from `{root}`," if root != source else ""
        copied = copied_variable(facts, root, call.line, tape, values)
        if copied:
            return Explanation(f"{via} {copied[0]}".lstrip(), copied[1])
        root_kind = _kind(root, facts, tape, call.line, values)
        what = ("a variable, but the tape was opened with `watch_accessed_variables=False`" if root_kind == "variable"
                else "a constant, and a tape only watches trainable variables by itself")
        others = [w for w, _ in tape.watches]
        watchers = [t.name for t in facts.tape_blocks if t.name != name and t.watch_line(root) is not None]
        also = (f" (`{name}` watches only `{'`, `'.join(others)}`)" if others else
                f" (only `{watchers[0]}` watches it, not `{name}`)" if watchers else "")
        return Explanation(f"{via} `{root}` is {what}{also}. Did you call `{name}.watch({root})` inside the "
                           "`with` block?".lstrip(), "not-watched")
    blocked = next((a for a in facts.assignments if a.made_by == "numpy" and tape.contains(a.line)
                    and set(a.names) & target_up and source in facts.upstream(" + ".join(a.reads) or "_")), None)
    if blocked is not None:
        fix = ("Keep the value a tensor: leave out `.numpy()`." if blocked.call.endswith(".numpy()") else
               "Did you use the `tf.` operation there instead?")
        return Explanation(f"`{blocked.call}` on the path from `{source}` to `{target}` leaves TensorFlow, and the tape "
                           f"records TensorFlow operations only. {fix}", "numpy-in-path")
    copied = variable_from_path(facts, call, tape, target_up)
    if copied:
        return Explanation(*copied)
    early = next((a for a in facts.assignments if set(a.names) & target_up and source not in a.names
                  and a.line < call.line and not tape.contains(a.line) and a.made_by not in ("variable", "constant")
                  and source in facts.upstream(" + ".join(a.reads) or "_")), None)
    if early is not None:
        step = early.names[0]
        return Explanation(f"`{step}` is computed from `{source}` outside `{name}`'s `with` block, so the tape never "
                           f"recorded that step. Did you compute `{step}` inside the block?", "outside-tape")
    found = beside(facts, call, target_up) or made_before(facts, call, tape)  # tapelab.checker.sources
    return _not_connected(facts, call, target_up) or (Explanation(*found) if found else None)


def _not_connected(facts: CodeFacts, call: GradientCall, target_up: set[str]) -> Explanation | None:
    """`source` is a local name the target never reads, directly or through a shared input."""
    source = call.source
    local = source in facts.params or facts.assignments_of(source)
    if not (re.fullmatch(r"[A-Za-z_]\w*", call.target) and facts.assignments_of(call.target) and local):
        return None
    made = facts.assignments_of(source, before=call.line)
    if made and made[-1].made_by in ("constant", "variable"):
        # a new tensor or variable built from a value: what else is computed from that value is not computed from it
        if source in target_up:
            return None
        return Explanation(f"`{call.target}` is not computed from `{source}`: `{source} = {made[-1].value}` makes a new "
                           f"tensor, and `{call.target}` is computed from {_listed(target_up & made[-1].reads)} "
                           f"instead. Compute `{call.target}` from `{source}`.", "not-connected")
    if facts.upstream(source) & target_up:
        return None
    return Explanation(f"`{call.target}` is not computed from `{source}`, so there is no path back to it. Did you mean "
                       f"another target or source?", "not-connected")


def _listed(names: set[str]) -> str:
    return ", ".join(f"`{n}`" for n in sorted(names)) or "other values"


def predict_on_path(facts: CodeFacts, call: GradientCall) -> Explanation | None:
    """A Keras `predict` on the path to the call's target (even when a TensorFlow op then makes a tensor of it)."""
    up = facts.upstream(call.target)
    predicted = next((a for a in facts.assignments if set(a.names) & up and ".predict(" in a.value), None)
    if predicted is None:
        return None
    return Explanation(f"`{predicted.value}` returns a NumPy array, which no tape records, so `{call.target}` is not "
                       f"a tensor computed from the source. Call the model itself, `{_direct_call(predicted.value)}`, "
                       "inside the `with` block.", "predict-in-tape")


def _direct_call(text: str) -> str:
    """`model(points)` for the `model.predict(points, verbose=0)` in `text`; `model(x)` if none is readable."""
    try:
        node = next(n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Attribute) and n.func.attr == "predict" and n.args)
    except (SyntaxError, StopIteration):
        return "model(x)"
    return f"{ast.unparse(node.func.value)}({ast.unparse(node.args[0])})"


def explain_none(facts: CodeFacts, call: GradientCall | None, values: Mapping[str, Any] | None = None) -> Explanation:
    """Why the student's own `call` (narrowed to one source) gave None, naming their target, source and tape.

    `values` maps names to what the checker passed (a tensor, a variable) or to a kind ("constant",
    "variable"), so a parameter's kind is known; without source or a call, no cause is asserted.
    """
    if not facts.found:
        return _NOTHING
    if facts.tapes == 0:
        return Explanation("Nothing recorded it: did you compute it inside a `with tf.GradientTape() as tape:` block?",
                           "no-tape")
    tape = facts.tape(call.tape) if call else None
    if tape is None:
        return _NOTHING
    values = values or {}
    sliced = next((s for s in call.sources if re.fullmatch(r"[A-Za-z_]\w*\[.+\]", s)), None)
    if sliced is not None:
        whole = sliced.split("[", 1)[0]
        return Explanation(f"The source `{sliced}` is a slice, and slicing makes a new tensor when `{call.text()}` "
                           f"runs: `{call.target}` was computed from the whole `{whole}`, never from that slice, so the "
                           f"tape has no path to it. Differentiate by `{whole}` itself (`batch_jacobian` gives the "
                           "per-example blocks) and slice the result.", "sliced-source")
    if call.target == call.source:
        return Explanation(f"`{call.text()}` differentiates `{call.source}` by itself. Did you mean the value computed "
                           f"from it as the target?", "target-is-source")
    return (_swapped(facts, call) or _where_target(facts, call, tape) or predict_on_path(facts, call)
            or (len(call.sources) == 1 and _about_source(facts, call, tape, values)) or _NOTHING)


def _swapped(facts: CodeFacts, call: GradientCall) -> Explanation | None:
    """The target is an input of the source rather than computed from it: the arguments are reversed."""
    target, source = call.target, call.source
    names = re.fullmatch(r"[A-Za-z_]\w*", target) and re.fullmatch(r"[A-Za-z_]\w*", source)
    if not names or source in facts.upstream(target) or target not in facts.upstream(source):
        return None
    return Explanation(f"`{source}` is computed from `{target}`, not the other way round: the arguments are the wrong "
                       f"way round. Did you mean `{call.tape}.{call.method}({source}, {target})`?", "swapped-arguments")


def none_feedback(observed: str, facts: CodeFacts, call: GradientCall | None,
                  values: Mapping[str, Any] | None = None) -> Incorrect:
    """An Incorrect that states what is None (`observed`) and, when established, why and its cause code."""
    why = explain_none(facts, call, values)
    return Incorrect(f"{observed} {why.text}".strip(), cause=why.cause)
