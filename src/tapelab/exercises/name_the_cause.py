"""Exercise 5.1 of notebook 05_debugging_none: name the cause of each snippet's None gradient.

Its variants shuffle which letter each snippet has (among the visible A to F, and among the hidden G to I), so
the table a student returns is their variant's own."""
from __future__ import annotations

from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import Incorrect
from tapelab.checker.variants import Space
from tapelab.diagnose import CAUSES

__all__ = ["ex5_1"]

_CODE_A = """\
w = tf.Variable(1.0)
x = tf.constant(2.0)
with tf.GradientTape() as tape:
    y = w * x
tape.gradient(y, x)"""
_CODE_B = """\
w = tf.Variable([0.2, 0.7, 0.1])
with tf.GradientTape() as tape:
    loss = tf.cast(tf.argmax(w), tf.float32)
tape.gradient(loss, w)"""
_CODE_C = """\
w = tf.Variable(3.0)
with tf.GradientTape() as tape:
    loss = tf.constant(np.square(w.numpy()))
tape.gradient(loss, w)"""
_CODE_D = """\
counter = tf.Variable(0.0)
w = tf.Variable(2.0)
with tf.GradientTape() as tape:
    counter.assign_add(w * 3.0)
    loss = counter**2
tape.gradient(loss, w)"""
_CODE_E = """\
w = tf.Variable(2.0, trainable=False)
with tf.GradientTape() as tape:
    loss = w**2
tape.gradient(loss, w)"""
_CODE_F = """\
w = tf.Variable(2.0)
pred = w * 3.0
with tf.GradientTape() as tape:
    loss = (pred - 1.0) ** 2
tape.gradient(loss, w)"""
_CODE_G = """\
w = tf.Variable(3)
with tf.GradientTape() as tape:
    loss = w * w
tape.gradient(loss, w)"""
_CODE_H = """\
w = tf.Variable(2.0)
with tf.GradientTape() as tape:
    loss = tf.stop_gradient(w) * 3.0
tape.gradient(loss, w)"""
_CODE_I = """\
w = tf.Variable(2.0)
w = w + 1.0
with tf.GradientTape() as tape:
    loss = w**2
tape.gradient(loss, w)"""

# snippet (its letter in the notebook's text) -> (its code, right cause code, what it shows,
#                                                {wrong code: the symptom that points elsewhere})
_SNIPPETS: dict[str, tuple[str, str, str, dict[str, str]]] = {
    "A": (_CODE_A, "not-watched", "`x` is a `tf.constant`, and the gradient asked for is with respect to `x`.", {
        "not-trainable": "Nothing here has `trainable=False`: `x` is not a variable at all, it is a constant.",
        "not-connected": "`y = w * x` does use `x`, so the loss is connected to it.",
    }),
    "B": (_CODE_B, "non-differentiable", "the loss is built from `tf.argmax(w)`, an index.", {
        "not-connected": "The loss is computed from `w` inside the tape, so it is connected: "
                         "which operation on the path has no gradient?",
        "int-dtype": "`w` itself is a float variable; the integer appears only as argmax's output. "
                     "Which operation produced it?",
        "no-gradient-registered": "An op with no registered gradient raises `LookupError`; here the gradient is "
                                  "quietly `None`. Which op on the path makes only an index?",
    }),
    "C": (_CODE_C, "numpy-in-path", "the loss goes through `w.numpy()` and `np.square`.", {
        "not-watched": "`w` is a trainable `tf.Variable`, so the tape does watch it: what does the path leave?",
        "not-connected": "The loss is computed from `w`'s value, so it is connected in your head, "
                         "but through which library?",
    }),
    "D": (_CODE_D, "state-change", "the value reaches the loss through `counter.assign_add(...)`.", {
        "not-connected": "`w * 3.0` is computed inside the tape, so `w` is on a path: which call "
                         "changes a variable in place on that path?",
        "replaced-by-tensor": "No name is rebound here: `counter` stays a variable. Which call on the path "
                              "has no gradient?",
    }),
    "E": (_CODE_E, "not-trainable", "`w` is created with `trainable=False`.", {
        "not-watched": "`w` is a `tf.Variable`, not a constant: look at how it was created.",
    }),
    "F": (_CODE_F, "outside-tape", "`pred` is computed before the `with` block opens.", {
        "not-connected": "`pred` is `w * 3.0`, so the loss depends on `w`, but when was that "
                         "product recorded?",
        "not-watched": "`w` is a trainable `tf.Variable`, watched automatically. Where is `pred` computed?",
        "unrecorded-gradient": "No gradient is differentiated twice here. Where is `pred` computed?",
    }),
    # G to I are graded by the hidden tests only: inputs the visible check never saw
    "G": (_CODE_G, "int-dtype", "`w` is created from the integer `3`, so it is an `int32` variable.", {
        "not-watched": "`w` is a trainable `tf.Variable`, so the tape watches it: what is its dtype?",
        "not-trainable": "Nothing here has `trainable=False`. Look at the value `w` was created from.",
    }),
    "H": (_CODE_H, "stop-gradient", "the loss is built from `tf.stop_gradient(w)`.", {
        "not-connected": "The loss is computed from `w` inside the tape. Which call on the path blocks "
                         "gradients on purpose?",
        "non-differentiable": "`tf.stop_gradient` is not an op without a gradient: it blocks the gradient "
                              "by design, and has its own code.",
    }),
    "I": (_CODE_I, "replaced-by-tensor", "`w = w + 1.0` rebinds the name `w` to a tensor before the tape opens.", {
        "not-watched": "True, the tensor `w` is not watched, but why is `w` a tensor? Look at the line "
                       "that rebinds it.",
        "outside-tape": "The loss is computed inside the `with` block. What is `w` by then?",
        "not-connected": "The loss uses `w`, but which `w`: the variable or what replaced it?",
    }),
}

_VISIBLE, _HIDDEN = "ABCDEF", "GHI"  # the visible test's letters, and the hidden tests'


def _order(rng) -> str:
    """Which snippet (by its notebook letter) each letter A to I shows: visible ones stay visible, and at least one
    of them moves (else the notebook's table would pass the visible test). A draw, not the space's `allowed`
    rule, keeps them from all staying: that rule must allow the notebook's own order."""
    visible = _VISIBLE
    while visible == _VISIBLE:
        visible = "".join(rng.permutation(list(_VISIBLE)))
    return visible + "".join(rng.permutation(list(_HIDDEN)))


def _letters(order: str) -> dict:
    """The fields of a variant: `$A`... the right code of the snippet at letter A; `$at_A`... the letter at which
    the notebook's snippet A sits; `$snippets`, the code block of the task."""
    fields = {letter: _SNIPPETS[snippet][1] for letter, snippet in zip(_VISIBLE + _HIDDEN, order)}
    fields.update({f"at_{snippet}": letter for letter, snippet in zip(_VISIBLE + _HIDDEN, order)})
    fields["snippets"] = "\n\n".join(f"# {letter}\n{_SNIPPETS[snippet][0]}"
                                      for letter, snippet in zip(_VISIBLE + _HIDDEN, order))
    return fields


_FIELDS = (*_VISIBLE, *_HIDDEN, *(f"at_{s}" for s in _VISIBLE + _HIDDEN), "snippets")


class NameTheCause(Exercise):
    number = "5.1"
    answer = "classify"
    # Which snippet each letter shows (the notebook's order, "ABCDEFGHI", by default); a variant shuffles the
    # visible letters (at least one snippet moves) and the hidden ones among themselves.
    space = Space(default={"order": _VISIBLE + _HIDDEN}, draws={"order": _order},
                  wording={name: (lambda v, name=name: _letters(v["order"])[name]) for name in _FIELDS})
    statement = """Each snippet below returns `None` for the gradient it asks for. Write `classify(snippet)` that takes a
snippet's letter (`"A"` to `"I"`) and returns the code of its most likely cause: a string with hyphens, such as
`"stop-gradient"`, one of the keys of `CAUSES`. Section 1 printed them
(`print(list(CAUSES))` lists them again). The visible test checks
snippets A to F; the hidden tests grade G, H and I, at the end of the list, so answer them too.

```python
${snippets}
```"""
    visible_cases = tuple(_VISIBLE)  # the hidden tests grade "G", "H", "I"
    praise = "you read each symptom and named the cause."
    hints = (
        "For each snippet, ask the checklist in order: is the source a trainable float variable, "
        "is the loss computed inside the tape, and is every op on the path differentiable TensorFlow?",
        "`tf.argmax` returns an index; `.numpy()` leaves TensorFlow; `assign_add` changes state.",
    )

    def check_case(self, fn, snippet, facts):
        got = self.call(fn, snippet, shown=repr(snippet)).value
        _, right, shows, symptoms = _SNIPPETS[self.variant["order"][(_VISIBLE + _HIDDEN).index(snippet)]]
        if got == right:
            return
        if isinstance(got, str) and got not in CAUSES and got.replace("_", "-") in CAUSES:
            raise Incorrect(f"`classify({snippet!r})` returned {got!r}: cause codes are written with hyphens. "
                            f"Did you mean {got.replace('_', '-')!r}?", cause="unknown-cause-id")
        if not isinstance(got, str) or got not in CAUSES:
            raise Incorrect(f"`classify({snippet!r})` returned {got!r}, which is not a cause code. "
                            f"Return one of the keys of `CAUSES`: {', '.join(CAUSES)}.", cause="unknown-cause-id")
        reason = symptoms.get(got, f"Look again at what snippet {snippet} shows: {shows}")
        raise Incorrect(f"`classify({snippet!r})` is `{got!r}`, but that is not the most likely cause. {reason}",
                        cause="wrong-cause-id")


ex5_1 = NameTheCause()
