"""01_basic_tape specifics beyond the generic checker tests (test_checkers.py)."""
import pytest
import tensorflow as tf

from answers import define
from tapelab.exercises import basic_tape
from tapelab.checker.messages import Incorrect, NotAttempted


def _answer(code, label):
    namespace = define(code, label, {"tf": tf})
    return next(v for k, v in namespace.items() if callable(v) and not k.startswith("__") and k != "tf")


def test_undefined_answer_is_not_attempted():
    """Is a never-defined answer name reported as not attempted, naming the function to write?"""
    with pytest.raises(NotAttempted, match="`cubic_slope` is not defined yet"):
        basic_tape.ex1_1.check()


def test_analytic_answer_without_tape_is_rejected():
    """Is a hand-derived formula refused, since the exercise is about the tape?"""
    answer = _answer("def cubic_slope(x):\n    return 9 * x**2 - 4 * x + 1\n", "by-hand")
    with pytest.raises(Incorrect, match="about the tape"):
        basic_tape.ex1_1.check(answer)


def test_hints_are_tiered_and_solution_explains(capsys):
    """Do hints come in increasing tiers, and does the solution come with a reason?"""
    basic_tape.ex1_2.hint()
    basic_tape.ex1_2.hint(3)
    basic_tape.ex1_2.solution()
    out = capsys.readouterr().out
    assert "Hint: 1/3" in out and "Hint: 3/3" in out
    assert "Solution:" in out and "tape.gradient(loss, [w, b])" in out


def test_an_object_equal_to_everything_is_not_accepted():
    """Is a returned object whose `__eq__` is always true rejected as not a number, without a checker crash?"""
    code = (
        "class Anything:\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "\n"
        "def cubic_slope(x):\n"
        "    return Anything()\n"
    )
    namespace = define(code, "eq-exploit", {"tf": tf})
    with pytest.raises(Incorrect, match="not a number|should be a number"):
        basic_tape.ex1_1.check(namespace["cubic_slope"])
    for exercise, answer in ((basic_tape.ex1_2, "loss_gradients"), (basic_tape.ex1_3, "norm_gradients")):
        namespace = define(code.replace("cubic_slope(x)", f"{answer}(*args)"), f"eq-{answer}", {"tf": tf})
        with pytest.raises(Incorrect):
            exercise.check(namespace[answer])


def _seed_of(exercise, **values) -> int:
    return next(s for s in range(1, 5000) if all(exercise.space.variant(s)[k] == v for k, v in values.items()))


@pytest.mark.parametrize("p", [3, 4])
def test_a_norm_of_another_order_is_checked_and_its_forgotten_ord_named(p):
    """In a variant whose norm has order p != 2, does the answer with `ord=p` pass, is the Euclidean length's gradient
    (`ord` left out) named as the gradient of another quantity, the task's order quoted, and does the task say
    `ord=p`?"""
    seed = _seed_of(basic_tape.ex1_3, p=p)
    axis = basic_tape.ex1_3.space.variant(seed)["axis"]
    code = ("def norm_gradients(X):\n    with tf.GradientTape() as tape:\n        tape.watch(X)\n"
            "        lengths = tf.norm(X, {}axis={})\n    return tape.gradient(lengths, X)\n")
    assert f"tf.norm(X, ord={p}, axis={axis})" in basic_tape.ex1_3.space.variant(seed).fill(basic_tape.ex1_3.statement)
    basic_tape.ex1_3.check(_answer(code.format(f"ord={p}, ", axis), "ord-p"), seed=seed)
    with pytest.raises(Incorrect, match=rf"Euclidean length.*`ord={p}`") as raised:
        basic_tape.ex1_3.check(_answer(code.format("", axis), "ord-left-out"), seed=seed)
    assert raised.value.cause == "wrong-target"
