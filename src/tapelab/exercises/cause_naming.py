"""Exercise 5.1 of notebook 05_debugging_none: name the cause of a None gradient in each of nine snippets, by its
code in `tapelab.causes`; a wrong code is answered with what the snippet shows that points elsewhere."""
from __future__ import annotations

from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import Incorrect
from tapelab.diagnose import CAUSES

__all__ = ["NameTheCause"]

# snippet -> (right cause code, what the snippet shows, {wrong code: the symptom that points elsewhere})
_SNIPPETS: dict[str, tuple[str, str, dict[str, str]]] = {
    "A": ("not-watched", "`x` is a `tf.constant`, and the gradient asked for is with respect to `x`.", {
        "not-trainable": "Nothing here has `trainable=False`: `x` is not a variable at all, it is a constant.",
        "not-connected": "`y = w * x` does use `x`, so the loss is connected to it.",
    }),
    "B": ("non-differentiable", "the loss is built from `tf.argmax(w)`, an index.", {
        "not-connected": "The loss is computed from `w` inside the tape, so it is connected: "
                         "which operation on the path has no gradient?",
        "int-dtype": "`w` itself is a float variable; the integer appears only as argmax's output. "
                     "Which operation produced it?",
        "no-gradient-registered": "An op with no registered gradient raises `LookupError`; here the gradient is "
                                  "quietly `None`. Which op on the path makes only an index?",
    }),
    "C": ("numpy-in-path", "the loss goes through `w.numpy()` and `np.square`.", {
        "not-watched": "`w` is a trainable `tf.Variable`, so the tape does watch it: what does the path leave?",
        "not-connected": "The loss is computed from `w`'s value, so it is connected in your head, "
                         "but through which library?",
    }),
    "D": ("state-change", "the value reaches the loss through `counter.assign_add(...)`.", {
        "not-connected": "`w * 3.0` is computed inside the tape, so `w` is on a path: which call "
                         "changes a variable in place on that path?",
        "replaced-by-tensor": "No name is rebound here: `counter` stays a variable. Which call on the path "
                              "has no gradient?",
    }),
    "E": ("not-trainable", "`w` is created with `trainable=False`.", {
        "not-watched": "`w` is a `tf.Variable`, not a constant: look at how it was created.",
    }),
    "F": ("outside-tape", "`pred` is computed before the `with` block opens.", {
        "not-connected": "`pred` is `w * 3.0`, so the loss depends on `w`, but when was that "
                         "product recorded?",
        "not-watched": "`w` is a trainable `tf.Variable`, watched automatically. Where is `pred` computed?",
        "unrecorded-gradient": "No gradient is differentiated twice here. Where is `pred` computed?",
    }),
    # G to I are graded by the hidden tests only: inputs the visible check never saw
    "G": ("int-dtype", "`w` is created from the integer `3`, so it is an `int32` variable.", {
        "not-watched": "`w` is a trainable `tf.Variable`, so the tape watches it: what is its dtype?",
        "not-trainable": "Nothing here has `trainable=False`. Look at the value `w` was created from.",
    }),
    "H": ("stop-gradient", "the loss is built from `tf.stop_gradient(w)`.", {
        "not-connected": "The loss is computed from `w` inside the tape. Which call on the path blocks "
                         "gradients on purpose?",
        "non-differentiable": "`tf.stop_gradient` is not an op without a gradient: it blocks the gradient "
                              "by design, and has its own code.",
    }),
    "I": ("replaced-by-tensor", "`w = w + 1.0` rebinds the name `w` to a tensor before the tape opens.", {
        "not-watched": "True, the tensor `w` is not watched, but why is `w` a tensor? Look at the line "
                       "that rebinds it.",
        "outside-tape": "The loss is computed inside the `with` block. What is `w` by then?",
        "not-connected": "The loss uses `w`, but which `w`: the variable or what replaced it?",
    }),
}


class NameTheCause(Exercise):
    number = "5.1"
    answer = "classify"
    visible_cases = ("A", "B", "C", "D", "E", "F")  # the hidden tests grade "G", "H", "I"
    praise = "you read each symptom and named the cause."
    hints = (
        "For each snippet, ask the checklist in order: is the source a trainable float variable, "
        "is the loss computed inside the tape, and is every op on the path differentiable TensorFlow?",
        "`tf.argmax` returns an index; `.numpy()` leaves TensorFlow; `assign_add` changes state.",
    )

    def check_case(self, fn, snippet, facts):
        got = self.call(fn, snippet, shown=repr(snippet)).value
        right, shows, symptoms = _SNIPPETS[snippet]
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
