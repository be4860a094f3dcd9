"""docs/authoring.md as an instructor follows it: its checker, its answers.toml table and its mistake catalogue,
run as written, make an exercise that passes its reference on every variant drawn, names its mistake on each,
reports the stub as not attempted, and refuses the variants its rule excludes."""
import re
import tomllib
from string import Template

import pytest

from answers import define
from tapelab.checker.messages import Incorrect, NotAttempted
from tapelab.paths import REPO

PAGE = (REPO / "docs" / "authoring.md").read_text()
CHECKER, MISTAKES, QUESTION = re.findall(r"```python\n(.*?)```", PAGE, re.DOTALL)
(TABLE,) = re.findall(r"```toml\n(.*?)```", PAGE, re.DOTALL)
SEEDS = [None, *range(1, 9)]


@pytest.fixture(scope="module")
def exercise():
    namespace: dict = {}
    exec(compile(CHECKER, "<authoring.md checker>", "exec"), namespace)
    return namespace["ex9_1"]


def _answer(code: str, exercise, seed):
    filled = exercise.space.variant(seed).fill(code)
    namespace = define(filled, f"authoring {seed} {abs(hash(code))}", {"tf": __import__("tensorflow")})
    return namespace["pull"]


@pytest.mark.parametrize("seed", SEEDS)
def test_reference_passes_and_mistake_is_named_on_each_variant(exercise, seed, capsys):
    template = tomllib.loads(TABLE)["9.1"]["solution"]
    exercise._variant = exercise.space.variant(seed)
    try:
        exercise.check(_answer(template, exercise, seed))
        assert "Correct" in capsys.readouterr().out
        mistake = namespace_mistakes()["ex9_1_answer"][0]
        with pytest.raises(Incorrect) as failure:
            exercise.check(_answer(mistake.code, exercise, seed))
        assert mistake.says in str(failure.value) and failure.value.cause == "returned-value"
        with pytest.raises(NotAttempted):
            exercise.check(_answer("def pull(w):\n    raise NotImplementedError()\n", exercise, seed))
        if seed is not None:  # another variant's answer is not this one's
            with pytest.raises(Incorrect):
                exercise.check(_answer(template, exercise, None))
    finally:
        exercise._variant = None


def test_the_rule_excludes_what_it_says(exercise):
    """No target where the mistake would pass, no variant whose visible answer is the text's; others drawn."""
    drawn = [exercise.space.variant(seed) for seed in range(200)]
    assert all(v["t"] != 0.5 and v["c"] * (0.5 - v["t"]) != -5 for v in drawn)
    assert len({(v["c"], v["t"]) for v in drawn}) > 20


def test_default_texts_read_as_the_notebook_would(exercise):
    default = exercise.space.variant(None)
    assert "2·(w − 3)²" in default.fill(exercise.statement)
    assert "loss = 2 * (w - 3) ** 2" in Template(tomllib.loads(TABLE)["9.1"]["solution"]).substitute(default.values)


def namespace_mistakes() -> dict:
    namespace: dict = {}
    exec(compile(MISTAKES, "<authoring.md mistakes>", "exec"), namespace)
    return namespace["MISTAKES"]


def test_the_question_as_written_names_its_belief_and_only_on_the_prediction_it_explains(monkeypatch):
    from tapelab.checker import predictions

    shown = []
    monkeypatch.setattr(predictions, "show", shown.append)
    namespace = {"Question": predictions.Question, "Misconception": predictions.Misconception}
    exec(compile(QUESTION, "<authoring.md question>", "exec"), namespace)
    for guess, cause in (([1.0, 4.0, None], "not-connected"), ([None, 3.0, None], None)):
        question = predictions.Question("9.2", misconceptions=namespace["q9_2"].misconceptions)
        question.predict(guess)
        question.reveal([None, 4.0, None])
        assert (shown[-1].kind, shown[-1].cause) == ("incorrect", cause)


@pytest.mark.parametrize("seed", [None, 3])
def test_the_checker_as_written_is_judged_the_same_outside_the_kernel(exercise, seed, monkeypatch):
    """Recorded in a kernel and judged from the record by a fresh checker: the same outcome for the reference,
    the mistake and the stub (tapelab.checker.replay)."""
    from tapelab.checker import replay

    answers = [tomllib.loads(TABLE)["9.1"]["solution"], namespace_mistakes()["ex9_1_answer"][0].code,
               "def pull(w):\n    raise NotImplementedError()\n"]
    assert type(exercise).replayable
    for code in answers:
        replay.taken()
        monkeypatch.setenv(replay.ENV, "1")
        try:
            live = repr(exercise.outcome(_answer(code, exercise, seed), seed=seed))
        except (Incorrect, NotAttempted) as failure:
            live = repr(failure.box())
        monkeypatch.delenv(replay.ENV)
        (record,) = replay.taken()
        judged = replay.judge(type(exercise)(), {"seed": seed}, record)
        assert repr(judged.box() if isinstance(judged, (Incorrect, NotAttempted)) else judged) == live
