"""The hub's build stamps (grader/hub/build.py): what the parts are made from, not where the checkout lies."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "grader" / "hub"))
import build  # noqa: E402


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
        return build.digest(root / "requirements.txt"), build.digest(root / "src")

    assert stamp(first) == stamp(second)
    (second / "src" / "pkg" / "__init__.py").rename(second / "src" / "pkg" / "main.py")
    assert stamp(second)[1] != stamp(first)[1]
    (second / "src" / "pkg" / "main.py").rename(second / "src" / "pkg" / "__init__.py")
    assert stamp(second) == stamp(first)
    (second / "src" / "pkg" / "__init__.py").write_text("X = 2\n")
    (second / "requirements.txt").write_text("tensorflow==2.22.0\n")
    assert stamp(second)[0] != stamp(first)[0] and stamp(second)[1] != stamp(first)[1]


def test_a_venv_without_uv_is_told_the_fix_and_the_built_env_is_left_alone(tmp_path: Path, monkeypatch, capsys) -> None:
    """When the hub's env must be (re)built but the checkout's venv has no uv beside its Python (a venv made
    before `make venv` installed it), does the build stop with one paragraph naming the fix, before it removes
    anything?"""
    env = tmp_path / "hub" / "env"
    env.mkdir(parents=True)
    (env / "kept").write_text("an env built earlier")
    (tmp_path / "old-venv" / "bin").mkdir(parents=True)
    monkeypatch.setattr(build, "ENV", env)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "old-venv" / "bin" / "python"))
    repo = _checkout(tmp_path / "c")
    (repo / "binder").mkdir()
    (repo / "binder" / "requirements.txt").write_text("tensorflow==2.21.0\n")
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    with pytest.raises(SystemExit) as stop:
        build.build_env(repo)
    assert stop.value.code == 1
    error = capsys.readouterr().err
    assert "uv is missing" in error and "make venv" in error and "Traceback" not in error, error
    assert (env / "kept").read_text() == "an env built earlier"
