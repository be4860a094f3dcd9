"""Explorers that ask first (tapelab.widgets.ask): closed until the section's question is answered in them."""
from __future__ import annotations

import pytest

from tapelab.checker.predictions import Misconception, Question
from tapelab.widgets import TangentExplorer
from tapelab.widgets.ask import parse_answer
from tapelab.widgets.comparison import ComparisonExplorer, ComparisonModel
from tapelab.widgets.higher_order import HigherOrderExplorer, TapeMemoryView
from tapelab.widgets.none_map import NoneMap
from tapelab.widgets.saliency import SaliencyExplorer
from tapelab.widgets.training import TrainingExplorer

FLAT = Misconception("not-reduced", lambda guess, truth: guess == -truth, "Only x > 0 was asked for.")


def answer(explorer, text):
    explorer.asking.answer.value = text
    explorer.asking.check.click()


@pytest.fixture
def asking():
    """A tangent explorer that asks question 1.8 (answer 1.0) before it shows anything."""
    return TangentExplorer(x=1.0, ask=Question("1.8", misconceptions=[FLAT]), truth=1.0)


def test_without_a_question_the_explorer_is_its_own_view():
    explorer = TangentExplorer(x=1.0)
    assert explorer.asking is None and explorer.readout in explorer.widget.children


def test_the_view_is_hidden_until_an_answer_is_checked(asking):
    view = asking.widget.children[1]
    assert asking.readout in view.children
    assert not asking.asking.open and view.layout.display == "none"


def test_a_right_answer_is_correct_and_opens_the_view(asking, shown):
    answer(asking, "1")
    assert [m.kind for m in shown] == ["correct"] and asking.asking.open
    form = asking.asking
    assert form.form.layout.display == "none" and form.answer.disabled and form.check.disabled  # answered: it goes


def test_a_wrong_answer_gets_the_question_s_own_verdict_and_opens(asking, shown):
    answer(asking, "-1")
    assert (shown[-1].kind, shown[-1].cause) == ("incorrect", "not-reduced") and asking.asking.open


def test_text_that_is_no_answer_records_nothing_and_stays_closed(asking, shown):
    answer(asking, "one")
    assert shown[-1].kind == "not-attempted" and "not recorded" in shown[-1].text
    assert not asking.asking.open and not asking.asking.question.predicted
    answer(asking, "1.0")  # the student can still answer
    assert shown[-1].kind == "correct" and asking.asking.open


def test_a_question_predicted_in_its_cell_opens_the_explorer_at_once(shown):
    question = Question("1.8")
    question.predict(1.0)
    explorer = TangentExplorer(x=1.0, ask=question, truth=1.0)
    assert explorer.asking.open and explorer.asking.form.layout.display == "none" and explorer.asking.check.disabled


def test_a_choice_question_offers_its_choices_and_ignores_an_empty_check(shown):
    question = Question("5.11", kind="choice", choices=["none", "w1, b1"])
    explorer = NoneMap(ask=question, truth="w1, b1")
    assert [value for _, value in explorer.asking.answer.options] == [None, "none", "w1, b1"]
    explorer.asking.check.click()  # nothing chosen
    assert shown == [] and not explorer.asking.open
    explorer.asking.answer.value = "none"
    explorer.asking.check.click()
    assert shown[-1].kind == "incorrect" and explorer.asking.open


@pytest.mark.parametrize("text, value", [("1.5", 1.5), ("None", None), ("[1, None]", [1, None]),
                                         ("(3, 2)", (3, 2)), ("'w1'", "w1"), ("w1, b1", "w1, b1"),
                                         ("__import__('os')", "__import__('os')")])
def test_answers_are_read_as_literals_and_nothing_is_evaluated(text, value):
    assert parse_answer(text) == value


@pytest.mark.parametrize("build", [
    lambda q: TangentExplorer(ask=q, truth=1.0),
    lambda q: HigherOrderExplorer(ask=q, truth=1.0),
    lambda q: TapeMemoryView(ask=q, truth=1.0),
    lambda q: SaliencyExplorer(ask=q, truth=1.0),
    lambda q: TrainingExplorer(ask=q, truth=1.0),
    lambda q: ComparisonExplorer(model=ComparisonModel(epochs=2), ask=q, truth=1.0),
    lambda q: NoneMap(ask=q, truth=1.0),
], ids=["tangent", "higher-order", "tape-memory", "saliency", "training", "comparison", "none-map"])
def test_every_explorer_can_ask_first(build, shown):
    explorer = build(Question("9.9"))
    assert not explorer.asking.open
    answer(explorer, "1")
    assert shown[-1].kind == "correct" and explorer.asking.open
