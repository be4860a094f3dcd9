"""Graded mode without reference code (issue 31): the checks whose references are close to the model answers
read their expected values from data that `tapelab release` computes with the answers distribution's
references (tapelab.checker.expected); a graded install, which lacks that distribution, still checks."""
import ast
import copy
import dataclasses
import inspect
import json
import sys
import textwrap
from pathlib import Path

import nbformat
import numpy as np
import pytest

import tapelab
import tapelab_answers.references
from answers import fresh_mistakes, mistakes
from mutation.inprocess import exercises, grade
from tapelab.checker import expected
from tapelab.checker.expected import MissingExpectation, decode, encode
from tapelab.paths import SOLUTIONS
from tapelab.release import ReleaseError, release, tag_test_cells
from tapelab.release_expected import (EXPECTED, HIDDEN, ROUNDING, derive_expected, hidden_cases, inline_hidden,
                                      same_within_rounding, write_expected)

# The exercises whose expected values come from stored data, by notebook.
NOTEBOOKS = {"02_model_variables": ("ex2_1", "ex2_3", "ex2_4"), "06_fit_vs_custom": ("ex6_4",)}
SOLVED = [(nb, e) for nb, ids in NOTEBOOKS.items() for e in exercises(nb) if e.answer_id[:-len("_answer")] in ids]
SOLVED_IDS = [e.answer_id for _, e in SOLVED]
MISTAKES = [(e, m) for nb, e in SOLVED for m in mistakes(nb).get(e.answer_id, [])]


@pytest.fixture
def graded(monkeypatch):
    """A graded install: the answers distribution, and with it the references, cannot be imported."""
    for name in ("tapelab_answers", "tapelab_answers.references"):
        monkeypatch.setitem(sys.modules, name, None)


# -- one truth: the stored values are the references' --------------------------------------------------


def _stored(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))["exercises"]


def _assert_same(fresh, stored, where: str) -> None:
    """The same exercises, cases, names and shapes, and values the same within `ROUNDING` (what a release on
    another CPU keeps as stored)."""
    if isinstance(fresh, dict) and "shape" not in fresh:
        assert isinstance(stored, dict) and sorted(fresh) == sorted(stored), f"{where}: stale, run `tapelab release`"
        for key in fresh:
            _assert_same(fresh[key], stored[key], f"{where} / {key}")
    else:
        assert same_within_rounding(fresh, stored), f"{where}: {stored} stored, {fresh} now: run `tapelab release`"


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_stored_values_are_what_the_references_compute_now(name):
    """Are the committed visible and hidden values what the references compute today, for exactly the cases of
    the notebook's checks (run `tapelab release NAME` if not)?"""
    visible, hidden = derive_expected(name)
    assert set(visible) == {e.replace("ex", "").replace("_", ".") for e in NOTEBOOKS[name]}
    _assert_same(visible, _stored(EXPECTED / f"{name}.json"), f"src/tapelab/exercises/expected/{name}.json")
    _assert_same(hidden, _stored(SOLUTIONS / HIDDEN / f"{name}.json"), f"solutions/expected/{name}.json")
    cases = hidden_cases(name)
    assert all(len(hidden[n]) == len(set(map(repr, cases[n]))) > 0 for n in hidden), "a hidden case is not stored"


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_the_committed_files_are_as_the_release_writes_them(name, tmp_path):
    """Are the committed files byte for byte what `write_expected` writes from their own values (generated,
    not edited by hand), with one line per stored value?"""
    visible, hidden = _stored(EXPECTED / f"{name}.json"), _stored(SOLUTIONS / HIDDEN / f"{name}.json")
    written = write_expected(name, visible, hidden, tmp_path / "package", tmp_path / "solutions")
    assert [p.read_bytes() for p in written] == [(EXPECTED / f"{name}.json").read_bytes(),
                                                 (SOLUTIONS / HIDDEN / f"{name}.json").read_bytes()]
    lines = (EXPECTED / f"{name}.json").read_text().splitlines()
    assert sum(line.startswith('   "') for line in lines) == sum(map(len, visible.values()))


def test_a_release_on_another_cpu_rewrites_only_values_that_changed(tmp_path):
    """Does `write_expected` keep a stored value that a recomputation matches within `ROUNDING` (a float32 sum
    rounded another way), byte for byte, and write one that changed by more, or changed shape or dtype?"""
    case = {"g": encode(np.float32([-0.004545152, 0.25])), "n": encode(np.float32(3.0))}
    first = write_expected("02_x", {"2.1": {"a": case}}, {"2.1": {"a": case}}, tmp_path, tmp_path)
    before = [p.read_bytes() for p in first]
    rounded = {"g": encode(np.float32([-0.004545033, 0.25])), "n": case["n"]}  # 1.2e-7 apart, as between two CPUs
    assert same_within_rounding(rounded["g"], case["g"])
    assert [p.read_bytes() for p in write_expected("02_x", {"2.1": {"a": rounded}}, {"2.1": {"a": rounded}},
                                                   tmp_path, tmp_path)] == before
    moved = ROUNDING["atol"] * 20 + ROUNDING["rtol"] * 20
    for changed in (encode(np.float32([-0.004545152 + moved, 0.25])), encode(np.float32([-0.004545152])),
                    encode(np.float64([-0.004545152, 0.25]))):
        assert not same_within_rounding(changed, case["g"])
        write_expected("02_x", {"2.1": {"a": {**case, "g": changed}}}, {"2.1": {"a": case}}, tmp_path, tmp_path)
        assert _stored(tmp_path / "02_x.json")["2.1"]["a"] == {**case, "g": changed}
        assert (tmp_path / HIDDEN / "02_x.json").read_bytes() == before[1]


def test_a_value_nested_otherwise_is_not_the_same():
    """Are the same arrays nested another way (one layer's list of two gradients against the two gradients) a
    changed value, which a release rewrites?"""
    pair = [np.float32([[-35.0]]), np.float32([-12.0])]
    assert same_within_rounding(encode([pair]), encode([pair]))
    assert not same_within_rounding(encode([pair]), encode(pair))
    assert not same_within_rounding(encode([[pair[0]], [pair[1]]]), encode([pair]))


def test_without_the_references_the_release_refuses_to_guess(monkeypatch):
    """Does a release without the answers distribution's references stop, saying what to install, rather than
    write stale or empty expected values?"""
    monkeypatch.setattr("tapelab.release_expected.references", lambda: None)
    with pytest.raises(ValueError, match=r"not installed here: `pip install --no-deps -e \./answers`"):
        derive_expected("02_model_variables")
    with pytest.raises(ReleaseError, match="02_model_variables: its expected values"):
        release(["02_model_variables"], out=Path("/nonexistent/out"), expected_data=Path("/nonexistent/data"))
    assert not Path("/nonexistent").exists()


def test_a_notebook_without_an_exercises_module_has_nothing_to_compute(tmp_path):
    """Does the release compute nothing (rather than fail) for a course notebook whose exercises module the
    package lacks, such as an instructor's own new notebook?"""
    assert derive_expected("09_own_notebook", tmp_path) == ({}, {})
    assert write_expected("09_own_notebook", {}, {}, tmp_path, tmp_path) == []


@pytest.mark.parametrize("value", [np.float32([[0.1, -2.5e-9], [3.0, 7.0]]), np.float32(41.0), np.zeros((0, 3), "f4"),
                                   np.float64([1 / 3]), [0.1 + 0.2, [np.float32([np.nan, np.inf])]], 3, True])
def test_a_stored_value_reads_back_exactly(value):
    """Does every value a reference gives (float32 arrays, scalars, empty arrays, float64, nested lists, NaN)
    read back from JSON with its dtype, shape and every bit of its numbers?"""
    back = decode(json.loads(json.dumps(encode(value))))
    flat = (lambda v: [v] if not isinstance(v, list) else [w for u in v for w in flat(u)])
    for a, b in zip(flat(value), flat(back), strict=True):
        assert np.asarray(a).dtype == np.asarray(b).dtype and np.array_equal(a, b, equal_nan=True)


def test_a_value_that_is_no_number_is_refused():
    """Is a value `encode` cannot store refused by name, rather than written as something else?"""
    with pytest.raises(TypeError, match="cannot store a NoneType"):
        encode([np.float32(1.0), None])


# -- the hidden values reach only the course's source notebooks ------------------------------------------


def _test_cell(source: str):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": "ex9_1_test", "locked": True, "solution": False}
    return nbformat.v4.new_notebook(cells=[cell])


def test_the_set_up_writes_the_hidden_values_into_each_hidden_call(tmp_path):
    """Does `inline_hidden` add `expected=` with exercise 9.1's stored values to each of its calls with cases
    (one spread over lines, one with a trailing comma), leave other exercises' calls alone, and keep it Python?"""
    stored = {"9.1": {"(1,)": {"gradients": encode([np.float32([0.5])])}}}
    (tmp_path / "x.json").write_text(json.dumps({"exercises": stored}))
    nb = _test_cell('ex9_1.check()\n### BEGIN HIDDEN TESTS\nex9_1.check(cases=[(1,),\n                   (2,)])\n'
                    'ex9_1.check(cases=[(1,)],)  # é\nex9_2.check(cases=[(3,)])\n### END HIDDEN TESTS')
    inline_hidden(nb, tmp_path / "x.json")
    calls = [n for n in ast.walk(ast.parse(nb.cells[0].source)) if isinstance(n, ast.Call) and n.keywords]
    given = [(ast.unparse(c.func), [ast.literal_eval(k.value) for k in c.keywords if k.arg == "expected"])
             for c in sorted(calls, key=lambda c: c.lineno)]
    assert given == [("ex9_1.check", [stored["9.1"]]), ("ex9_1.check", [stored["9.1"]]), ("ex9_2.check", [])]
    assert nb.cells[0].source.startswith("ex9_1.check()\n")


def test_a_test_cell_that_passes_expected_itself_is_refused(tmp_path):
    """Is a hidden call that already passes `expected` refused (those values are written by the set-up only)?"""
    (tmp_path / "x.json").write_text(json.dumps({"exercises": {"9.1": {}}}))
    with pytest.raises(ValueError, match="passes `expected` itself"):
        inline_hidden(_test_cell("ex9_1.check(cases=[(1,)], expected={})"), tmp_path / "x.json")


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_the_student_notebook_holds_no_hidden_value(name):
    """Does the committed student notebook hold none of the hidden values (nbgrader removed the hidden tests
    the set-up wrote them into)?"""
    text = (tapelab.paths.NOTEBOOKS / f"{name}.ipynb").read_text()
    assert "expected=" not in text and "HIDDEN TESTS" not in text


# -- a graded install checks with data alone ---------------------------------------------------------------


def _as_graded(exercise, tmp_path):
    """`exercise` with the hidden part of its test cell as the course's source notebook has it."""
    target = tmp_path / f"{exercise.notebook}.ipynb"
    tag_test_cells(SOLUTIONS / f"{exercise.notebook}.ipynb", target)
    cell = next(c for c in nbformat.read(target, as_version=4).cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == exercise.test_id)
    hidden = cell.source.partition("### BEGIN HIDDEN TESTS")
    assert "expected=" in hidden[2]
    return dataclasses.replace(exercise, hidden=hidden[1] + hidden[2])


@pytest.mark.parametrize("notebook,exercise", SOLVED, ids=SOLVED_IDS)
def test_without_the_references_the_answer_passes_visible_and_hidden_tests(notebook, exercise, graded, tmp_path):
    """With the answers distribution absent, does the model answer pass the visible check and the hidden
    tests as the course's source notebook holds them?"""
    with pytest.raises(ImportError):
        import tapelab_answers.references  # noqa: F401
    verdict = grade(_as_graded(exercise, tmp_path), exercise.reference, "reference")
    assert verdict.passed, verdict


@pytest.mark.parametrize("exercise,mistake", MISTAKES, ids=[f"{e.answer_id}-{m.name}" for e, m in MISTAKES])
def test_without_the_references_each_known_mistake_is_named(exercise, mistake, graded):
    """With the answers distribution absent, does the visible check still reject each catalogued mistake with
    the words that name it?"""
    verdict = grade(exercise, mistake.code, mistake.name)
    assert verdict.outcome == "incorrect" and verdict.part == "visible", verdict
    assert mistake.says in verdict.message


WRONG = [(e, m.name, m.code) for e, m in MISTAKES] + [
    (e, f"fresh {m.name}", m.code) for nb, e in SOLVED for m in fresh_mistakes(nb).get(e.answer_id, [])]


@pytest.mark.parametrize("exercise,label,code", WRONG, ids=[f"{e.answer_id}-{label}" for e, label, _ in WRONG])
def test_feedback_from_stored_values_is_what_the_references_give(exercise, label, code, monkeypatch):
    """Does each wrong answer of both catalogues get, from the stored values, the very outcome, message and
    cause it gets when the references compute every value (the package's data set aside)?"""
    visible, read, computed = dataclasses.replace(exercise, hidden=""), [], []
    found, decoded = expected.references, expected.decode
    monkeypatch.setattr(expected, "references", lambda: computed.append(1) or found())
    monkeypatch.setattr(expected, "decode", lambda data: read.append(1) or decoded(data))
    from_data = grade(visible, code, label)
    assert from_data.outcome == "incorrect" and not computed  # every value it needed came from the data
    monkeypatch.setattr(expected, "stored", lambda number: {})
    from_references = grade(visible, code, label)
    assert bool(computed) == bool(read)  # the same values were needed (none, when the answer raised first)
    assert (from_data.outcome, from_data.message, from_data.cause) == \
        (from_references.outcome, from_references.message, from_references.cause)


def test_without_the_references_an_unknown_case_says_so(graded):
    """Is a case no data covers, in a graded install, refused by a message that says what to run instead?"""
    from tapelab.exercises.model_variables import ex2_1

    with pytest.raises(MissingExpectation, match=r"no expected values for the input \('bn', 'mse', 99\)"):
        ex2_1.check(lambda model, loss_fn, x, y: [], cases=[("bn", "mse", 99)])


def test_without_the_references_a_students_own_variant_says_when_it_is_checked(graded):
    """In a graded install, a variant other than the notebook's has no stored values: is the student told that
    their numbers are checked when graded, not sent in a circle to `check()`?"""
    from tapelab.exercises.model_variables import ex2_1

    ex2_1._own = ex2_1.space.variant(7)
    try:
        with pytest.raises(MissingExpectation, match=r"Exercise 2.1 \(variant 7\) .* checked against them when it is graded"):
            ex2_1.check(lambda model, loss_fn, x, y: [])
    finally:
        ex2_1._own = None


# -- and no source of the package holds the reference statements --------------------------------------------

WINDOW = 3  # statements in a row: one or two are idioms every tape example shares


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a body in order, a compound one by its header (its bodies follow), docstrings left out."""
    out = []
    for node in body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue
        head, inner = copy.copy(node), []
        for field in ("body", "orelse", "finalbody"):
            part = getattr(node, field, None)
            if isinstance(part, list) and part and isinstance(part[0], ast.stmt):
                inner += part
                setattr(head, field, [ast.Pass()])
        for handler in getattr(node, "handlers", None) or ():
            inner += handler.body
        out += [head, *_statements(inner)]
    return out


def _renamed(statements: list[ast.stmt]) -> tuple[str, ...]:
    """The statements as text, with every local name (and parameter) renamed by its first use in them."""
    names: dict[str, str] = {}

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node):
            return ast.copy_location(ast.Name(names.setdefault(node.id, f"v{len(names)}"), node.ctx), node)

        def visit_arg(self, node):
            return ast.copy_location(ast.arg(names.setdefault(node.arg, f"v{len(names)}")), node)

    return tuple(ast.unparse(Rename().visit(ast.parse(ast.unparse(s)))) for s in statements)


def _windows(source: str, every_size: bool = False) -> set[tuple[str, ...]]:
    """Every run of WINDOW statements (or a whole shorter function) in each function of `source`, renamed;
    with `every_size`, the runs of every length up to WINDOW (so a short reference is found in a longer body)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            flat = _statements(node.body)
            for size in range(1, WINDOW + 1) if every_size else [min(WINDOW, len(flat))]:
                found |= {_renamed(flat[i:i + size]) for i in range(len(flat) - size + 1)}
    return found


def _reference_windows() -> dict[str, set]:
    """What must not be readable: each scanned exercise's model answer, and each reference computation."""
    found = {e.answer_id: _windows(e.reference) for _, e in SOLVED}
    found |= {f"references.{n}": _windows(textwrap.dedent(inspect.getsource(f)))
              for n, f in vars(tapelab_answers.references).items()
              if inspect.isfunction(f) and f.__module__ == tapelab_answers.references.__name__}
    return found


def _leaks(sources: dict[str, str], wanted: dict[str, set]) -> list[str]:
    held = {path: _windows(text, every_size=True) for path, text in sources.items()}
    return [f"{path} holds statements of {what}" for what, windows in wanted.items()
            for path, have in held.items() if windows & have]


def _package_sources() -> dict[str, str]:
    root = Path(tapelab.__file__).parent
    return {str(p): p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.py"))}


def test_no_package_source_holds_a_reference_statement():
    """Does no function of the tapelab package hold three statements in a row of a scanned exercise's model
    answer or of a reference computation (formatting, comments, docstrings and names aside)?"""
    wanted = _reference_windows()
    assert all(wanted.values()) and len(wanted) > len(SOLVED)
    assert not _leaks(_package_sources(), wanted)


def test_the_statement_scan_finds_a_renamed_copy(tmp_path):
    """Would the scan find a reference computation and a model answer copied with other names and layout, and
    a one-statement reference inside a longer function?"""
    copied = textwrap.dedent(inspect.getsource(tapelab_answers.references.layer_gradients))
    copied = copied.replace("preds", "out").replace("value", "total").replace("tape", "t")
    answer = SOLVED[0][1].reference.replace("loss", "cost").replace("\n    ", "\n        ")
    answer = answer.replace("def ", "class Planted:\n    def ", 1)
    inside = ("def losses(build, lr, data, n):\n    run = fresh(build, lr)\n"
              "    return [[float(run(a, b)) for a, b in data] for _ in range(n)]\n")
    found = _leaks({"copy.py": copied, "answer.py": answer, "inside.py": inside}, _reference_windows())
    assert "copy.py holds statements of references.layer_gradients" in found
    assert "inside.py holds statements of references.epoch_losses" in found  # a short one, in a longer body
    assert f"answer.py holds statements of {SOLVED[0][1].answer_id}" in found
