"""`tapelab` starts at once: the verb table imports only the chosen verb, and the light verbs load no heavy package.

Import sets, not times (bench/cli.py measures the times against `python -c pass`).
"""
import json
import subprocess
import sys

import pytest

from tapelab.cli import main
from tapelab.cli.main import VERBS
from tapelab.lint import RULES, find_rule

HEAVY = ("tensorflow", "keras", "numpy", "nbgrader", "nbconvert", "nbformat", "jsonschema", "sqlalchemy", "IPython",
         "dask", "tapelab.grading", "tapelab.checker", "tapelab.diagnose")
# What `tapelab lint` may load beyond the standard library: the package face, the two verb-table modules, and
# the linter with the two modules of tapelab it imports (tests/test_layers.py), and the printable form of errors.
LINT_MODULES = {"tapelab", "tapelab.lazy", "tapelab.cli", "tapelab.cli.main", "tapelab.cli.lint", "tapelab.causes",
                "tapelab.errors", "tapelab.lint", "tapelab.outside"}
PROBE = """
import sys
before = set(sys.modules)
import json
from tapelab.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as stop:
    code = stop.code
print(json.dumps({"code": code, "modules": sorted(sys.modules), "new": sorted(set(sys.modules) - before)}),
      file=sys.stderr)
"""


def _probe(*args: str) -> dict:
    """`tapelab ARGS` in a fresh interpreter: its exit status ("code"), every module in sys.modules afterwards
    ("modules") and those the interpreter had not loaded before tapelab ran ("new")."""
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120)
    return json.loads(done.stderr.strip().splitlines()[-1])


def _loaded(*args: str) -> tuple[int, list[str]]:
    """(exit status, every module in sys.modules afterwards) of `tapelab ARGS` in a fresh interpreter."""
    report = _probe(*args)
    return report["code"], report["modules"]


@pytest.fixture(scope="module")
def lint_target(tmp_path_factory):
    path = tmp_path_factory.mktemp("lint") / "step.py"
    path.write_text("import tensorflow as tf\nx = tf.constant(3.0)\nwith tf.GradientTape() as tape:\n"
                    "    y = x * x\nprint(tape.gradient(y, x))\n")
    return path


@pytest.mark.parametrize("args", [["--help"], ["lint", "--help"], ["lint", "LINT_TARGET"],
                                  ["lint", "--explain", "TPL101"]])
def test_light_commands_import_no_heavy_package(args, lint_target):
    """Does `tapelab --help`, `lint --help`, `lint FILE` or `lint --explain` leave TensorFlow, NumPy, nbgrader,
    nbformat, jsonschema, SQLAlchemy, IPython, Dask and tapelab's grading stack, checker and diagnose unloaded?"""
    code, modules = _loaded(*[str(lint_target) if a == "LINT_TARGET" else a for a in args])
    assert code == (1 if args == ["lint", "LINT_TARGET"] else 0)  # the file's finding exits 1
    heavy = [m for m in modules if m in HEAVY or m.startswith(tuple(f"{h}." for h in HEAVY))]
    assert heavy == []


@pytest.mark.parametrize("fmt", ["text", "sarif"])
def test_lint_file_loads_only_the_standard_library_and_the_linter(fmt, lint_target):
    """Is every module `tapelab lint FILE` loads (text or SARIF) a standard library module, or the linter and
    what it imports of tapelab: no third-party package at all, heavy or not?"""
    report = _probe("lint", "--format", fmt, str(lint_target))
    assert report["code"] == 1
    other = [m for m in report["new"] if m.split(".")[0] not in sys.stdlib_module_names and m not in LINT_MODULES
             and not m.startswith("tapelab.lint.")]
    assert other == []


def test_help_imports_no_verb_module():
    """Is the top-level help built from the table alone, without importing any verb's module?"""
    _, modules = _loaded("--help")
    assert [m for m in modules if m.startswith("tapelab.cli.") and m not in ("tapelab.cli.main",)] == []


@pytest.mark.parametrize("verb", list(VERBS))
def test_every_verb_has_its_arguments_and_help(verb, capsys):
    """Does each verb of the table import, add its arguments and print its own help (naming its options)?"""
    with pytest.raises(SystemExit) as stop:
        main([verb, "--help"])
    assert stop.value.code == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"usage: tapelab {verb}") and "--" in shown.split("options:", 1)[1]


@pytest.mark.parametrize("name", ["TPL101", "tpl110", "tape-not-released"])
def test_explain_prints_the_rules_documentation(name, capsys):
    """Does `tapelab lint --explain RULE` (by number, in any case, or by code) print what docs/lint.md gives
    for that rule, and exit 0?"""
    assert main(["lint", "--explain", name]) == 0
    assert capsys.readouterr().out == find_rule(name).explanation()


def test_explain_an_unknown_rule_is_a_usage_error(capsys):
    """Does an unknown rule exit 2 with one line that lists every rule?"""
    assert main(["lint", "--explain", "TPL999"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("tapelab lint: unknown lint rule 'TPL999'") and all(r.number in said for r in RULES.values())
