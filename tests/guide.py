"""docs/instructor-guide.md as a new instructor runs it: the ```bash blocks of a section, each run in a
fresh shell whose PATH lacks the venv until the guide's own first line (section 1) puts it there.

Commands that write into their checkout (`make release`, `git commit`, `tapelab grade` into grader/course/)
run in a throwaway `clone` of the repository, never in the one under test.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
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


def clone(target: Path) -> Path:
    """A throwaway checkout at `target`: a git clone of the repository's HEAD with the working tree's src/
    (the code under test) over it, its .venv the running venv (`checkout`).

    In it, `tapelab` must run the clone's own code, as a clone's own `make venv` would install it: the shells
    `run_as_written(..., repo=clone)` starts put its src/ and answers/src/ first on PYTHONPATH. Its lock and
    pyproject files are dated before the venv's `.installed` stamp, so `make` finds the venv built and never
    reinstalls the shared venv from the clone; that is checked here before any command runs."""
    subprocess.run(["git", "clone", "--shared", "-q", str(REPO), str(target)], check=True, timeout=120)
    shutil.rmtree(target / "src")
    shutil.copytree(REPO / "src", target / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    checkout(target)
    stamp = target / ".venv" / ".installed"
    if stamp.exists():
        built = stamp.stat().st_mtime - 60
        for name in ("requirements.lock", "pyproject.toml", "answers/pyproject.toml"):
            os.utime(target / name, (built, built))
    fresh = subprocess.run(["make", "-q", ".venv/.installed"], cwd=target, capture_output=True, timeout=60)
    if fresh.returncode != 0:
        raise RuntimeError(f"make would rebuild the running venv {sys.prefix} from {target} (no up-to-date "
                           ".installed stamp): build the venv with `make venv` first")
    return target


def _shell(block: str, home: Path, repo: Path | None) -> dict:
    """subprocess arguments running `block` after the guide's PATH line: in `repo` (a `clone`, whose src/ the
    shell's tapelab runs) when given, else in `home` after the PATH line ran in a checkout beside it."""
    env = fresh_env(home)
    if repo is None:
        venv = checkout(home.parent / f"{home.name}-checkout")
        script = f"cd {venv}\n{path_line()}\ncd {home}\n{block}"
    else:
        env["PYTHONPATH"] = os.pathsep.join(str(repo / part) for part in ("src", "answers/src"))  # as its make venv
        script = f"cd {repo}\n{path_line()}\n{block}"
    return {"args": ["bash", "-e", "-o", "pipefail", "-c", script], "cwd": home, "env": env}


def run_as_written(block: str, home: Path, timeout: int = 600, repo: Path | None = None) -> subprocess.CompletedProcess:
    """`block` in a fresh shell with HOME `home`, after the guide's PATH line (see `_shell`)."""
    return subprocess.run(**_shell(block, home, repo), capture_output=True, text=True, timeout=timeout)


def start_as_written(block: str, home: Path, log: Path, repo: Path | None = None) -> subprocess.Popen:
    """`block` started as `run_as_written` runs it, in a process group of its own, output to `log`; end it
    with `stop`."""
    with log.open("wb") as out:
        return subprocess.Popen(**_shell(block, home, repo), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def stop(process: subprocess.Popen, grace: float = 20) -> None:
    """Terminate `process`'s whole group (a server and its children), kill what is left after `grace` s, and
    return once no member is running."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            process.poll()  # reaps the shell
            if not _running(process.pid):
                return
            time.sleep(0.2)
    raise RuntimeError(f"process group {process.pid} still runs after SIGKILL")


def _running(group: int) -> list[int]:
    """The processes of process group `group` that are not zombies (read from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found
