"""Conventions Ruff and flake8 users expect: `# noqa` on a line and in a whole file, a file that does not
parse as a finding (exit 1), and `per-file-ignores`; `tapelab lint` and the flake8 plugin agree."""
from __future__ import annotations

import json
import subprocess
import sys

import nbformat
import pytest

from tapelab.cli import main
from tapelab.lint import lint_text

BUGGY = "x = tf.constant(3.0)\nwith tf.GradientTape() as tape:\n    y = x * x\ng = tape.gradient(y, x){}\n"
TWO = BUGGY + "with tf.GradientTape() as t:\n    t.watch(x)\n    z = x * x\nh = t.gradient(z, x)\nh2 = t.gradient(z, x){}\n"


def _codes(text: str, path: str = "a.py") -> list[str]:
    return [f.code for f in lint_text(text, path)[0]]


@pytest.mark.parametrize("comment, left", [
    ("  # noqa: TPL101", []),
    ("  # noqa:TPL101,E501", []),           # another tool's code beside ours
    ("  # NOQA: TPL1", []),                 # a prefix, any case
    ("  # noqa: not-watched", []),          # a cause code
    ("  # noqa", []),                       # bare: every rule on the line
    ("  # noqa: TPL110", ["not-watched"]),  # another rule: not silenced
    ("  # noqa: E501", ["not-watched"]),    # only another tool's code
    ("  # tapelab: ignore[TPL101]", []),
])
def test_line_noqa(comment, left):
    """Does a `# noqa` comment silence exactly the rules it names, on its own line?"""
    assert _codes(BUGGY.format(comment)) == left


def test_noqa_in_a_string_is_not_a_comment():
    """Is text that looks like a pragma inside a string left alone?"""
    assert _codes(BUGGY.format("; s = '# noqa'")) == ["not-watched"]


@pytest.mark.parametrize("header, left", [
    ("# tapelab: noqa\n", []),
    ("# ruff: noqa\n", []),
    ("# flake8: noqa\n", []),
    ("# tapelab: noqa: TPL110\n", ["not-watched"]),
    ("# ruff: noqa: TPL101, TPL110\n", []),
    ("# noqa\n", ["not-watched", "tape-used-twice"]),  # a bare noqa on its own line silences only that line
])
def test_file_level_noqa(header, left):
    """Does a file-level comment silence the whole file, or the rules it names in the whole file?"""
    assert _codes(header + TWO.format("", "")) == left


def test_notebook_noqa_by_line_and_by_file(tmp_path):
    """In a notebook, does a line noqa silence its line in its cell, and a file noqa in any cell the notebook?"""
    def book(*cells):
        return nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]))
    assert _codes(book("x = 1", BUGGY.format("  # noqa: TPL101")), "b.ipynb") == []
    assert _codes(book(BUGGY.format(""), "# ruff: noqa"), "b.ipynb") == []
    assert _codes(book(BUGGY.format(""), "y = 2  # noqa"), "b.ipynb") == ["not-watched"]


def test_a_file_that_does_not_parse_is_a_finding_and_exits_1(tmp_path, capsys):
    """Is a file with a syntax error reported with its own rule at the parser's place, exit 1 (not 0)?"""
    (tmp_path / "broken.py").write_text("import tensorflow as tf\nwith tf.GradientTape() as tape\n    y = 1\n")
    status = main(["lint", str(tmp_path / "broken.py")])
    out, err = capsys.readouterr()
    assert status == 1 and err == ""
    assert "broken.py:2:31: TPL001 [syntax-error] error: does not parse: expected ':'" in out
    assert main(["lint", "--ignore", "TPL001", str(tmp_path / "broken.py")]) == 0


def test_per_file_ignores(tmp_path, capsys):
    """Does `per-file-ignores` silence the rules it names in the files its glob matches, and only there?"""
    (tmp_path / "pyproject.toml").write_text('[tool.tapelab.lint]\nper-file-ignores = {"tests/*" = ["TPL1"]}\n')
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text(BUGGY.format(""))
    (tmp_path / "src.py").write_text(BUGGY.format(""))
    status = main(["lint", "--config", str(tmp_path), "--format", "json", str(tmp_path)])
    found = json.loads(capsys.readouterr().out)
    assert status == 1 and [f["path"].rsplit("/", 1)[-1] for f in found] == ["src.py"]


def test_unknown_rule_in_per_file_ignores_exits_2_naming_the_key(tmp_path, capsys):
    """Is an unknown rule under `per-file-ignores` a usage error that names the glob and the rule?"""
    (tmp_path / "pyproject.toml").write_text('[tool.tapelab.lint]\nper-file-ignores = {"tests/*" = ["TPL999"]}\n')
    (tmp_path / "a.py").write_text("x = 1\n")
    assert main(["lint", "--config", str(tmp_path), str(tmp_path / "a.py")]) == 2
    err = capsys.readouterr().err
    assert "per-file-ignores 'tests/*'" in err and "TPL999" in err


def test_flake8_and_tapelab_lint_agree_on_suppressions(tmp_path):
    """With flake8 really installed, does `flake8 --select TPL` report what `tapelab lint` reports, with every
    form of suppression honoured the same?"""
    files = {"line.py": TWO.format("  # noqa: TPL101", ""), "bare.py": TWO.format("", "  # noqa"),
             "pragma.py": TWO.format("  # tapelab: ignore[not-watched]", ""),
             "filewide.py": "# tapelab: noqa: TPL110\n" + TWO.format("", ""),
             "ruffwide.py": "# ruff: noqa\n" + TWO.format("", ""), "plain.py": TWO.format("", "")}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    run = subprocess.run([sys.executable, "-m", "flake8", "--select", "TPL", "--format",
                          "%(path)s:%(row)d:%(code)s", "."], cwd=tmp_path, capture_output=True, text=True)
    flake8 = sorted(line.removeprefix("./") for line in run.stdout.splitlines())
    ours = sorted(f"{name}:{f.line}:{f.number}" for name, text in files.items() for f in lint_text(text, name)[0])
    assert run.returncode == 1 and flake8 == ours
    assert ours == ["bare.py:4:TPL101", "filewide.py:5:TPL101", "line.py:9:TPL110", "plain.py:4:TPL101",
                    "plain.py:9:TPL110", "pragma.py:9:TPL110"]
