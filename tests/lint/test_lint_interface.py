"""`tapelab lint` as a tool: pragmas, `[tool.tapelab.lint]`, notebooks by cell, exit status (formats: test_output.py).
In-process (`tapelab.cli.main`) on small files in a temporary folder."""
import json
import re

import nbformat
import pytest

from tapelab.cli import main
from tapelab.lint import Config, lint_source
from tapelab.lint.flake8 import Plugin

BUGGY = "x = tf.constant(3.0)\nwith tf.GradientTape() as tape:\n    y = x * x\ng = tape.gradient(y, x)\n"


def _run(capsys, *argv):
    status = main(["lint", *map(str, argv)])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def project(tmp_path):
    (tmp_path / "bad.py").write_text(BUGGY)
    (tmp_path / "good.py").write_text(BUGGY.replace("    y =", "    tape.watch(x)\n    y ="))
    return tmp_path


def test_pragma_hides_only_the_rule_it_names_on_its_own_line():
    """Does `# tapelab: ignore[...]` (by cause code or by number) hide that rule on that line only?"""
    line = "g = tape.gradient(y, x)"
    assert lint_source(BUGGY.replace(line, line + "  # tapelab: ignore[not-watched]")) == []
    assert lint_source(BUGGY.replace(line, line + "  # tapelab: ignore[TPL101]")) == []
    assert [f.code for f in lint_source(BUGGY.replace(line, line + "  # tapelab: ignore[TPL110]"))] == ["not-watched"]
    moved = BUGGY.replace("x = tf.constant(3.0)", "x = tf.constant(3.0)  # tapelab: ignore[not-watched]")
    assert [f.code for f in lint_source(moved)] == ["not-watched"]


def test_pragma_inside_a_string_is_not_a_pragma():
    """Is a pragma written inside a string literal ignored, so only real comments silence a rule?"""
    source = BUGGY.replace("g = tape.gradient(y, x)", "g = tape.gradient(y, x); s = '# tapelab: ignore[not-watched]'")
    assert [f.code for f in lint_source(source)] == ["not-watched"]


def test_config_select_and_ignore_accept_numbers_and_codes():
    """Do `select` and `ignore` switch rules on and off, named by number or by cause code?"""
    assert lint_source(BUGGY, config=Config(ignore=frozenset({"TPL101", "not-watched"}))) == []
    assert lint_source(BUGGY, config=Config(select=frozenset({"TPL110", "tape-used-twice"}))) == []
    assert len(lint_source(BUGGY, config=Config(select=frozenset({"TPL101", "not-watched"})))) == 1


def test_pyproject_table_selects_ignores_and_excludes(project, capsys):
    """Does `[tool.tapelab.lint]` in pyproject.toml ignore rules and exclude paths for the CLI?"""
    (project / "pyproject.toml").write_text('[tool.tapelab.lint]\nignore = ["not-watched"]\n')
    assert _run(capsys, project / "bad.py", "--config", project)[0] == 0
    (project / "pyproject.toml").write_text('[tool.tapelab.lint]\nexclude = ["bad.py"]\n')
    assert _run(capsys, project, "--config", project)[0] == 0
    (project / "pyproject.toml").write_text('[tool.tapelab.lint]\nselect = ["TPL101"]\n')
    assert _run(capsys, project, "--config", project)[0] == 1


def test_unknown_rule_in_config_is_a_usage_error_naming_it(project, capsys):
    """Does an unknown code in the configuration exit 2 with a message naming the code and the known rules?"""
    (project / "pyproject.toml").write_text('[tool.tapelab.lint]\nignore = ["TPL999"]\n')
    status, out, err = _run(capsys, project, "--config", project)
    assert status == 2 and out == ""
    assert "unknown lint rule 'TPL999'" in err and "TPL101 not-watched" in err and not err.strip().endswith('"')


def test_prefixes_select_a_family_as_ruff_does():
    """Does a prefix of rule numbers (`TPL`, `TPL1`, `TPL20`) name every rule whose number starts with it?"""
    from tapelab.lint.files import rules_named
    from tapelab.lint.model import RULES
    assert rules_named(["TPL"]) == frozenset(RULES)
    assert rules_named(["TPL2"]) == frozenset(c for c, r in RULES.items() if r.number.startswith("TPL2"))
    assert "not-watched" in rules_named(["tpl1"]) and "keras2-lr" not in rules_named(["TPL1"])
    with pytest.raises(KeyError, match="TPL9"):
        rules_named(["TPL9"])


def test_command_line_select_ignore_and_extend_select(project, capsys):
    """Do `--select` (replacing the configuration's), `--extend-select` and `--ignore` decide what runs?"""
    (project / "pyproject.toml").write_text('[tool.tapelab.lint]\nselect = ["TPL2"]\n')
    assert _run(capsys, project / "bad.py", "--config", project)[0] == 0  # TPL2 only: the tape rule is off
    assert _run(capsys, project / "bad.py", "--config", project, "--extend-select", "TPL101")[0] == 1
    assert _run(capsys, project / "bad.py", "--config", project, "--select", "TPL1")[0] == 1
    assert _run(capsys, project / "bad.py", "--config", project, "--select", "TPL1", "--ignore", "not-watched")[0] == 0
    status, _, err = _run(capsys, project / "bad.py", "--select", "TPL1,TPL999")
    assert status == 2 and "TPL999" in err


def test_unknown_key_in_config_is_a_usage_error_naming_it(project, capsys):
    """Does a misspelt key of `[tool.tapelab.lint]` exit 2 naming the key and the known ones, not pass silently?"""
    (project / "pyproject.toml").write_text('[tool.tapelab.lint]\nignores = ["not-watched"]\n')
    status, out, err = _run(capsys, project, "--config", project)
    assert status == 2 and out == "" and "'ignores'" in err and "exclude, ignore, per-file-ignores, select" in err


def test_exit_status_is_0_clean_1_findings_2_missing_path(project, capsys):
    """Is the exit status 0 on clean code, 1 on findings and 2 on a path that does not exist?"""
    assert _run(capsys, project / "good.py")[0] == 0
    status, out, _ = _run(capsys, project / "bad.py")
    assert status == 1 and "bad.py:4:22: TPL101 [not-watched]" in out and out.strip().endswith("1 finding")
    status, _, err = _run(capsys, project / "nowhere.py")
    assert status == 2 and "nowhere.py does not exist" in err


def _notebook(tmp_path, cells):
    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# title")] +
                                    [nbformat.v4.new_code_cell(c) for c in cells])
    path = tmp_path / "book.ipynb"
    nbformat.write(book, path)
    return path


def test_notebook_findings_name_the_cell_and_its_line(tmp_path, capsys):
    """Is a notebook finding placed by code cell and line in that cell, with cited lines mapped the same way?"""
    path = _notebook(tmp_path, ["%matplotlib inline\nx = tf.constant(3.0)",
                                "with tf.GradientTape() as tape:\n    y = x * x",
                                "print(1)\ng = tape.gradient(y, x)"])
    status, out, _ = _run(capsys, path, "--format", "json")
    (found,) = json.loads(out)
    assert status == 1 and (found["cell"], found["line"], found["code"]) == (3, 2, "not-watched")
    assert "(cell 1, line 2)" in found["message"]


def test_a_notebook_cell_that_does_not_parse_is_a_finding_and_the_others_are_linted(tmp_path, capsys):
    """Is a cell that does not parse a `syntax-error` finding at that cell, while the other cells are still
    linted?"""
    path = _notebook(tmp_path, ["def broken(:", BUGGY])
    status, out, err = _run(capsys, path)
    assert status == 1 and err == ""
    assert "book.ipynb:cell 1:1:12: TPL001 [syntax-error] error: does not parse" in out
    assert "cell 2:4:22: TPL101" in out


def test_json_output_parses_with_every_field(project, capsys):
    """Does `--format json` give a list of findings with path, line, column, rule, code, message and fix?"""
    (found,) = json.loads(_run(capsys, project / "bad.py", "--format", "json")[1])
    assert {"path", "cell", "line", "column", "rule", "code", "message", "fix"} <= found.keys()
    assert (found["line"], found["column"], found["rule"]) == (4, 22, "TPL101")


def test_github_output_is_workflow_annotation_syntax(project, capsys):
    """Is each `--format github` line an `::error file=...,line=...,col=...,title=...::message` command?"""
    lines = _run(capsys, project / "bad.py", "--format", "github")[1].strip().splitlines()
    assert len(lines) == 1
    assert re.fullmatch(r"::error file=[^,]+bad\.py,line=4,col=22,title=TPL101 not-watched::[^\n]+", lines[0])


def test_flake8_plugin_reports_as_flake8_expects():
    """Called as flake8 calls a tree plugin, does it yield (line, column, 'TPL... message', type) and keep
    tapelab's pragmas?"""
    import ast

    lines = BUGGY.splitlines(keepends=True)
    ((line, col, message, kind),) = Plugin(ast.parse(BUGGY), lines, "bad.py").run()
    assert (line, col, kind) == (4, 21, Plugin) and message.startswith("TPL101 ")
    quiet = BUGGY.replace("(y, x)\n", "(y, x)  # tapelab: ignore[TPL101]\n")
    assert list(Plugin(ast.parse(quiet), quiet.splitlines(keepends=True)).run()) == []


def test_flake8_entry_point_names_the_plugin():
    """Does pyproject.toml's `flake8.extension` entry point resolve to the plugin class, under a code prefix
    that every rule number starts with?"""
    import importlib
    import tomllib
    from pathlib import Path

    from tapelab.lint import RULES

    table = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    ((prefix, target),) = table["project"]["entry-points"]["flake8.extension"].items()
    module, name = target.split(":")
    assert getattr(importlib.import_module(module), name) is Plugin
    assert all(rule.number.startswith(prefix) for rule in RULES.values())


def test_lint_function_reads_a_checkers_student_function():
    """Does `lint_function` lint a function's own source (as an exercise checker would), and give nothing for
    a builtin whose source cannot be read?"""
    from tapelab.lint import lint_function

    def student(x):
        with tf.GradientTape() as tape:  # noqa: F821 (never run: only its source is read)
            y = np.square(x.numpy())  # noqa: F821
        return tape.gradient(y, x)

    assert [f.code for f in lint_function(student)] == ["numpy-in-path"]
    assert lint_function(len) == []
