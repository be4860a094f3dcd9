"""A verb whose packages are not installed ends in one line naming the package and the `course` extra
(the clean-venv proof with the real verbs: tests/lint/test_light_install.py); a missing module of tapelab's
own is a bug and stays a traceback."""
import importlib
import sys
import types

import pytest

from tapelab.cli import main
from tapelab.cli.main import VERBS


@pytest.fixture(autouse=True)
def probe_verb(monkeypatch):
    """A verb `probe MODULE` that imports MODULE when it runs, as a course verb imports its packages."""
    module = types.ModuleType("tapelab.cli.probe")
    module.add_arguments = lambda parser: parser.add_argument("module")
    module.run = lambda args: importlib.import_module(args.module) and 0
    monkeypatch.setitem(sys.modules, "tapelab.cli.probe", module)
    monkeypatch.setitem(VERBS, "probe", ("probe", "import MODULE"))


def test_a_missing_package_names_the_course_extra(capsys):
    """Does a package the verb needs that is not installed exit 2 with one line naming it and the fix?"""
    assert main(["probe", "a_course_package.api"]) == 2
    said = capsys.readouterr().err
    assert said == ("tapelab probe: needs the package `a_course_package`, which is not installed: install the "
                    "course's dependencies with `pip install 'tapelab[course]'` (or `make venv` in a clone); "
                    "`tapelab lint` alone needs none\n")


def test_a_missing_module_of_tapelab_stays_a_traceback():
    """Is a module of tapelab's own that does not exist re-raised, not mistaken for a missing install?"""
    with pytest.raises(ModuleNotFoundError, match="tapelab.no_such_stage"):
        main(["probe", "tapelab.no_such_stage"])
