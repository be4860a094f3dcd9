"""Graded and self-study modes (issue 15, item 11): the answers live in their own distribution, derived
from solutions/, and a locked course's notebooks say so instead of showing them."""
import ast
import datetime as dt
import importlib
import importlib.metadata
import json
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest

import tapelab
import tapelab_answers
from mutation.inprocess import exercises
from tapelab.checker import answers
from tapelab.cli import main
from tapelab.paths import REPO, SOLUTIONS, assignment_names
from tapelab.release import ReleaseError, answers_lock, tag_test_cells, write_course_config
from tapelab.release_answers import ANSWER_DATA, ANSWER_TEXTS, derive_answers, write_answers

NAMES = assignment_names()
EXERCISES = [e for name in NAMES for e in exercises(name)]
IDS = [e.answer_id.removesuffix("_answer") for e in EXERCISES]
DATE = "2027-01-15"


def _number(exercise) -> str:
    """The exercise number ("1.2") of the answer cell `ex1_2_answer`."""
    return exercise.answer_id.removeprefix("ex").removesuffix("_answer").replace("_", ".")


def _checker(exercise) -> tapelab.Exercise:
    """The exercise object the notebook's setup cell binds (`ex1_2`), from its notebook's module."""
    module = importlib.import_module(f"tapelab.exercises.{exercise.notebook.split('_', 1)[1]}")
    return getattr(module, exercise.answer_id.removesuffix("_answer"))


@pytest.fixture(autouse=True)
def no_lock(monkeypatch):
    """Every test starts in self-study, and a lock it sets ends with it."""
    monkeypatch.setattr(answers, "_lock", None)


@pytest.fixture
def not_installed(monkeypatch):
    """The answers distribution made unimportable, as in a graded course's environment."""
    monkeypatch.setitem(sys.modules, "tapelab_answers", None)


# -- the answers distribution is derived from solutions/ --------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_committed_answer_data_is_a_fresh_derivation(name, tmp_path):
    """Is answers/.../data/NN_topic.json byte for byte what the release writes from solutions/ now
    (run `tapelab release NN_topic` if not)?"""
    [fresh] = write_answers({name: derive_answers(name)}, tmp_path)
    assert fresh.read_bytes() == (ANSWER_DATA / f"{name}.json").read_bytes(), \
        f"{name}.json is stale: run `tapelab release {name}` and commit answers/"


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_revealed_solution_is_the_answer_cell(exercise):
    """Is the installed solution of each exercise its answer cell with the solution markers removed
    (as the test harness strips them, independently of the release)?"""
    assert tapelab_answers.answer(_number(exercise)).solution == exercise.reference.strip("\n")


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_every_exercise_has_a_why_and_a_last_hint_in_the_data(exercise):
    """Does every exercise have a reason and a last hint tier in the answers, and the hints before it in
    the package, with the last one not among them?"""
    found = tapelab_answers.answer(_number(exercise))
    assert found.why.strip() and found.last_hint.strip()
    hints = _checker(exercise).hints
    assert hints and all(h.strip() for h in hints) and found.last_hint not in hints


def test_the_data_has_no_exercise_the_notebooks_lack():
    """Is every exercise in the answers and in solutions/answers.toml one of the notebooks' exercises?"""
    numbers = {_number(e) for e in EXERCISES}
    data = {n for name in NAMES for n in json.loads((ANSWER_DATA / f"{name}.json").read_text())["exercises"]}
    texts = set(tomllib.loads((SOLUTIONS / ANSWER_TEXTS).read_text()))
    assert data == numbers and texts == numbers


def test_an_exercise_without_its_texts_is_refused(tmp_path):
    """Does deriving a notebook whose exercise has no `last_hint` in answers.toml fail naming the exercise
    and where to add it (the release derives every notebook before it writes anything)?"""
    name = NAMES[0]
    (tmp_path / f"{name}.ipynb").write_bytes((SOLUTIONS / f"{name}.ipynb").read_bytes())
    (tmp_path / ANSWER_TEXTS).write_text('["1.1"]\nwhy = "a reason"\n')
    with pytest.raises(ValueError, match=r'no last_hint for Exercise 1\.1: add them under \["1\.1"\]'):
        derive_answers(name, tmp_path)


# -- what a student sees ----------------------------------------------------------------------------


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_self_study_shows_the_solution_and_the_last_hint(exercise, capsys):
    """With the answers installed and no lock, do `solution()` and the last `hint` show the answers?"""
    checker, found = _checker(exercise), tapelab_answers.answer(_number(exercise))
    checker.solution()
    checker.hint(len(checker.hints) + 1)
    out = capsys.readouterr().out
    why, last_hint = checker.variant.fill(found.why), checker.variant.fill(found.last_hint)  # the notebook's numbers
    assert found.solution in out and why in out and last_hint in out
    assert f"{len(checker.hints) + 1}/{len(checker.hints) + 1}: {last_hint}" in out


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_without_the_answers_solution_and_last_hint_say_locked(exercise, not_installed, capsys):
    """With the answers distribution unimportable, do `solution()` and the last `hint` say the answers are
    locked for this course (no exception), and show no line of the solution?"""
    checker = _checker(exercise)
    checker.solution()
    checker.hint(99)
    out = capsys.readouterr().out
    number = _number(exercise)
    assert f"The solution of Exercise {number} is locked for this course" in out
    assert f"The last hint of Exercise {number} is locked for this course" in out
    body = [line.strip() for line in exercise.reference.splitlines()[1:] if len(line.strip()) > 12]
    assert body and not [line for line in body if line in out]


def test_a_lock_until_a_date_names_the_date_and_opens_on_that_day():
    """Does `lock_answers(until=...)` withhold the answers before that date, naming it, and show them from it?"""
    answers.lock_answers(until=DATE)
    before = answers.lookup("1.2", today=dt.date(2027, 1, 14))
    assert before == answers.Withheld(f"is locked until {DATE} by your instructor")
    assert answers.lookup("1.2", today=dt.date(2027, 1, 15)) == tapelab_answers.answer("1.2")


def test_a_lock_for_good_withholds_installed_answers(capsys):
    """Does `lock_answers()` keep `solution()` closed even where the answers are installed?"""
    ex = _checker(EXERCISES[1])
    answers.lock_answers()
    ex.solution()
    assert capsys.readouterr().out.strip() == f"Solution: The solution of Exercise {ex.number} is locked for this " \
                                              "course by your instructor."


def test_after_the_date_missing_answers_are_not_installed_yet(not_installed):
    """After the lock's date, without the answers installed, is the student told they are not installed yet
    (not that they are still locked)?"""
    answers.lock_answers(until=DATE)
    found = answers.lookup("1.2", today=dt.date(2027, 2, 1))
    assert found.reason.startswith(f"was locked until {DATE} and is not installed here yet")


def test_open_hints_stay_open_under_a_lock(capsys):
    """Under a lock, are the hints before the last still shown, each pointing to the next tier?"""
    ex = _checker(EXERCISES[0])
    answers.lock_answers(until=DATE)
    ex.hint(1)
    out = capsys.readouterr().out
    assert f"1/{len(ex.hints) + 1}: {ex.hints[0]} (ask `hint(2)` for more)" in out


@pytest.mark.parametrize("until", ["2027-13-01", "15.01.2027", ""])
def test_a_lock_with_a_bad_date_is_refused(until):
    """Is a date that is not YYYY-MM-DD refused with the form to use?"""
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        answers.lock_answers(until=until)


# -- nothing of the answers is in the tapelab package ------------------------------------------------


def _package_texts() -> dict[str, list[str]]:
    """Each file of the tapelab package and of its installed distribution -> its text and, for Python,
    every string constant (so that a text split over adjacent literals is found whole)."""
    root = Path(tapelab.__file__).parent
    paths = {p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    paths |= {Path(f.locate()) for f in importlib.metadata.files("tapelab") or () if Path(f.locate()).is_file()}
    found = {}
    for path in sorted(paths):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found[str(path)] = [text]
        if path.suffix == ".py":
            found[str(path)] += [n.value for n in ast.walk(ast.parse(text))
                                 if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return found


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _windows(lines: list[str], size: int) -> set[tuple[str, ...]]:
    return {tuple(lines[i:i + size]) for i in range(len(lines) - size + 1)}


def _leaks(answer, texts: dict[str, list[str]]) -> list[str]:
    """Where the package holds the answer: four solution lines in a row (or the whole of a shorter one),
    its reason, or its last hint. Single lines are no evidence: open hints and feedback quote one line of
    a solution on purpose, and tape idioms such as `with tf.GradientTape() as tape:` are everywhere."""
    solution = _lines(answer.solution)
    size = min(4, len(solution))
    wanted = _windows(solution, size)
    found = []
    for path, parts in texts.items():
        for part in parts:
            if wanted & _windows(_lines(part), size):
                found.append(f"{path}: solution lines")
            found += [f"{path}: {key}" for key in ("why", "last_hint") if getattr(answer, key) in part]
    return found


PACKAGE = _package_texts()


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_no_answer_is_in_the_tapelab_package(exercise):
    """Does no file of the installed tapelab package (sources, templates, metadata) hold an exercise's
    solution, its reason or its last hint?"""
    assert not _leaks(tapelab_answers.answer(_number(exercise)), PACKAGE)


def test_the_package_scan_finds_a_planted_answer(tmp_path):
    """Would the scan find an answer planted as a checker attribute, its reason split over two literals?"""
    found = tapelab_answers.answer("6.1")
    half = len(found.why) // 2
    planted = (f'class Planted:\n    solution_code = """\n{found.solution}\n"""\n'
               f"    why = ({found.why[:half]!r}\n           {found.why[half:]!r})\n")
    path = tmp_path / "planted.py"
    path.write_text(planted)
    texts = {str(path): [planted] + [n.value for n in ast.walk(ast.parse(planted)) if isinstance(n, ast.Constant)]}
    assert {leak.split(": ")[1] for leak in _leaks(found, texts)} == {"solution lines", "why"}


# -- the release applies the course setting ---------------------------------------------------------


def _setup(path: Path) -> str:
    return next(c.source for c in nbformat.read(path, as_version=4).cells if c.get("id") == "setup")


@pytest.mark.parametrize("setting,call", [(None, None), ("self-study", None), (f"locked-until:{DATE}",
                         f'lock_answers(until="{DATE}")'), ("locked", "lock_answers()")])
def test_the_release_writes_the_lock_of_each_setting(tmp_path, setting, call):
    """Does each answers setting, written into the course's config, give the course's source notebook the
    matching lock in its setup cell (and self-study, or no setting, the setup cell as written)?"""
    write_course_config(tmp_path, answers=setting)
    name = NAMES[0]
    tag_test_cells(SOLUTIONS / f"{name}.ipynb", tmp_path / "source.ipynb", answers_lock(tmp_path))
    written, original = _setup(tmp_path / "source.ipynb"), _setup(SOLUTIONS / f"{name}.ipynb")
    if call is None:
        assert written == original
    else:
        lines = written.splitlines()
        assert lines[-1].startswith(f"{call}  #") and lines.count("from tapelab.checker.answers import lock_answers") == 1
        assert lines.index("from tapelab.checker.answers import lock_answers") < lines.index(
            next(line for line in lines if line.startswith("from tapelab.exercises")))


def test_a_locked_release_needs_a_setup_cell(tmp_path):
    """Is a locked release of a notebook without a setup cell (id `setup`) refused, naming the notebook?"""
    nb = nbformat.read(SOLUTIONS / f"{NAMES[0]}.ipynb", as_version=4)
    nb.cells = [c for c in nb.cells if c.get("id") != "setup"]
    nbformat.write(nb, tmp_path / "nosetup.ipynb")
    with pytest.raises(ReleaseError, match="nosetup.ipynb: no setup cell"):
        tag_test_cells(tmp_path / "nosetup.ipynb", tmp_path / "source.ipynb", answers.Lock())
    assert not (tmp_path / "source.ipynb").exists()


def test_a_locked_release_runs_and_locks_the_kernel(tmp_path, capsys):
    """Does the setup cell of a `locked-until` release run, and make `exN_M.solution()` name the date?"""
    write_course_config(tmp_path, answers=f"locked-until:{DATE}")
    name = NAMES[0]
    tag_test_cells(SOLUTIONS / f"{name}.ipynb", tmp_path / "source.ipynb", answers_lock(tmp_path))
    namespace = {}
    exec(_setup(tmp_path / "source.ipynb"), namespace)
    capsys.readouterr()
    namespace["ex1_2"].solution()
    today_locked = dt.date.today() < dt.date.fromisoformat(DATE)
    expected = f"locked until {DATE} by your instructor" if today_locked else "def loss_gradients"
    assert expected in capsys.readouterr().out


@pytest.mark.parametrize("setting", ["graded", "locked-until:tomorrow", "locked-until:2027-02-30", "Locked"])
def test_a_bad_setting_is_refused_before_anything_is_written(tmp_path, setting):
    """Is a setting that is none of the three forms refused, naming them, with no course config written?"""
    with pytest.raises(ReleaseError, match='"self-study", "locked-until:YYYY-MM-DD" or "locked"|YYYY-MM-DD'):
        write_course_config(tmp_path / "course", answers=setting)
    assert not (tmp_path / "course").exists()


def test_a_bad_setting_in_the_course_config_names_the_config(tmp_path):
    """Is a bad `c.TapelabCourse.answers` in a course's nbgrader_config.py reported with where it is set?"""
    write_course_config(tmp_path)
    with (tmp_path / "nbgrader_config.py").open("a") as config:
        config.write('\nc.TapelabCourse.answers = "sometimes"\n')
    with pytest.raises(ReleaseError, match=r"c\.TapelabCourse\.answers in .*nbgrader_config\.py: .*'sometimes'"):
        answers_lock(tmp_path)


def test_the_release_command_applies_the_setting_and_writes_the_answers(tmp_path, monkeypatch, capsys):
    """Does `tapelab release NAME --answers locked-until:...` give the student notebook the lock and write
    that notebook's answers data (nbgrader's generation replaced by a copy, to keep the test cheap)?"""
    def generate(args, course):
        name = args[1]
        (course / "release" / name).mkdir(parents=True)
        (course / "release" / name / f"{name}.ipynb").write_bytes((course / "source" / name / f"{name}.ipynb").read_bytes())

    monkeypatch.setattr("tapelab.release._run_nbgrader", generate)
    monkeypatch.setattr("tapelab.release_answers.ANSWER_DATA", tmp_path / "data")
    name = NAMES[0]
    assert main(["release", name, "--out", str(tmp_path / "out"), "--answers", f"locked-until:{DATE}"]) == 0
    assert _setup(tmp_path / "out" / f"{name}.ipynb").splitlines()[-1].startswith(f'lock_answers(until="{DATE}")')
    data = json.loads((tmp_path / "data" / f"{name}.json").read_text())
    assert data["exercises"] == derive_answers(name)
    assert capsys.readouterr().out.splitlines() == [f"released {tmp_path / 'out' / f'{name}.ipynb'}",
                                                    f"released {tmp_path / 'data' / f'{name}.json'}"]


def test_the_release_command_refuses_a_bad_setting_with_status_2(tmp_path, capsys):
    """Does `tapelab release --answers BAD` exit 2 with one line naming the forms, writing no notebook?"""
    assert main(["release", NAMES[0], "--out", str(tmp_path / "out"), "--answers", "closed"]) == 2
    assert "tapelab release: the answers setting 'closed' is none of" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_self_study_installs_include_the_answers():
    """Do the self-study installs, the venv of `make lab`/`make test` and Binder's postBuild, install the
    answers distribution beside tapelab?"""
    makefile = (REPO / "Makefile").read_text()
    recipe = makefile.split("$(VENV)/.installed:", 1)[1].split("\n\n", 1)[0]
    assert "answers/pyproject.toml" in recipe.splitlines()[0] and "--no-deps -e . -e ./answers" in recipe
    assert "pip install --no-deps --no-cache-dir . ./answers" in (REPO / "binder" / "postBuild").read_text()
