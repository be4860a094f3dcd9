"""One zygote per local pool (issue 55): the pool starts it, every worker forks its kernels (and its judge) from
it over a connection of its own, and what was forked for a worker that is gone dies with that connection.

The notebooks here import nothing of TensorFlow, so the zygote is the light one (`zygote.LIGHT`): seconds, not
the TensorFlow import.
"""
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tapelab.grading.execution import pools, warm, worker, zygote as zygote_module
from tapelab.grading.execution.sandbox import Sandbox

pytestmark = pytest.mark.heavy(40)  # seconds, about: scheduled first (tests/conftest.py)

BOOT = "zygote.serve("  # in the command line of every zygote (warm._BOOT)


def _zygotes_under(ancestor: int) -> dict[int, int]:
    """{pid: parent pid} of every running zygote that descends from process `ancestor`."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().decode(errors="replace")
            status = (entry / "status").read_text()
        except OSError:
            continue
        if BOOT not in command or re.search(r"^State:\s+Z", status, re.M):
            continue
        parent = int(re.search(r"^PPid:\s+(\d+)", status, re.M).group(1))
        chain = parent
        while chain > 1 and chain != ancestor:
            try:
                chain = int(re.search(r"^PPid:\s+(\d+)", Path(f"/proc/{chain}/status").read_text(), re.M).group(1))
            except OSError:
                break
        if chain == ancestor:
            found[int(entry.name)] = parent
    return found


def _live(pid: int) -> bool:
    try:
        return not re.search(r"^State:\s+Z", Path(f"/proc/{pid}/status").read_text(), re.M)
    except OSError:
        return False


def test_the_workers_of_a_local_pool_fork_their_kernels_from_one_zygote_that_ends_with_the_pool():
    """Are the warm kernels of both workers of a pool forked from one zygote, started by the pool's own
    process (not one per worker), and does that zygote end when the pool closes?"""
    warm.stop()
    assert not _zygotes_under(os.getpid())
    settings = worker.Settings(60, 120, 10**7, Sandbox(isolate=True, rlimits=True, kernels="warm"),
                               packages=frozenset({"json"}))
    notebook = nbformat.writes(new_notebook(cells=[new_code_cell("import json\nprint(json.dumps({'x': 1}))")]))
    pool = pools.LocalPool(2)
    try:
        for tag in range(4):
            pool.submit(tag, notebook, settings)
        results = []
        while len(pool):
            results += pool.finished()
        running = _zygotes_under(os.getpid())
    finally:
        pool.close()
    assert sorted(tag for tag, _ in results) == [0, 1, 2, 3]
    assert {result["facts"].get("kernel") for _, result in results} == {"warm"}, [r["facts"] for _, r in results]
    assert len({result["worker"] for _, result in results}) == 2, "both workers should have graded"
    assert list(running.values()) == [os.getpid()], running  # one zygote, this process's child
    (shared,) = running
    for _ in range(100):
        if not _live(shared):
            break
        time.sleep(0.1)
    assert not _live(shared), "the pool's zygote outlived the pool"


ORPHAN = """
import os, signal, sys
from tapelab.grading.execution import warm
joined = warm.Joined(sys.argv[1])
print(joined.ask({"op": "judge"})["pid"], flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_what_a_shared_zygote_forked_for_a_worker_dies_with_that_workers_connection():
    """When a worker that joined a pool's zygote is killed (no clean-up of its own), is the judge the zygote
    forked for it killed and reaped, while the zygote goes on serving the other workers?"""
    shared = warm.Zygote(sys.executable, zygote_module.LIGHT, shared=True)
    try:
        killed = subprocess.run([sys.executable, "-c", ORPHAN, shared.address], capture_output=True, text=True,
                                timeout=300)
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
        judge = int(killed.stdout.split()[0])
        for _ in range(100):
            if not Path(f"/proc/{judge}").exists():  # killed and reaped by the zygote: not even a zombie
                break
            time.sleep(0.1)
        assert not Path(f"/proc/{judge}").exists(), "the judge outlived its worker's connection"
        other = warm.Joined(shared.address)
        try:
            assert other.facts["pid"] == shared.process.pid
            answer = other.ask({"op": "judge"})
            assert _live(answer["pid"])
        finally:
            other.close()
    finally:
        shared.close()
