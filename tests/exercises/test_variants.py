"""Exercises in variants (tapelab.checker.variants), on a sample of seeds: each variant's reference passes
its own test cell and fails every other variant's; every catalogued mistake, written for the variant, is
rejected by the student's own check (the first catalogue naming its cause); the default variant's texts
are the notebook's own words.

The sample is bounded for `make test` (TAPELAB_VARIANT_SEEDS seeds, 2 by default); `make variants` sweeps 20.
"""
import os
import re

import nbformat
import pytest

from answers import exercise_named, fresh_mistakes, mistakes, variant_seeds
from mutation.harness import load_equivalents, sample
from mutation.inprocess import exercises, grade
from mutation.mutants import TAPE_KINDS, base_kind, generate
from tapelab.checker.exercise import Exercise
from tapelab.paths import SOLUTIONS, assignment_names
from tapelab_answers import answer

SEEDS = variant_seeds(int(os.environ.get("TAPELAB_VARIANT_SEEDS", "2")))
ALL = {e.test_id.removesuffix("_test"): e for nb in assignment_names() for e in exercises(nb)}
VARIED = sorted(name for name in ALL if exercise_named(name).space.varies)
FIXED = sorted(set(ALL) - set(VARIED))


def _number(name: str) -> str:
    return name.removeprefix("ex").replace("_", ".")


def _reference(name: str, seed: int | None) -> str:
    """The exercise's solution for the variant of `seed`, from the answers distribution's template."""
    return exercise_named(name).space.variant(seed).fill(answer(_number(name)).template)


def test_some_exercises_vary():
    assert VARIED, "no exercise declares a space of variants"


@pytest.mark.parametrize("name", FIXED)
def test_a_fixed_exercise_says_why(name, capsys):
    """An exercise that does not vary says why it cannot, in words a student reads from `new_variant()` and `task()`."""
    checker = exercise_named(name)
    assert len(checker.fixed_because) > 40
    checker.new_variant()
    checker.task()
    shown = " ".join(capsys.readouterr().out.split())
    assert shown.count(" ".join(checker.fixed_because.split())) == 2 and checker._variant is None


@pytest.mark.parametrize("name", VARIED)
def test_default_variant_reads_as_the_notebook(name):
    """Filled with the notebook's own values, the template is the answer cell and the statement is the task cell."""
    checker, exercise = exercise_named(name), ALL[name]
    default = checker.space.variant(None)
    assert default.fill(answer(_number(name)).template) == exercise.reference.strip("\n")
    nb = nbformat.read(SOLUTIONS / f"{exercise.notebook}.ipynb", as_version=4)
    words = " ".join(" ".join(c.source.split()) for c in nb.cells if c.cell_type == "markdown")
    assert " ".join(default.fill(checker.statement).split()) in words


@pytest.mark.parametrize("name", VARIED)
def test_no_seed_draws_the_notebooks_own_values(name):
    """Does every seed give numbers other than the text's? A draw holding the default's values would let the
    notebook's answer pass a student's own variant (5.4 drew q = 0.5 in [-1, 3] on 3 of 20 seeds)."""
    space = exercise_named(name).space
    own = {key: space.default[key] for key in space.draws}
    drawn_as_text = [seed for seed in range(300) if {key: space.variant(seed)[key] for key in space.draws} == own]
    assert not drawn_as_text, f"seeds {drawn_as_text[:5]} draw the notebook's own values"


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", VARIED)
def test_same_seed_same_variant_and_texts_fill(name, seed):
    checker = exercise_named(name)
    first, again = checker.space.variant(seed), checker.space.variant(seed)
    assert first.values == again.values and first != checker.space.variant(None)
    found = answer(_number(name))
    for text in (checker.statement, *checker.hints, found.why, found.last_hint, found.template):
        assert "$" not in first.fill(text)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", VARIED)
def test_reference_passes_its_variant_and_fails_the_notebooks(name, seed):
    """A variant changes what the student computes: its answer passes its own check, visible and hidden,
    and the answer of the notebook's numbers does not."""
    exercise = ALL[name]
    own = grade(exercise, _reference(name, seed), f"reference {seed}", seed=seed)
    assert own.passed, own
    other = grade(exercise, exercise.reference, "notebook reference", seed=seed)
    assert other.outcome == "incorrect" and other.part == "visible", other


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", VARIED)
def test_catalogued_mistakes_fail_on_the_variant(name, seed):
    """Each mistake of the first catalogue, written for the variant, fails the visible check naming its cause;
    each of the second is rejected there (never "Correct" for a wrong answer)."""
    exercise = ALL[name]
    grade_id = f"{name}_answer"
    for mistake in mistakes(exercise.notebook, seed).get(grade_id, []):
        verdict = grade(exercise, mistake.code, mistake.name, seed=seed)
        assert verdict.outcome == "incorrect" and verdict.part == "visible", (mistake.name, verdict)
        assert mistake.says in verdict.message, (mistake.name, verdict.message)
    for mistake in fresh_mistakes(exercise.notebook, seed).get(grade_id, []):
        verdict = grade(exercise, mistake.code, mistake.name, seed=seed)
        assert verdict.outcome in ("incorrect", "raw_exception") and verdict.part == "visible", (mistake.name, verdict)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", VARIED)
def test_sampled_mutants_of_the_variant_are_rejected(name, seed):
    """The mutants of the variant's own answer that break the tape (the kinds `make mutants` asks to be named), a
    bounded sample, fail the student's own check on that variant, as those of the notebook's answer do."""
    exercise = ALL[name]
    reviewed = {n for (nb, gid, n) in load_equivalents() if (nb, gid) == (exercise.notebook, exercise.answer_id)}
    code = _reference(name, seed)
    region = set(range(2, len(code.splitlines()) + 1))  # the body: the `def` line is the stub's
    tape = [m for m in generate(code, region) if base_kind(m.kind) in TAPE_KINDS and m.name not in reviewed]
    for mutant in sample(tape, 4):
        verdict = grade(exercise, mutant.code, mutant.name, seed=seed)
        assert verdict.outcome in ("incorrect", "not_attempted") and verdict.part == "visible", (mutant.diff, verdict)


def test_new_variant_shows_the_task_with_its_numbers(capsys):
    """`new_variant(seed)` shows that variant's task; the hints then speak of it; `text_variant()` goes back."""
    checker = exercise_named(VARIED[0])
    try:
        checker.new_variant(SEEDS[0])
        shown = capsys.readouterr().out
        variant = checker.space.variant(SEEDS[0])
        assert f"(variant {SEEDS[0]})" in shown and variant.fill(checker.statement) in " ".join(shown.split())
        checker.hint(len(checker.hints))
        assert variant.fill(checker.hints[-1]) in capsys.readouterr().out
    finally:
        checker.own_variant()
    assert re.search(r"Exercise \d\.\d: ", capsys.readouterr().out)


@pytest.mark.parametrize("name", assignment_names())
def test_test_cells_pinned_for_a_student_pass_that_students_own_answers(name, tmp_path):
    """The test cells as `tapelab grade` pins them for one student of a per-student course (`seed=`, and computed
    `expected=` values) pass the answers of that student's own variants, visible and hidden: every checker takes
    the keywords the pin writes, and checks the pinned variant's cases."""
    from answers import own_answers
    from tapelab.release_variants import notebook_exercises, pin

    nb = nbformat.read(SOLUTIONS / f"{name}.ipynb", as_version=4)
    pin(nb, "a course secret", "ann", notebook_exercises(nb))
    nbformat.write(nb, tmp_path / f"{name}.ipynb")
    answers = own_answers(name, "a course secret", "ann")
    for exercise in exercises(name, tmp_path):
        if not exercise_named(exercise.answer_id.removesuffix("_answer")).space.varies:
            continue
        verdict = grade(exercise, answers[exercise.answer_id], "ann's own")
        assert verdict.passed, (exercise.answer_id, verdict)


PINNED = sorted(name for name in VARIED if type(exercise_named(name)).expectations is not Exercise.expectations)


def _twins(checker) -> tuple[int, int]:
    """Two seeds whose variants hold the same values (a class draws many such pairs)."""
    seen = {}
    for seed in range(1, 10_000):
        values = repr(sorted(checker.space.variant(seed).values.items()))
        if values in seen:
            return seen[values], seed
        seen[values] = seed
    raise AssertionError(f"no two of 10,000 seeds of Exercise {checker.number} draw the same values")


@pytest.mark.parametrize("name", PINNED)
def test_pinned_expected_values_depend_on_the_variants_values_alone(name, monkeypatch):
    """A grading worker computes a pinned exercise's expected values once per variant values and case
    (tapelab.release_variants._COMPUTED): is that sound, i.e. do two seeds with the same values get the same values
    from the references when nothing is cached, and does the cache hand the second seed its own case keys?"""
    import tapelab.release_variants as release_variants

    checker = exercise_named(name)
    first, second = _twins(checker)
    cases = list(checker.visible_cases)
    monkeypatch.setattr(release_variants, "_COMPUTED", {})
    computed = [release_variants._expected(checker, seed, cases) for seed in (first, second)]
    cached = release_variants._expected(checker, second, cases)
    monkeypatch.setattr(release_variants, "_COMPUTED", {})
    fresh = release_variants._expected(checker, second, cases)
    assert list(computed[0].values()) == list(fresh.values()) and cached == fresh == computed[1]
    assert set(fresh) != set(computed[0])  # each seed's own case keys


def _listed(text: str, before: str) -> set[str]:
    """The exercise numbers the guide lists just before `before` ("2.1, 2.5 and 6.6 from two")."""
    found = re.search(r"((?:\d\.\d(?:, | and )?)+)\s*" + before, text)
    assert found, f"the instructor guide no longer lists the exercises {before!r}"
    return set(re.findall(r"\d\.\d", found[1]))


def test_the_guide_says_which_exercises_vary_little():
    """docs/instructor-guide.md names the exercises that cannot vary and those drawn from two or three variants
    (students of a course share them): the lists are what the exercises' spaces draw, over many seeds."""
    from tapelab.paths import REPO
    guide = " ".join((REPO / "docs" / "instructor-guide.md").read_text().split())
    bullet = guide[guide.index("What cannot vary"):]
    bullet = bullet[:bullet.index("## ")]
    counts = {}
    for name in VARIED:
        space = exercise_named(name).space
        counts[_number(name)] = len({tuple(repr(space.variant(seed)[key]) for key in space.draws)
                                     for seed in range(1500)})
    assert _listed(bullet, "are procedures") == {_number(name) for name in FIXED}
    assert _listed(bullet, "from two") == {n for n, c in counts.items() if c == 2}
    assert _listed(bullet, r"from three") == {n for n, c in counts.items() if c == 3}
    assert min(counts.values()) >= 2
