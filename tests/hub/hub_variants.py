"""Per-student variants on the course hub (issue 50), in the walk of test_hub.py: two students fetch the same
notebook, see different numbers in the same exercise, and are each graded against their own.

tl-student1, in the browser, answers Exercise 1.1 right for its own variant and 1.2 with a catalogued mistake
written for its own variant, and reads its numbers on its feedback page. tl-student4, without a browser (its
part adds seconds, not a server start), fetches the notebook, runs its setup cell as a kernel of its server
would (with the JUPYTERHUB_USER the hub gives every server, checked on tl-student1's), answers every exercise
right for its own variant except one, `foreign`, which it answers with tl-student1's right answer (an exercise
whose numbers differ between the two), and submits. Every expected number comes from the course's key through
tapelab's variant machinery (variants_salt, seed_for, Space.variant), never from this file.
"""
from __future__ import annotations

import pwd
import re
from pathlib import Path

import nbformat

from answers import exercise_named, mistakes, reference_answers, own_answers
from grading.grade_fixtures import cell_grades, outputs_text
from hubkit import GRADING, NOTEBOOK, PYTHON, STUDENT_ENV, as_user, nbgrader, server_pid, write_answers
from tapelab.checker.variants import seed_for

S4 = "tl-student4"  # the second student of the variants walk; tl-student2 and 3 are the attacks' (hub_attacks.py)
COURSE = GRADING / "course"  # root's grading course: its key, its gradebook
# The setup cell of the fetched notebook, run as the student's kernel runs it: what the student sees first.
RUN_SETUP = ("import sys, nbformat\n"
             "nb = nbformat.read(sys.argv[1], as_version=4)\n"
             "exec(next(c.source for c in nb.cells if c.get('id') == 'setup'))\n")


def course_salt() -> str:
    """The salt of the hub course's variants, from its key: `make hub` gives each student their own numbers."""
    from tapelab.release import variants_salt

    salt = variants_salt(COURSE)
    assert salt, f"the hub's course {COURSE} does not give each student their own numbers"
    return salt


def varying() -> list:
    """The checkers of the walk's notebook whose numbers vary, in the notebook's order."""
    checkers = [exercise_named(grade_id.removesuffix("_answer")) for grade_id in reference_answers(NOTEBOOK)]
    return [checker for checker in checkers if checker.space.varies]


def task(salt: str, student: str, checker) -> str:
    """The exercise's task as `student` reads it (their variant's numbers), in the words a page shows."""
    return flat(checker.space.variant(seed_for(salt, student, checker.number)).fill(checker.statement))


def flat(text: str) -> str:
    """`text` as read on a page or in a kernel's output: inline code marks dropped, white space collapsed."""
    return re.sub(r"\s+", " ", text.replace("`", "")).strip()


def first_student(salt: str, student: str) -> tuple[dict[str, str], object]:
    """Student 1's answers (1.1 right for its variant, 1.2 the first catalogued mistake written for its variant)
    and that mistake."""
    mistake = mistakes(NOTEBOOK, seed_for(salt, student, exercise_named("ex1_2").number))["ex1_2_answer"][0]
    return {"ex1_1_answer": own_answers(NOTEBOOK, salt, student)["ex1_1_answer"],
            "ex1_2_answer": mistake.code}, mistake


def hub_names_the_student(student: str) -> None:
    """The hub gives the student's server (so every kernel it starts) the student's name in JUPYTERHUB_USER."""
    environ = Path(f"/proc/{server_pid(student)}/environ").read_bytes().split(b"\0")
    assert f"JUPYTERHUB_USER={student}".encode() in environ, "the hub does not name the student to its server"


def second_student_hands_in(salt: str, first: str) -> dict:
    """tl-student4 fetches, sees its numbers, answers (one exercise with `first`'s right answer) and submits."""
    differing = [c for c in varying() if task(salt, first, c) != task(salt, S4, c)]
    assert differing, "the two students drew the same numbers in every exercise (one hub in thousands): run again"
    foreign = differing[0]
    notebook = Path(pwd.getpwnam(S4).pw_dir) / NOTEBOOK / f"{NOTEBOOK}.ipynb"
    nbgrader(S4, "fetch_assignment", NOTEBOOK)
    seen = as_user(S4, PYTHON, "-c", RUN_SETUP, str(notebook), cwd=notebook.parent,
                   env={**STUDENT_ENV, "JUPYTERHUB_USER": S4, "TF_CPP_MIN_LOG_LEVEL": "2",
                        "TF_ENABLE_ONEDNN_OPTS": "0"})
    assert seen.returncode == 0, seen.stderr[-2000:]
    grade_id = f"ex{foreign.number.replace('.', '_')}_answer"
    answers = {**own_answers(NOTEBOOK, salt, S4), grade_id: own_answers(NOTEBOOK, salt, first)[grade_id]}
    write_answers(S4, notebook, answers)
    nbgrader(S4, "submit", NOTEBOOK)
    return {"foreign": foreign, "seen": flat(seen.stdout)}


def assert_each_sees_their_own(salt: str, first: str, page_text: str, handed_in: dict) -> None:
    """The first student's page and the second student's kernel each show their own task of the exercise whose
    numbers differ, and not the other's."""
    foreign, own_page = handed_in["foreign"], flat(page_text)
    assert f"Your own numbers, {first}" in own_page, own_page[:3000]
    assert task(salt, first, foreign) in own_page and task(salt, S4, foreign) not in own_page, own_page[:3000]
    seen = handed_in["seen"]
    assert f"Your own numbers, {S4}" in seen, seen
    assert task(salt, S4, foreign) in seen and task(salt, first, foreign) not in seen, seen


def assert_graded_against_their_own(salt: str, first: str, handed_in: dict) -> None:
    """After `make hub-grade`: the first student's own right answer earns full points and its mistake does not;
    the second student's own right answers earn full points, hidden cases (pinned to its seed) included, and
    the first student's right answer does not, in the gradebook and in the feedback it gets."""
    foreign = handed_in["foreign"]
    mine = cell_grades(COURSE, first, NOTEBOOK)
    assert mine["ex1_1_test"][0] == mine["ex1_1_test"][1] > 0, mine
    assert mine["ex1_2_test"][0] < mine["ex1_2_test"][1], mine
    theirs = cell_grades(COURSE, S4, NOTEBOOK)
    for grade_id in reference_answers(NOTEBOOK):
        score, most = theirs[grade_id.replace("_answer", "_test")]
        if grade_id == f"ex{foreign.number.replace('.', '_')}_answer":  # right for the first student only
            assert score < most, (grade_id, theirs)
        else:
            assert score == most > 0, (grade_id, theirs)
    graded = nbformat.read(COURSE / "autograded" / S4 / NOTEBOOK / f"{NOTEBOOK}.ipynb", as_version=4)
    tests = "\n".join(cell.source for cell in graded.cells
                      if cell.metadata.get("nbgrader", {}).get("grade_id", "").endswith("_test"))
    for checker in varying():  # every check of a varying exercise, the hidden one too, tests tl-student4's variant
        name, seed = f"ex{checker.number.replace('.', '_')}", seed_for(salt, S4, checker.number)
        calls = re.findall(rf"^{name}\.check\(.*$", tests, re.MULTILINE)
        assert len(calls) == 2 and all(f"seed={seed})" in call for call in calls), (name, calls)
    shown = flat(outputs_text(COURSE, S4, NOTEBOOK))
    assert f"Your own numbers, {S4}" in shown and task(salt, S4, foreign) in shown, shown[:3000]
