"""`per-file-ignores` in `[tool.tapelab.lint]`: rules ignored in the files a glob matches, globs matched as Ruff
matches them (from pyproject.toml's folder), rules named as everywhere else; in-process in a temporary folder."""
import json
from pathlib import Path

import pytest

from tapelab.lint import Config
from tapelab.lint.files import _glob

BUGGY = "x = tf.constant(3.0)\nwith tf.GradientTape() as tape:\n    y = x * x\ng = tape.gradient(y, x)\n"
FILES = ["bad.py", "tests/bad.py", "tests/unit/bad.py", "src/bad.py", "src/pkg/bad.py"]


@pytest.fixture
def tree(tmp_path):
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(BUGGY)
    return tmp_path


def _flagged(run_lint, tree, table, *argv):
    (tree / "pyproject.toml").write_text(f"[tool.tapelab.lint.per-file-ignores]\n{table}\n")
    status, out, err = run_lint(tree, "--config", tree, "--format", "json", *argv)
    assert status in (0, 1), err
    return sorted(str(Path(f["path"]).relative_to(tree)) for f in json.loads(out))


@pytest.mark.parametrize("table, still_flagged", [
    ('"tests/*" = ["TPL101"]', ["bad.py", "src/bad.py", "src/pkg/bad.py"]),  # `*` crosses folders, as in Ruff
    ('"bad.py" = ["not-watched"]', []),  # a glob without a folder also matches the file's name anywhere
    ('"src/**/bad.py" = ["TPL1"]', ["bad.py", "tests/bad.py", "tests/unit/bad.py"]),  # `**/` may be no folder
    ('"!tests/*" = ["TPL"]', ["tests/bad.py", "tests/unit/bad.py"]),  # `!`: the files the glob does not match
    ('"{src,tests}/*.py" = ["TPL101"]', ["bad.py"]),
    ('"tests/*" = ["TPL2"]', FILES),  # another family: the tape rule still runs
])
def test_per_file_ignores_match_as_ruff_matches(run_lint, tree, table, still_flagged):
    """Does each glob ignore its rules in exactly the files Ruff's per-file-ignores would match?"""
    assert _flagged(run_lint, tree, table) == sorted(still_flagged)


def test_globs_start_from_the_pyproject_folder_not_the_current_one(run_lint, tree, monkeypatch):
    """Is a glob matched from the folder of the pyproject.toml that holds it, wherever lint is run from?"""
    monkeypatch.chdir(tree / "src")
    assert _flagged(run_lint, tree, '"tests/*" = ["TPL101"]') == ["bad.py", "src/bad.py", "src/pkg/bad.py"]


def test_per_file_ignores_add_to_the_command_line(run_lint, tree):
    """Do per-file ignores apply together with `--select` and `--ignore`, as Ruff combines them?"""
    assert _flagged(run_lint, tree, '"src/*" = ["TPL101"]', "--select", "TPL1") == [
        "bad.py", "tests/bad.py", "tests/unit/bad.py"]
    assert _flagged(run_lint, tree, '"src/*" = ["TPL101"]', "--ignore", "TPL101") == []


def test_per_file_ignores_in_a_notebook(run_lint, write_notebook, tmp_path):
    """Does a glob such as `notebooks/*.ipynb` ignore its rules in the notebooks it matches?"""
    (tmp_path / "notebooks").mkdir()
    write_notebook([BUGGY], "notebooks/book.ipynb")
    (tmp_path / "pyproject.toml").write_text('[tool.tapelab.lint]\nper-file-ignores = {"notebooks/*.ipynb" = ["TPL1"]}\n')
    assert run_lint(tmp_path / "notebooks", "--config", tmp_path)[0] == 0
    (tmp_path / "pyproject.toml").write_text('[tool.tapelab.lint]\nper-file-ignores = {"notebooks/*.py" = ["TPL1"]}\n')
    assert run_lint(tmp_path / "notebooks", "--config", tmp_path)[0] == 1


@pytest.mark.parametrize("table, said", [
    ('per-file-ignores = {"tests/*" = ["TPL111", "TPL999"]}', "per-file-ignores 'tests/*': unknown lint rule 'TPL999'"),
    ('per-file-ignores = {"tests/*" = "TPL111"}', 'per-file-ignores maps globs to lists of rules'),
    ('per-file-ignores = ["tests/*"]', 'per-file-ignores maps globs to lists of rules'),
])
def test_a_per_file_ignore_that_cannot_be_used_exits_2_naming_the_key(run_lint, tree, table, said):
    """Does an unknown rule under a glob, or a value that is not a table of lists, exit 2 naming the key?"""
    (tree / "pyproject.toml").write_text(f"[tool.tapelab.lint]\n{table}\n")
    status, out, err = run_lint(tree, "--config", tree)
    assert status == 2 and out == "" and said in err and "[tool.tapelab.lint] in pyproject.toml" in err


def test_config_at_a_path_adds_the_matching_rules_to_ignore(tmp_path):
    """Does `Config.at(path)` grow `ignore` by the rules of every glob the path matches, and only those?"""
    config = Config(per_file_ignores=(("tests/*", frozenset({"not-watched"})), ("*.ipynb", frozenset({"keras2-lr"}))),
                    root=str(tmp_path))
    assert config.at(tmp_path / "tests" / "a.py").ignore == {"not-watched"}
    assert config.at(tmp_path / "tests" / "a.ipynb").ignore == {"not-watched", "keras2-lr"}
    assert config.at(tmp_path / "src" / "a.py") == config and Config().at("anything.py") == Config()


@pytest.mark.parametrize("glob, matches, misses", [
    ("*.py", ["a.py", "dir/a.py"], ["a.pyc", "a.ipynb"]),
    ("a/**/b.py", ["a/b.py", "a/x/y/b.py"], ["ab.py", "a/xb.py"]),
    ("test_?.py", ["test_a.py"], ["test_ab.py"]),
    ("[!_]*.py", ["a.py"], ["_a.py"]),
    ("[ab].py", ["a.py", "b.py"], ["c.py"]),
    ("{nb,notebooks}/*.ipynb", ["nb/x.ipynb", "notebooks/x.ipynb"], ["other/x.ipynb"]),
    ("a+b(1).py", ["a+b(1).py"], ["aab1.py"]),  # other characters are literal
])
def test_glob_reads_patterns_as_globset_does(glob, matches, misses):
    """Does the glob translation match what globset (Ruff's matcher) matches, and nothing else?"""
    assert all(_glob(glob).fullmatch(m) for m in matches)
    assert not any(_glob(glob).fullmatch(m) for m in misses)
