"""What the hub's tests share: its paths, `make` and commands as a demo user (nbgrader's student commands and
answers written into a notebook among them), a browser log-in, and running a command the way a student's
notebook runs it (`in_server`: the user's own server's cgroups and mount namespace).
"""
from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "grader" / "hub"))
import build  # noqa: E402  (grader/hub: where the hub's parts live)
import limits  # noqa: E402

ACCOUNTS = REPO / "grader" / "hub" / "accounts.json"
RUN = build.ROOT / "run"
EXCHANGE = build.ROOT / "exchange"
GRADING = build.ROOT / "grading"
NOTEBOOK = "01_basic_tape"
TIMEOUT = 120_000  # ms: a server's first start imports JupyterLab and nbgrader on a busy machine
PYTHON = str(build.ENV / "bin" / "python")
STUDENT_ENV = {"JUPYTER_CONFIG_PATH": str(build.ROOT / "student-config"), "PATH": f"{build.ENV / 'bin'}:/usr/bin:/bin"}


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=REPO, capture_output=True, text=True)


def as_user(user: str, *command: str, cwd: Path | None = None, env: dict | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess:
    """`command` as `user` (runuser), from the user's home unless `cwd` says otherwise."""
    home = Path(pwd.getpwnam(user).pw_dir)
    prefix = ["env", *(f"{k}={v}" for k, v in env.items())] if env else []
    return subprocess.run(["runuser", "-u", user, "--", *prefix, *command], capture_output=True, text=True,
                          cwd=cwd or home, timeout=timeout)


def nbgrader(user: str, *args: str) -> None:
    """`nbgrader ARGS --course tapelab` as `user`, with the students' nbgrader settings."""
    result = as_user(user, str(build.ENV / "bin" / "nbgrader"), *args, "--course", "tapelab", env=STUDENT_ENV)
    assert result.returncode == 0, f"nbgrader {args} as {user}: {result.stdout}{result.stderr}"


def write_answers(user: str, notebook: Path, answers: dict[str, str]) -> None:
    """Write `answers` (grade id -> code) into the user's notebook as the user (what typing them in would save)."""
    script = ("import json, sys, nbformat\n"
              "path, answers = sys.argv[1], json.loads(sys.argv[2])\n"
              "nb = nbformat.read(path, as_version=4)\n"
              "for cell in nb.cells:\n"
              "    grade_id = cell.metadata.get('nbgrader', {}).get('grade_id')\n"
              "    if grade_id in answers:\n"
              "        cell.source = answers[grade_id].strip() + '\\n'\n"
              "nbformat.write(nb, path)\n")
    result = as_user(user, PYTHON, "-c", script, str(notebook), json.dumps(answers))
    assert result.returncode == 0, result.stderr


def log_in(context, url: str, person: dict):
    page = context.new_page()
    page.goto(f"{url}/hub/login")
    page.fill("#username_input", person["name"])
    page.fill("#password_input", person["password"])
    page.click("#login_submit")
    return page


def server_pid(user: str) -> int:
    """The pid of `user`'s running single-user server."""
    uid = pwd.getpwnam(user).pw_uid
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid \
                    and b"jupyterhub-singleuser" in (entry / "cmdline").read_bytes():
                return int(entry.name)
        except OSError:
            continue
    raise AssertionError(f"{user} has no running server")


def in_server(user: str, script: str, timeout: float = 180) -> subprocess.CompletedProcess:
    """Run Python `script` as `user` inside the user's server's cgroups and mount namespace: what code in a
    cell of the user's notebook runs as (a kernel is one more child of that server)."""
    pid = server_pid(user)

    def enter() -> None:
        for controller in ("memory", "pids", "cpu"):
            (limits.cgroup(controller, user) / "cgroup.procs").write_text(str(os.getpid()))

    return subprocess.run(["nsenter", "-t", str(pid), "-m", "--", "runuser", "-u", user, "--", PYTHON, "-c", script],
                          preexec_fn=enter, capture_output=True, text=True, timeout=timeout,
                          cwd=pwd.getpwnam(user).pw_dir)
