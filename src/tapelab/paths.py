"""Where the course's parts live, relative to the repository (or an installed checkout)."""
from __future__ import annotations

from pathlib import Path

__all__ = ["REPO", "SOLUTIONS", "NOTEBOOKS", "GRADER", "assignment_names"]

REPO = Path(__file__).resolve().parents[2]
SOLUTIONS = REPO / "solutions"
NOTEBOOKS = REPO / "notebooks"
GRADER = REPO / "grader"


def assignment_names(solutions: Path = SOLUTIONS) -> list[str]:
    """The course's assignments: one per solution notebook, named like it (`01_basic_tape`)."""
    return sorted(p.stem for p in solutions.glob("[0-9][0-9]_*.ipynb"))
