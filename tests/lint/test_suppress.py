"""Silencing findings from the source: `# noqa` as Ruff and flake8 read it, the file-level forms
(`# tapelab: noqa`, `# ruff: noqa`, `# flake8: noqa`), in `.py` files and notebooks, the same in `tapelab lint`
and in the flake8 plugin under the real flake8 (run in a subprocess and compared finding by finding)."""
import argparse
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tapelab
from tapelab.lint import lint_paths, lint_source
from tapelab.lint.flake8 import Plugin

BUGGY = "x = tf.constant(3.0)\nwith tf.GradientTape() as tape:\n    y = x * x\ng = tape.gradient(y, x)\n"
LINE = "g = tape.gradient(y, x)"  # line 4, where TPL101 not-watched is reported
TWICE = BUGGY + "h = tape.gradient(y, x)\n"  # line 5 has two findings: TPL110 tape-used-twice and TPL101 again


def _numbers(source):
    return [f.number for f in lint_source(source)]


def _placed(source):
    return [(f.line, f.number) for f in lint_source(source)]


def _on_line(comment):
    return BUGGY.replace(LINE, f"{LINE}  {comment}")


@pytest.mark.parametrize("comment", ["# noqa: TPL101", "# noqa:TPL101", "# NOQA: TPL101", "# noqa: TPL1",
                                     "# noqa: not-watched", "# noqa: E501, TPL101", "# noqa: E501 TPL101",
                                     "# type: ignore  # noqa: TPL101"])
def test_noqa_naming_the_rule_silences_it_on_its_line(comment):
    """Does `# noqa:` silence the rule it names, by number, prefix or cause code, among other tools' codes
    (comma or space separated) and after another comment on the line?"""
    assert _numbers(BUGGY) == ["TPL101"]
    assert _numbers(_on_line(comment)) == []


@pytest.mark.parametrize("comment", ["# noqa: TPL110", "# noqa: TPL2", "# noqa: F401", "# noqa: TPL999",
                                     "# noqa: E501 not-watched-either"])
def test_noqa_naming_other_codes_leaves_the_finding(comment):
    """Is a finding kept when the `# noqa:` on its line names only other rules, other tools' codes or a
    number no rule has?"""
    assert _numbers(_on_line(comment)) == ["TPL101"]


@pytest.mark.parametrize("comment", ["# noqa", "# NoQA", "#noqa", "# noqa: see the tape below"])
def test_bare_noqa_silences_every_rule_on_its_line(comment):
    """Does a bare `# noqa` (any case; also one whose `:` is followed by no code, as flake8 reads it) silence
    every TPL finding on its line, and only there?"""
    assert _placed(TWICE) == [(4, "TPL101"), (5, "TPL110"), (5, "TPL101")]
    assert _placed(TWICE[:-1] + f"  {comment}\n") == [(4, "TPL101")]
    assert _placed(TWICE.replace("x = tf.constant(3.0)", f"x = tf.constant(3.0)  {comment}")) == _placed(TWICE)


def test_noqa_goes_on_the_line_the_finding_is_reported():
    """For a statement over several lines, does the `# noqa` silence the finding only on the line it is
    reported on (here the source `x`'s, line 6), as in Ruff?"""
    split = BUGGY.replace(LINE, "g = tape.gradient(\n    y,\n    x)")
    assert _placed(split) == [(6, "TPL101")]
    assert _placed(split.replace("    x)", "    x)  # noqa: TPL101")) == []
    assert _placed(split.replace("gradient(", "gradient(  # noqa: TPL101")) == [(6, "TPL101")]


def test_a_directive_inside_a_string_is_text():
    """Is a `# noqa` or `# tapelab: noqa` written inside a string literal no directive?"""
    assert _numbers(BUGGY.replace(LINE, f"{LINE}; s = '# noqa'")) == ["TPL101"]
    assert _numbers(f"s = '''\n# tapelab: noqa\n'''\n{BUGGY}") == ["TPL101"]


@pytest.mark.parametrize("directive", ["# tapelab: noqa", "# ruff: noqa", "# flake8: noqa", "# flake8: noqa: E501",
                                       "# FLAKE8: NOQA", "# tapelab: noqa: TPL101", "# ruff: noqa: TPL1,TPL2",
                                       "# tapelab: noqa: not-watched"])
def test_file_level_noqa_silences_the_whole_file(directive):
    """Does a file-level form on a line of its own, anywhere in the file, silence the rules it names (every rule
    when it names none; `# flake8: noqa` always the whole file, as flake8 skips it)?"""
    assert _numbers(f"{directive}\n{BUGGY}") == []
    assert _numbers(f"{BUGGY}    {directive}\n") == []


@pytest.mark.parametrize("directive", ["# tapelab: noqa: TPL2", "# ruff: noqa: F401", "x = 1  # tapelab: noqa",
                                       "x = 1  # ruff: noqa", "#flake8: noqa", "# noqa"])
def test_file_level_noqa_leaves_what_it_does_not_name(directive):
    """Are findings kept when the file-level form names other rules, shares its line with code, or is not
    flake8's own spelling (`# flake8: noqa`), and does a bare `# noqa` on a line of its own silence only
    that line?"""
    assert _numbers(f"{directive}\n{BUGGY}") == ["TPL101"]


def test_noqa_and_pragma_together():
    """Do a `# tapelab: ignore[...]` pragma and a `# noqa:` on one line each silence what they name?"""
    line5 = "h = tape.gradient(y, x)\n"
    pragma = TWICE.replace(line5, line5[:-1] + "  # tapelab: ignore[TPL110]  # noqa: E501\n")
    assert _placed(pragma) == [(4, "TPL101"), (5, "TPL101")]
    both = TWICE.replace(line5, line5[:-1] + "  # tapelab: ignore[tape-used-twice]  # noqa: TPL101\n")
    assert _placed(both) == [(4, "TPL101")]


def test_notebook_noqa_applies_to_its_line_in_its_cell(write_notebook, run_lint):
    """In a notebook, does a line's `# noqa` silence the finding on that line of that cell only, and a
    file-level form in any cell the whole notebook?"""
    cells = ["x = tf.constant(3.0)", "with tf.GradientTape() as tape:\n    y = x * x",
             "g = tape.gradient(y, x)\nh = tape.gradient(y, x)"]
    status, out, _ = run_lint(write_notebook(cells), "--format", "json")
    assert status == 1 and [(f["cell"], f["line"], f["rule"]) for f in json.loads(out)] == [
        (3, 1, "TPL101"), (3, 2, "TPL110"), (3, 2, "TPL101")]
    quiet = cells[:2] + [cells[2].replace("(y, x)\n", "(y, x)  # noqa: TPL101\n")]
    status, out, _ = run_lint(write_notebook(quiet), "--format", "json")
    assert [(f["cell"], f["line"], f["rule"]) for f in json.loads(out)] == [(3, 2, "TPL110"), (3, 2, "TPL101")]
    status, out, _ = run_lint(write_notebook(["# ruff: noqa: TPL1\nimport tensorflow as tf", *cells]))
    assert status == 0 and out.strip() == "0 findings"


def test_plugin_keeps_pragmas_and_drops_noqa_under_disable_noqa():
    """Does the plugin honour the file-level forms, and under flake8's `--disable-noqa` no `noqa` at all
    (the pragmas still apply)?"""
    def run(source):
        return [m.split()[0] for _, _, m, _ in Plugin(ast.parse(source), source.splitlines(True), "f.py").run()]

    quiet, pragma = f"# tapelab: noqa\n{BUGGY}", BUGGY.replace(LINE, LINE + "  # tapelab: ignore[TPL101]")
    assert run(quiet) == [] and run(pragma) == []
    Plugin.parse_options(argparse.Namespace(disable_noqa=True))
    try:
        assert run(quiet) == ["TPL101"] and run(pragma) == []
    finally:
        Plugin.parse_options(argparse.Namespace(disable_noqa=False))


# Sample files for flake8 against `tapelab lint`: name -> source. Each directive form, silencing or not.
SAMPLES = {
    "plain.py": BUGGY,
    "noqa_number.py": _on_line("# noqa: TPL101"),
    "noqa_prefix.py": _on_line("# noqa:TPL1"),
    "noqa_other.py": _on_line("# noqa: TPL110, E501"),
    "noqa_bare.py": TWICE[:-1] + "  # noqa\n",
    "pragma.py": TWICE.replace(LINE, LINE + "  # tapelab: ignore[not-watched]"),
    "tapelab_file.py": "# tapelab: noqa\n" + BUGGY,
    "tapelab_file_other.py": "# tapelab: noqa: TPL2\n" + BUGGY,
    "tapelab_file_code.py": "# tapelab: noqa: TPL110\n" + TWICE,
    "ruff_file.py": BUGGY + "# ruff: noqa: TPL101\n",
    "ruff_file_inline.py": "x = 1  # ruff: noqa\n" + BUGGY,
    "flake8_file.py": "# flake8: noqa\n" + BUGGY,
}


def _flake8(folder, *options):
    """(file name, line, column, rule number) of each TPL finding the real flake8 reports under `folder`."""
    env = {**os.environ, "PYTHONPATH": str(Path(tapelab.__file__).parents[1])}  # this checkout's tapelab
    done = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "TPL", *options,
                           "--format", "%(path)s|%(row)d|%(col)d|%(code)s", str(folder)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode in (0, 1) and done.stderr == "", done.stderr
    rows = [line.split("|") for line in done.stdout.splitlines()]
    return sorted((Path(path).name, int(row), int(col), code) for path, row, col, code in rows)


def test_flake8_and_tapelab_lint_agree_on_every_directive(tmp_path):
    """Run by the real flake8 (`--select TPL`, in a subprocess), does the plugin report exactly the findings
    `tapelab lint` reports on the same files, whatever directive each holds?"""
    for name, source in SAMPLES.items():
        (tmp_path / name).write_text(source)
    findings, _, _ = lint_paths([tmp_path], jobs=1)
    ours = sorted((Path(f.path).name, f.line, f.col + 1, f.number) for f in findings)
    assert _flake8(tmp_path) == ours
    silenced = set(SAMPLES) - {name for name, *_ in ours}
    assert silenced == {"noqa_number.py", "noqa_prefix.py", "tapelab_file.py", "ruff_file.py", "flake8_file.py"}
    assert [row for row in ours if row[0] in ("noqa_bare.py", "tapelab_file_code.py")] == [
        ("noqa_bare.py", 4, 22, "TPL101"), ("tapelab_file_code.py", 5, 22, "TPL101"),
        ("tapelab_file_code.py", 6, 22, "TPL101")]


def test_flake8_disable_noqa_reaches_the_plugin(tmp_path):
    """Under `flake8 --disable-noqa`, do the file-level forms flake8 does not know stop silencing too, while
    a tapelab pragma (not a noqa) still does?"""
    for name in ("tapelab_file.py", "ruff_file.py", "pragma.py"):
        (tmp_path / name).write_text(SAMPLES[name])
    assert _flake8(tmp_path, "--disable-noqa") == [("pragma.py", 5, 5, "TPL110"), ("pragma.py", 5, 22, "TPL101"),
                                                   ("ruff_file.py", 4, 22, "TPL101"),
                                                   ("tapelab_file.py", 5, 22, "TPL101")]
