"""The hub's build stamps (grader/hub/build.py): what the parts are made from, not where the checkout lies."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "grader" / "hub"))
from build import digest  # noqa: E402


def _checkout(root: Path) -> Path:
    (root / "src" / "pkg" / "__pycache__").mkdir(parents=True)
    (root / "src" / "pkg" / "__init__.py").write_text("X = 1\n")
    (root / "src" / "pkg" / "__pycache__" / "x.pyc").write_bytes(b"compiled here")
    (root / "requirements.txt").write_text("tensorflow==2.21.0\n")
    return root


def test_another_clone_of_the_same_code_has_the_same_stamp(tmp_path: Path) -> None:
    """Does a clone elsewhere (a fresh temporary folder, as CI and the 0700 check use) find the hub's parts
    built, whatever its bytecode, and does a changed file, a renamed file or a changed pin still rebuild?"""
    first = _checkout(tmp_path / "one" / "c")
    second = tmp_path / "two" / "deeper" / "c"
    shutil.copytree(first, second)
    (second / "src" / "pkg" / "__pycache__" / "x.pyc").write_bytes(b"compiled elsewhere")

    def stamp(root: Path) -> tuple[str, str]:
        return digest(root / "requirements.txt"), digest(root / "src")

    assert stamp(first) == stamp(second)
    (second / "src" / "pkg" / "__init__.py").rename(second / "src" / "pkg" / "main.py")
    assert stamp(second)[1] != stamp(first)[1]
    (second / "src" / "pkg" / "main.py").rename(second / "src" / "pkg" / "__init__.py")
    assert stamp(second) == stamp(first)
    (second / "src" / "pkg" / "__init__.py").write_text("X = 2\n")
    (second / "requirements.txt").write_text("tensorflow==2.22.0\n")
    assert stamp(second)[0] != stamp(first)[0] and stamp(second)[1] != stamp(first)[1]
