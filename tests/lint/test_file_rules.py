"""TPL001 syntax-error and TPL002 unreadable-file: a file (or notebook cell) tapelab could not check is a
finding at its place and the run exits 1, as in Ruff; in-process on small files in a temporary folder."""
import json

import pytest

from tapelab.lint import lint_source, lint_text
from tapelab.lint.files import lint_file

BUGGY = "x = tf.constant(3.0)\nwith tf.GradientTape() as tape:\n    y = x * x\ng = tape.gradient(y, x)\n"
BROKEN = "import tensorflow as tf\n\ndef step(x:\n    with tf.GradientTape() as tape:\n        pass\n"


def test_a_file_that_does_not_parse_is_a_finding_at_the_error(tmp_path, run_lint):
    """Is a `.py` file that does not parse reported as TPL001 at the parser's line and column, in the output
    rather than as a warning, with exit status 1?"""
    (tmp_path / "broken.py").write_text(BROKEN)
    status, out, err = run_lint(tmp_path / "broken.py")
    assert status == 1 and err == ""
    assert "broken.py:3:9: TPL001 [syntax-error] error: the file does not parse ('(' was never closed)" in out


def test_a_file_that_parses_is_no_syntax_error():
    """Near miss: is code using soft keywords as names and Python 3.11 syntax (`match`, `except*`) clean?"""
    source = ("match = 1\nmatch match:\n    case 1:\n        pass\ntry:\n    pass\nexcept* ValueError:\n    pass\n"
              "with tf.GradientTape() as tape:\n    pass\n")
    assert lint_text(source, "ok.py") == ([], [])


def test_a_syntax_error_is_always_reported(tmp_path, run_lint):
    """Does no selection, prefix ignore, file-level noqa or per-file ignore hide a syntax error, as Ruff always
    shows them (`TPL0` names TPL002 too, which can be ignored, so it is no usage error)?"""
    (tmp_path / "broken.py").write_text("# tapelab: noqa\n# ruff: noqa\n" + BROKEN)
    (tmp_path / "pyproject.toml").write_text('[tool.tapelab.lint]\nselect = ["TPL2"]\nper-file-ignores = '
                                             '{"broken.py" = ["TPL1", "TPL002"]}\n')
    status, out, _ = run_lint(tmp_path / "broken.py", "--config", tmp_path, "--select", "TPL205", "--ignore", "TPL0")
    assert status == 1 and "broken.py:5:9: TPL001" in out


@pytest.mark.parametrize("where", [("--ignore", "TPL001"), ("--ignore", "syntax-error"),
                                   ("pyproject", 'ignore = ["TPL001"]'),
                                   ("pyproject", 'per-file-ignores = {"*.py" = ["syntax-error"]}')])
def test_ignoring_the_syntax_error_rule_is_a_usage_error(tmp_path, run_lint, where):
    """Does naming the syntax-error rule alone in an ignore list exit 2 and say why, rather than pass silently?"""
    (tmp_path / "broken.py").write_text(BROKEN)
    kind, value = where
    (tmp_path / "pyproject.toml").write_text("[tool.tapelab.lint]\n" + (value if kind == "pyproject" else "") + "\n")
    argv = [kind, value] if kind != "pyproject" else []
    status, out, err = run_lint(tmp_path / "broken.py", "--config", tmp_path, *argv)
    assert status == 2 and out == "" and "cannot be ignored: a file that does not parse is always reported" in err


def test_a_file_no_rule_reads_is_still_parsed(tmp_path, run_lint):
    """Is a syntax error reported (TPL001, exit 1) in a file that names nothing any rule looks for, as Ruff
    reports every syntax error, while a correct such file gives nothing?"""
    ((found,), _) = lint_text("def broken(:\n", "plain.py")
    assert (found.code, found.line, found.col) == ("syntax-error", 1, 11)
    assert lint_text("def fine():\n    return 1\n", "plain.py") == ([], [])
    (tmp_path / "plain.py").write_text("def f(:\n")
    status, out, _ = run_lint(tmp_path / "plain.py")
    assert status == 1 and "TPL001" in out
    with pytest.raises(SyntaxError):  # the public lint_source raises
        lint_source("def f(:\n")


def test_a_notebook_cell_that_does_not_parse_is_a_finding_at_that_cell(write_notebook, run_lint):
    """Is a cell that does not parse reported at its cell, line and column, while the other cells are still
    linted, and do IPython magics and shell lines not count as syntax errors?"""
    path = write_notebook(["%matplotlib inline\n!pip list\nimport tensorflow as tf", "x = 1\ndef broken(:", BUGGY])
    status, out, err = run_lint(path, "--format", "json")
    found = [(f["cell"], f["line"], f["column"], f["rule"]) for f in json.loads(out)]
    assert status == 1 and err == "" and found == [(2, 2, 12, "TPL001"), (3, 4, 22, "TPL101")]
    assert json.loads(out)[0]["message"] == "the cell does not parse (invalid syntax), so no rule checked it"


def test_a_notebook_whose_json_does_not_parse_is_a_finding_at_the_json_error(tmp_path, run_lint):
    """Is a `.ipynb` whose JSON is broken reported as TPL001 at the JSON error's line and column?"""
    (tmp_path / "book.ipynb").write_text('{\n  "cells": [\n    {"cell_type": "code",,}\n  ]\n}\n')
    status, out, _ = run_lint(tmp_path / "book.ipynb", "--format", "json")
    ((found),) = json.loads(out)
    assert status == 1 and (found["line"], found["column"], found["rule"], found["cell"]) == (3, 26, "TPL001", None)
    assert found["message"].startswith("the notebook's JSON does not parse (Expecting property name")


def test_a_file_that_is_not_utf8_is_a_finding_at_the_first_bad_line(tmp_path, run_lint):
    """Is a file that is not UTF-8 reported as TPL002 at the line of its first bad byte, with exit status 1,
    and does `ignore` (or a per-file ignore) turn the rule off, as Ruff's E902?"""
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nx = 1\nname = '\xe9'\n")
    status, out, err = run_lint(tmp_path / "latin.py")
    assert status == 1 and err == ""
    assert "latin.py:3:1: TPL002 [unreadable-file] error: the file cannot be read ('utf-8' codec can't decode" in out
    assert run_lint(tmp_path / "latin.py", "--ignore", "unreadable-file")[0] == 0
    (tmp_path / "pyproject.toml").write_text('[tool.tapelab.lint]\nper-file-ignores = {"latin.py" = ["TPL0"]}\n')
    assert run_lint(tmp_path / "latin.py", "--config", tmp_path)[0] == 0


def test_a_utf8_file_with_other_scripts_reads(tmp_path):
    """Near miss: is a UTF-8 file with accents, other scripts and emoji read and linted as usual?"""
    (tmp_path / "unicode.py").write_text("# é ü ß 中文 🙂\n" + BUGGY, encoding="utf-8")
    assert [f.number for f in lint_file(tmp_path / "unicode.py")[0]] == ["TPL101"]


def test_a_dangling_link_in_a_tree_is_a_finding(tmp_path, run_lint):
    """Is a file found under a folder that cannot be opened (a symbolic link to nothing) reported as TPL002 on
    its first line, next to the other files' findings?"""
    (tmp_path / "bad.py").write_text(BUGGY)
    (tmp_path / "gone.py").symlink_to(tmp_path / "nowhere.py")
    status, out, _ = run_lint(tmp_path, "--format", "json")
    found = [(f["path"].rsplit("/", 1)[-1], f["line"], f["rule"]) for f in json.loads(out)]
    assert status == 1 and found == [("bad.py", 4, "TPL101"), ("gone.py", 1, "TPL002")]
    assert "No such file or directory" in json.loads(out)[1]["message"]
