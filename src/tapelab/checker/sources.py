"""Where a gradient's source was made, when that explains a `None` (tapelab.checker.explanations.explain_none):
a tensor computed before the tape opened and never watched, a target computed beside the source, from a shared
input, rather than from it, a variable the function was given rebound to a constant copy of itself, or a new
variable on the path created from a value computed from the source. Each finder returns (sentence, cause code) or
None."""
from __future__ import annotations

import re
from typing import Any, Mapping

from tapelab.checker.code_facts import CodeFacts, GradientCall, Tape
from tapelab.explained import initial_value, value_names, variable_copy

__all__ = ["beside", "made_before", "copied_variable", "variable_from_path"]


def beside(facts: CodeFacts, call: GradientCall, target_up: set[str]) -> tuple[str, str] | None:
    """The source is computed in the function, and so is the target, but not from the source: both come from a
    shared input, side by side."""
    source, target = call.source, call.target
    if not (re.fullmatch(r"[A-Za-z_]\w*", source) and re.fullmatch(r"[A-Za-z_]\w*", target)):
        return None
    if source in target_up or not facts.assignments_of(source) or not facts.assignments_of(target):
        return None
    made = facts.assignments_of(target, before=call.line)[-1]
    listed = ", ".join(f"`{n}`" for n in sorted(made.reads - {source})) or "other values"
    return (f"`{target} = {made.value}` does not read `{source}`: it is computed from {listed} directly, beside "
            f"`{source}`, so there is no path from `{source}` to `{target}`. Compute `{target}` from `{source}`.",
            "not-connected")


def made_before(facts: CodeFacts, call: GradientCall, tape: Tape) -> tuple[str, str] | None:
    """The source is a tensor computed before the tape opened, and the tape never watches it."""
    source = call.source
    made = facts.assignments_of(source, before=tape.start)
    if not re.fullmatch(r"[A-Za-z_]\w*", source) or not made or tape.watch_line(source) is not None:
        return None
    last = made[-1]
    if last.made_by or re.fullmatch(r"[A-Za-z_][\w.]*", last.value):  # made by a call we know, or an alias
        return None
    if facts.assignments_of(source, before=call.line)[-1] is not last:  # made again inside the tape
        return None
    return (f"`{source} = {last.value}` runs before `{tape.name}`'s `with` block opens: `{source}` is an ordinary "
            "tensor, not a variable, and a tape records what is computed from such a tensor only once it is watched. "
            f"Watch it, `{tape.name}.watch({source})`, first thing in the block (or compute it inside the block from a "
            "watched input).", "not-watched")


def copied_variable(facts: CodeFacts, name: str, line: int, tape: Tape,
                    values: Mapping[str, Any]) -> tuple[str, str] | None:
    """`name` is a parameter the caller passed a variable in, and the code rebinds it to a constant copy of itself
    (`w = tf.convert_to_tensor(w)`) before `line`: the copy is what the tape never watches."""
    made = facts.assignments_of(name, before=line)
    given = values.get(name)
    if name not in facts.params or not made or not (given == "variable" or hasattr(given, "assign")):
        return None
    copy = made[-1]
    if copy.made_by != "constant" or name not in copy.reads:
        return None
    return (f"`{name} = {copy.value}` replaces the variable `{name}` you were given by a constant copy, and a tape "
            f"watches only trainable variables by itself, not such a copy. Keep the variable as it was given (drop "
            f"that line), or watch the copy, `{tape.name}.watch({name})`.", "not-watched")


def variable_from_path(facts: CodeFacts, call: GradientCall, tape: Tape, target_up: set[str]) -> tuple[str, str] | None:
    """A new `tf.Variable` on the path to the target, created from a value computed from the source: the variable
    starts from a copy of that value, and its creation is no operation the tape can run backwards (the rule and
    its sentence are `tapelab.explained`'s, which diagnose shares)."""
    source, target = call.source, call.target
    if not re.fullmatch(r"[A-Za-z_]\w*", source):
        return None
    for made in facts.assignments:
        if made.made_by != "variable" or made.line >= call.line or source in made.names or len(made.names) != 1:
            continue
        name = made.names[0]
        if name not in target_up or facts.assignments_of(name, before=call.line)[-1] is not made:
            continue
        init = initial_value(made.call)
        if init is None or source not in facts.upstream(" + ".join(sorted(value_names(init))) or "_"):
            continue
        return variable_copy(name, made.value, source, f"`{target}`", tape.contains(made.line), made.call)
    return None
