"""Grading the grader: every checker proven against mutants of its reference answer.

A bounded, deterministic sample runs here: TAPELAB_MUTANTS_PER_EXERCISE mutants per exercise
(default 8), graded in-process through the exercise's whole test cell. tests/grading/test_round_trip.py checks
nbgrader's grades against these verdicts; `tools/mutants.py` runs every mutant and prints the table.
"""
import ast
import os

import pytest

from mutation.harness import discover, judge, load_equivalents, mutants_of, notebooks, sample, stale_equivalents
from mutation.inprocess import grade
from mutation.mutants import TAPE_KINDS, generate

PER_EXERCISE = int(os.environ.get("TAPELAB_MUTANTS_PER_EXERCISE", "8"))
EQUIVALENTS = load_equivalents()
SPECS, ERRORS = discover()
EXERCISES = [spec for nb in SPECS for spec in SPECS[nb]]
SAMPLE = [(spec, m) for spec in EXERCISES for m in sample(mutants_of(spec), PER_EXERCISE)]


def _id(spec):
    return f"{spec.notebook}-{spec.answer_id}"


@pytest.mark.parametrize("notebook", notebooks())
def test_notebook_can_be_judged(notebook):
    """Has every answer cell its test cell, and does every reference answer yield mutants?"""
    assert notebook not in ERRORS, ERRORS[notebook]
    barren = [spec.answer_id for spec in SPECS[notebook] if not mutants_of(spec)]
    assert not barren, f"no mutant generated for {barren}: add a transform that applies"


@pytest.mark.parametrize("spec", EXERCISES, ids=_id)
def test_reference_passes_as_written_and_as_reprinted(spec):
    """Does the reference pass its whole test cell in-process, also re-printed by `ast.unparse` as mutants are?"""
    for label, code in (("reference", spec.reference), ("unparsed", ast.unparse(ast.parse(spec.reference)))):
        verdict = grade(spec, code, label)
        assert verdict.passed, f"{label}: {verdict}"


@pytest.mark.parametrize("spec,mutant", SAMPLE, ids=[f"{_id(s)}-{m.name}" for s, m in SAMPLE])
def test_sampled_mutant_fails_its_test_cell(spec, mutant):
    """Does the test cell reject this mutant with tapelab feedback (or accept it, if reviewed as equivalent),
    already in its visible part, the student's own `check()`?"""
    result = judge(spec, [mutant], EQUIVALENTS)[0]
    assert result.ok, result.report()
    assert result.verdict.passed or result.verdict.part == "visible", \
        "the student's check says Correct, the hidden tests fail:\n" + result.report()


def test_equivalent_reviews_match_generated_mutants():
    """Does every review in equivalent.toml still name a generated mutant with the diff that was reviewed?"""
    generated = {(s.notebook, s.answer_id): mutants_of(s) for s in EXERCISES}
    stale = stale_equivalents(EQUIVALENTS, generated)
    assert not stale, "\n".join(stale)


def test_stale_reviews_are_reported():
    """Is a review whose mutant is gone, or whose mutant now makes a different change, reported?"""
    from mutation.harness import Equivalent
    spec = EXERCISES[0]
    mutant = mutants_of(spec)[0]
    reviews = {(spec.notebook, spec.answer_id, mutant.name): Equivalent("r", "-old | +new"),
               (spec.notebook, spec.answer_id, "gone@99:0"): Equivalent("r", mutant.diff),
               ("99_removed_notebook", "ex99_1_answer", mutant.name): Equivalent("r", mutant.diff)}
    stale = stale_equivalents(reviews, {(spec.notebook, spec.answer_id): mutants_of(spec)})
    assert len(stale) == 3, stale
    assert sum("review again" in line for line in stale) == 1
    assert sum("no such mutant" in line for line in stale) == 2


def test_mutant_names_are_deterministic_and_unique():
    """Does generating twice give the same mutants, each name unique within its exercise?"""
    for spec in EXERCISES:
        first, second = mutants_of(spec), mutants_of(spec)
        assert first == second
        assert len({m.name for m in first}) == len(first)


_TAPE_CODE = '''\
def step(model, optimizer, x, y, v, c):
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(c)
        pred = model(x, training=True)
        loss = tf.reduce_mean((pred - y) ** 2) * c
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    v.assign_sub(0.1 * tape.gradient(loss, c))
    del tape
    return loss
'''


def test_every_tape_transform_fires_where_it_applies():
    """Does each tape-specific transform produce its mutant on code that has the construct?"""
    mutants = {m.name: m for m in generate(_TAPE_CODE)}
    kinds = {m.kind.split("(")[0] for m in mutants.values()}
    assert set(TAPE_KINDS) <= kinds, set(TAPE_KINDS) - kinds
    assert "tape.watch" not in mutants["drop_watch@3:8"].code
    assert "v = v - 0.1 * tape.gradient(loss, c)" in mutants["rebind_assign@8:4"].code
    assert "zip(model.trainable_variables, grads)" in mutants["swap_apply_gradients@7:30"].code
    assert "tape.gradient(pred, model.trainable_variables)" in mutants["wrong_target(pred)@6:26"].code
    assert "tape.gradient(loss, c)" in mutants["wrong_source(c)@6:32"].code
    moved = mutants["outside_with@4:8"].code.splitlines()
    assert moved.index("    pred = model(x, training=True)") > moved.index("        loss = tf.reduce_mean((pred - y) ** 2) * c")
    assert "persistent" not in mutants["drop_persistent@2:36"].code
    assert "del tape" not in mutants["drop_del_tape@9:8"].code
    assert "model(x)" in mutants["drop_training@4:33"].code
    assert "(pred - y) ** 2) * c).numpy()" in mutants["numpy_in_tape@5:8"].code
    assert "np.asarray(model(x, training=True))" in mutants["asarray_in_tape@4:8"].code
    keras3 = {m.name: m for m in generate("def f(opt, g, v):\n    opt.apply(g, v)\n")}
    assert "opt.apply(v, g)" in keras3["swap_apply_gradients@2:14"].code


def test_only_the_solution_region_is_mutated():
    """Are lines outside the solution region (the given stub, e.g. a default argument) left alone?"""
    code = "def f(x, h=1e-3):\n    return x * h\n"
    assert {m.name.split("@")[1].split(":")[0] for m in generate(code, {2})} == {"2"}


def _toy(visible, hidden="", setup="x = 1"):
    from mutation.inprocess import Exercise
    return Exercise("toy", "ex0_1_answer", "ex0_1_test", "", frozenset(), setup, visible, hidden)


@pytest.mark.parametrize("visible,hidden,outcome,part", [
    ("pass", "", "passed", ""),
    ("from tapelab.checker.messages import Incorrect\nraise Incorrect('`y` is wrong.')", "", "incorrect", "visible"),
    ("pass", "from tapelab.checker.messages import NotAttempted\nraise NotAttempted('stub')", "not_attempted", "hidden"),
    ("{}['key']", "", "raw_exception", "visible"),
    ("import sys\nsys.stderr.write('noise')", "", "stderr", "visible"),
    ("import os\nos.write(2, b'C++ log line')", "", "stderr", "visible"),
    ("import warnings\nwarnings.warn('careful')", "", "stderr", "visible"),
    ("while True:\n    pass", "", "timeout", ""),
])
def test_test_cell_outcomes_are_told_apart(visible, hidden, outcome, part):
    """Does the in-process grader tell feedback, raw exceptions, stderr output and timeouts apart, as nbgrader would score them?"""
    verdict = grade(_toy(visible, hidden), "answer = 2\n", "toy", timeout=1)
    assert (verdict.outcome, verdict.part) == (outcome, part), verdict


def test_answer_cell_error_is_recorded_and_the_test_cell_still_runs():
    """Like nbgrader, does an error in the answer cell leave the grade to the test cell?"""
    verdict = grade(_toy("assert answer == 2"), "answer = 2\n1 / 0\n", "toy")
    assert verdict.passed and verdict.answer_error.startswith("ZeroDivisionError")
