"""docs/instructor-guide.md as a new instructor runs it: the ```bash blocks of a section, each run in a
fresh shell whose PATH lacks the venv until the guide's own first line (section 1) puts it there."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tapelab.paths import REPO

GUIDE = REPO / "docs" / "instructor-guide.md"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"  # a fresh login shell's, without the venv


def blocks(heading: str, fence: str = "bash") -> list[str]:
    """The fenced blocks of the section that starts with `heading`, in order."""
    text = GUIDE.read_text()
    section = text[text.index(heading):]
    section = section[:section.find("\n## ", 1)] if "\n## " in section[1:] else section
    return re.findall(rf"```{fence}\n(.*?)```", section, re.S)


def path_line() -> str:
    """The guide's first command: the one that puts the venv's bin/ on PATH."""
    return blocks("## 1. Release")[0].strip()


def checkout(root: Path) -> Path:
    """A folder standing for the checkout: its .venv is the venv running the tests."""
    root.mkdir(exist_ok=True)
    if not (root / ".venv").exists():
        (root / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    return root


def fresh_env(home: Path) -> dict[str, str]:
    """A new shell's environment: the system PATH only, HOME set, TensorFlow quiet; PYTHONPATH kept (the
    source under test)."""
    keep = {k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "LANG", "LC_ALL", "TMPDIR", "USER")}
    return {**keep, "PATH": SYSTEM_PATH, "HOME": str(home), "TF_CPP_MIN_LOG_LEVEL": "2",
            "TF_ENABLE_ONEDNN_OPTS": "0"}


def run_as_written(block: str, home: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    """`block` in a fresh shell in `home`, after the guide's PATH line run in a checkout beside it."""
    venv = checkout(home.parent / f"{home.name}-checkout")
    script = f"cd {venv}\n{path_line()}\ncd {home}\n{block}"
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=home, env=fresh_env(home),
                          capture_output=True, text=True, timeout=timeout)
