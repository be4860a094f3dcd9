"""Causes the code shows by itself: constructions that are wrong in any exercise of the course, read from the
student's source (tapelab.checker.code_facts) when a check failed and named no cause.

- a list of targets given to `gradient` (`tape.gradient([y, z], x)`), which returns the gradient of their sum;
- a NumPy copy (`values = v.numpy()`) changed in place and never assigned back, so the variable keeps its value;
- a list of layer losses added as it is (`loss + model.losses`), which broadcasts instead of summing;
- an iterator made once (`batches = iter(dataset)`) and looped over in every pass of an outer loop.
"""
from __future__ import annotations

from tapelab.checker.code_facts import CodeFacts
from tapelab.checker.explanations import Explanation

__all__ = ["evident"]


def evident(facts: CodeFacts) -> Explanation | None:
    """The first construction of the list above that the code shows, as a sentence with its cause; else None."""
    if not facts.found:
        return None
    for finder in (_list_target, _numpy_copy, _list_added, _iterator_once):
        found = finder(facts)
        if found is not None:
            return found
    return None


def _list_target(facts: CodeFacts) -> Explanation | None:
    call = next((c for c in facts.gradient_calls if c.target.startswith(("[", "("))), None)
    if call is None:
        return None
    return Explanation(f"`{call.text()}` gives a list of targets to one call: the tape then returns the gradient of "
                       "their sum, one value per source, not one per target. Ask for each target in its own call "
                       "(a persistent tape allows several).", "wrong-target")


def _numpy_copy(facts: CodeFacts) -> Explanation | None:
    copies = facts.numpy_copies_changed()
    if not copies:
        return None
    copy = copies[0]
    name = copy.names[0]
    return Explanation(f"`{name} = {copy.value}` is a NumPy copy of the values: changing `{name}` "
                       "leaves the variable as it was. Change the variable itself, e.g. with `assign_sub`.",
                       "no-update")


def _list_added(facts: CodeFacts) -> Explanation | None:
    if not facts.list_added:
        return None
    expr, _ = facts.list_added[0]
    return Explanation(f"`{expr}` is a Python list, and adding it with `+` does not add its terms: "
                       "TensorFlow turns the list into a tensor and broadcasts, so the loss becomes a vector (empty "
                       f"when the list is). Add their sum, `sum({expr})`.", "wrong-target")


def _iterator_once(facts: CodeFacts) -> Explanation | None:
    found = facts.iterators_made_once()
    if not found:
        return None
    made, outer = found[0]
    name = made.names[0]
    return Explanation(f"`{name} = {made.value}` is made once, before `for {outer.target} in "
                       f"{outer.iterable}:`, and an iterator is used up by its first pass: every later pass over "
                       f"`{name}` gets no batch. Loop over the dataset itself in each pass.", "epochs-ignored")
