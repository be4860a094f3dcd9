"""Where the course's parts live, relative to the repository (or an installed checkout)."""
from __future__ import annotations

import tomllib
from pathlib import Path

__all__ = ["REPO", "SOLUTIONS", "NOTEBOOKS", "GRADER", "assignment_names", "repository_of"]

REPO = Path(__file__).resolve().parents[2]
SOLUTIONS = REPO / "solutions"
NOTEBOOKS = REPO / "notebooks"
GRADER = REPO / "grader"


def assignment_names(solutions: Path = SOLUTIONS) -> list[str]:
    """The course's assignments: one per solution notebook, named like it (`01_basic_tape`)."""
    return sorted(p.stem for p in solutions.glob("[0-9][0-9]_*.ipynb"))


def repository_of(start: Path) -> Path | None:
    """The tapelab checkout holding `start` (itself or a parent with tapelab's pyproject.toml and solutions/),
    or None."""
    for folder in (start.resolve(), *start.resolve().parents):
        try:
            project = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
        except (OSError, ValueError):
            continue
        if project.get("name") == "tapelab" and (folder / "solutions").is_dir():
            return folder
    return None
