"""The instructor guide runs as written from a fresh shell: its first command puts the venv on PATH, and
every command its sections name is found after it (sections 1, 3, 4 and 6 are run by tests/test_guide_sections.py,
7 and 8 whole by tests/grading/test_two_days.py and tests/grading/insight/test_insight.py, through
`guide.run_as_written`)."""
from __future__ import annotations

import re
import subprocess

from guide import GUIDE, blocks, fresh_env, path_line, run_as_written

_KEYWORDS = {"for", "do", "done", "in", "cd", "export", "then", "fi", "if"}


def _commands() -> set[str]:
    """The program each command line of the guide's sections 1-8 starts (``` bash and text blocks), but
    `sudo` lines, which name another machine's administration (the database server, a JupyterHub)."""
    text = GUIDE.read_text()
    words = set()
    for heading in re.findall(r"^## \d\. .*$", text, re.M):
        for block in blocks(heading) + blocks(heading, fence="text"):
            for line in block.splitlines():
                line = line.split("#", 1)[0].strip()
                if not line or line.startswith("sudo "):
                    continue
                for part in re.split(r"&&|;|\|", line):
                    first = part.split()[:1]
                    if first and first[0] not in _KEYWORDS and "=" not in first[0]:
                        words.add(first[0])
    return words


def test_the_first_command_puts_the_venv_on_path():
    """Is the guide's first block the one PATH line, and does a fresh shell lack tapelab until it runs?"""
    assert path_line() == 'export PATH="$PWD/.venv/bin:$PATH"'
    assert GUIDE.read_text().index(path_line()) < GUIDE.read_text().index("make release")
    bare = subprocess.run(["bash", "-c", "command -v tapelab"], env=fresh_env(GUIDE.parent), capture_output=True)
    assert bare.returncode != 0


def test_every_command_of_the_guide_is_found_after_it(tmp_path):
    """Is every program the guide's sections start (tapelab, nbgrader, jupyter, make, git) on PATH in a
    fresh shell after the guide's first line?"""
    commands = _commands()
    assert {"tapelab", "nbgrader", "jupyter", "make", "git"} <= commands, commands
    found = run_as_written("\n".join(f"command -v {word}" for word in sorted(commands)), tmp_path)
    assert found.returncode == 0, found.stdout + found.stderr
    assert len(found.stdout.splitlines()) == len(commands)
