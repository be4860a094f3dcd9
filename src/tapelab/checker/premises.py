"""A question is evidence too: before a failure is shown, every stock question it asks is checked against what the
student's code visibly does, and a question the code already answers is taken out (DESIGN.md, "Feedback voice").

Each `Premise` is one template of the engine's questions ("Did you apply the gradients with `optimizer.apply(...)`?"):
the pattern that finds it in a message, the code fact that contradicts it, the causes it stands for (dropped with it,
since a diagnosis the code contradicts is no diagnosis), and the question as the engine writes it;
tests/checker/test_premises.py walks every template with code that already does what it asks. `vetted(failure, facts)` is what `Exercise.check` calls on every failure.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from tapelab.checker.code_facts import CodeFacts
from tapelab.checker.messages import Feedback, Incorrect

__all__ = ["Premise", "PREMISES", "REMEDIES", "vetted", "contradicted"]


@dataclass(frozen=True)
class Premise:
    """One question template, the code fact that answers it, and the question as written."""

    name: str
    pattern: str  # a regular expression over the message: the question (and the advice that only follows from it)
    answered: Callable[[CodeFacts, re.Match], bool]
    causes: tuple[str, ...]
    question: str  # the question as the engine writes it, for the test that walks every template

    def find(self, text: str) -> re.Match | None:
        return re.search(self.pattern, text)


def _rebinds(facts: CodeFacts) -> bool:
    """Whether a name is rebound from itself (`v = v - lr * g`, `w -= ...`), NumPy copies aside."""
    copies = {a.names[0] for a in facts.numpy_copies_changed()}
    return any(set(a.names) & a.reads - copies for a in facts.assignments)


def _loops_twice(facts: CodeFacts, tape: str) -> bool:
    calls = [c for c in facts.gradient_calls if c.tape == tape]
    return len(calls) > 1 or any(loop.contains(c.line) for c in calls for loop in facts.loops)


PREMISES: tuple[Premise, ...] = (
    Premise("apply-called", r" ?Did you apply the gradients with `optimizer\.apply\([^`]*\)`\?",
            lambda f, m: bool(f.calls_to("apply") or f.calls_to("apply_gradients")), ("no-update",), question='Did you apply the gradients with `optimizer.apply(grads, model.trainable_variables)`?'),
    Premise("epoch-loop", r" ?Did you loop `for epoch in range\(epochs\):` around the batches\?|"
                          r" ?Did you loop over `range\(epochs\)`, and over every batch of `dataset` in each\?",
            lambda f, m: f.loop_over("range(epochs)") is not None, ("epochs-ignored",), question='Did you loop `for epoch in range(epochs):` around the batches?'),
    Premise("rebound", r" ?Did you write `v = v - lr \* g`\? That rebinds the name to a new tensor and leaves the "
                       r"variable alone: change it in place with `v\.assign_sub\(lr \* g\)`\.",
            lambda f, m: not _rebinds(f), ("replaced-by-tensor",), question="Did you write `v = v - lr * g`? That rebinds the name to a new tensor and leaves the variable "
            "alone: change it in place with `v.assign_sub(lr * g)`."),
    Premise("watch-called", r" ?Did you call `(\w+)\.watch\((\w+)\)` inside the `with` block\?",
            lambda f, m: f.tape(m[1]) is not None and f.tape(m[1]).watch_line(m[2]) is not None, ("not-watched",), question='Did you call `tape.watch(x)` inside the `with` block?'),
    Premise("input-only-tape", r" ?Did you open it with `tf\.GradientTape\(watch_accessed_variables=False\)`\?",
            lambda f, m: bool(f.tape_blocks) and not any(t.watch_accessed for t in f.tape_blocks),
            ("weights-watched",), question='Did you open it with `tf.GradientTape(watch_accessed_variables=False)`?'),
    Premise("training-mode", r" ?Did you call `model\(x, training=True\)`( inside the tape)?\?",
            lambda f, m: f.keywords.get("training=True", 0) > 0, ("inference-mode",), question='Did you call `model(x, training=True)`?'),
    Premise("inside-block", r" ?Did you compute `(\w+)` inside the `with tf\.GradientTape\(\) as (\w+):` block\?",
            lambda f, m: m[1] in f.inside_tape and m[1] not in f.outside_tape, ("outside-tape",), question='Did you compute `y` inside the `with tf.GradientTape() as tape:` block?'),
    Premise("asked-twice", r" ?Did you call `(\w+)\.gradient` twice\?",
            lambda f, m: f.tape(m[1]) is not None and not _loops_twice(f, m[1]), ("tape-used-twice",), question='Did you call `tape.gradient` twice?'),
    Premise("assign-add", r" ?Did you use `assign_add`\?",
            lambda f, m: not f.calls_to("assign_add"), ("uphill-step",), question='Did you use `assign_add`?'),
    Premise("trainable-sources", r" ?Did you differentiate with respect to `model\.trainable_variables`\?",
            lambda f, m: any("trainable_variables" in s for c in f.gradient_calls for s in c.sources),
            ("wrong-source",), question='Did you differentiate with respect to `model.trainable_variables`?'),
)


# Generic fixes that fit TensorFlow's error but not every task: key -> the fix as the engine writes it. An exercise
# whose task rules one out gives, under that key in its `remedies`, the fix its task asks for instead.
REMEDIES: dict[str, str] = {
    "persistent": r" ?To ask one tape several times, open it with `tf\.GradientTape\(persistent=True\)` and `del \w+` "
                  r"after the last call\.",
    "watch-a-constant": r" ?Did you convert it with `tf\.constant` and watch it\?",
    "remove-stop-gradient": r"(?<=blocks gradients by design\.) Did you mean to remove it\?",
    "slice-inside": r" \(or slice inside the block\)",
    "keep-with-ste": r" Did you keep that op without a straight-through estimator\?",
    "reduce-jacobian": r" Reduce over those axes, or differentiate the scalar (?:sum|mean) with `gradient`\.",
    "batch-jacobian": r" Its diagonal blocks are the right values: use `tape\.batch_jacobian\(y, x\)`\.",
    "watch-the-input": r" ?Did you mean to watch the input, `tape\.watch\(x\)`\?",
    "then-watch-the-input": r" then `tape\.watch\(x\)`\.",
}


def contradicted(text: str, facts: CodeFacts) -> list[tuple[Premise, re.Match]]:
    """The premises whose question appears in `text` and which the code already answers."""
    if not facts.found:
        return []
    found = []
    for premise in PREMISES:
        match = premise.find(text)
        if match is not None and premise.answered(facts, match):
            found.append((premise, match))
    return found


def vetted(failure: Feedback, facts: CodeFacts, remedies: dict[str, str] | None = None) -> Feedback:
    """`failure` with every question the code already answers taken out, and its cause with it when that question
    stood for the cause, and every generic fix the exercise rules out replaced by the exercise's own (`remedies`,
    key of REMEDIES -> its fix); `failure` itself when nothing changes."""
    if not isinstance(failure, Incorrect):
        return failure
    text, cause = str(failure), failure.cause
    wrong = contradicted(text, facts)
    ruled_out = [(re.search(REMEDIES[key], text), fix) for key, fix in (remedies or {}).items() if key in REMEDIES]
    ruled_out = [(m, fix) for m, fix in ruled_out if m is not None]
    if not wrong and not ruled_out:
        return failure
    for match, fix in ruled_out:
        text = text.replace(match[0], f" {fix}" if fix else "")
    for premise, match in wrong:
        text = text.replace(match[0], "")
        if cause in premise.causes:
            cause = None
    out = Incorrect(text.strip(), cause=cause, expected=failure.expected, actual=failure.actual)
    out.observed = failure.observed
    return out
