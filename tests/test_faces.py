"""Package faces (`tapelab.lazy.face`): every public name resolves to its module's object, and nothing more."""
import importlib
import subprocess
import sys

import pytest

FACES = ["tapelab", "tapelab.checker", "tapelab.grading", "tapelab.grading.intake", "tapelab.grading.prepare",
         "tapelab.grading.execution", "tapelab.grading.integrity", "tapelab.grading.grades",
         "tapelab.grading.handback", "tapelab.grading.insight"]


@pytest.mark.parametrize("name", FACES)
def test_every_public_name_resolves(name):
    """Does each name of `__all__` load, is it the defining module's own object, and does `dir()` list it?"""
    package = importlib.import_module(name)
    for public in package.__all__:
        value = getattr(package, public)
        home = getattr(value, "__module__", None)  # classes and functions; a constant has none
        assert home is None or getattr(sys.modules[home], public) is value
        assert public in dir(package)
    with pytest.raises(AttributeError, match=f"module '{name}' has no attribute 'not_there'"):
        package.not_there  # noqa: B018


def test_importing_tapelab_imports_nothing_of_it():
    """Does `import tapelab` load no module of tapelab but the face itself, and no NumPy?"""
    code = "import sys, tapelab; print(sorted(m for m in sys.modules if m.startswith(('tapelab', 'numpy'))))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['tapelab', 'tapelab.lazy']"
