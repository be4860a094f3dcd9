"""The worker: a pure, picklable function from (notebook JSON, settings) to (executed JSON, facts).

It never touches the gradebook or the course folder, so it runs alike in the local process pool
and on a Dask worker on another machine. What depends on the machine (the interpreter, its
sys.path for the guard's restore step) is found out here, not sent by the coordinator. A machine
that cannot apply the protections the run asks for refuses to execute (never grades with less).
A kernel that fails to start (before any student code runs) is an infrastructure fault: it is
retried a bounded number of times with backoff, then reported.
"""
from __future__ import annotations

import asyncio
import functools
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from tapelab.grading import guard
from tapelab.grading.executor import GuardedClient, KernelStartError, SandboxKernelManager
from tapelab.grading.sandbox import Sandbox, Slot, unavailable

__all__ = ["Settings", "execute", "kernel_sys_path", "infra_error"]

START_ATTEMPTS = 3


@dataclass(frozen=True)
class Settings:
    cell_timeout: int
    notebook_timeout: int
    output_limit: int
    sandbox: Sandbox
    # The notebook's trusted tapelab imports, re-run by the guard's restore step before each
    # graded test cell; None skips the restore step.
    restore_imports: tuple[str, ...] | None = None


@functools.lru_cache(maxsize=None)
def kernel_sys_path(python: str = sys.executable) -> tuple[str, ...]:
    """The kernel interpreter's sys.path, without the working folder (which the student can write)."""
    out = subprocess.run([python, "-c", "import sys, json; print(json.dumps(sys.path))"],
                         capture_output=True, text=True, check=True, cwd="/", env={"PATH": "/usr/bin:/bin"})
    return tuple(p for p in json.loads(out.stdout) if p not in ("", "/", "."))


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def infra_error(reason: str, seconds: float = 0.0, attempts: int = 0) -> dict:
    """The result of an execution that could not happen (no student code ran to completion)."""
    return {"nb": None, "facts": {"infra_error": reason, "attempts": attempts, "flags": []},
            "seconds": seconds, "worker": worker_name()}


def kernel_env(scratch: Path, python: str) -> dict[str, str]:
    """A minimal environment: nothing of the grader's (database URLs, tokens) reaches student code."""
    return {
        "PATH": f"{Path(python).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(scratch), "IPYTHONDIR": str(scratch / ".ipython"), "MPLCONFIGDIR": str(scratch / ".mpl"),
        "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TMPDIR": "/tmp",
        "TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0",
        "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1", "NBGRADER_EXECUTION": "autograde",
    }


async def _run_once(nb: nbformat.NotebookNode, settings: Settings) -> tuple[nbformat.NotebookNode, dict]:
    slot = Slot(settings.sandbox)
    try:
        km = SandboxKernelManager(transport="ipc", connection_file=str(slot.scratch / "kernel.json"))
        km.configure(slot.argv(sys.executable), slot.give)
        restore = None
        if settings.restore_imports is not None:
            restore = guard.restore_code(list(settings.restore_imports), list(kernel_sys_path()))
        client = GuardedClient(nb, km, cell_timeout=settings.cell_timeout,
                               notebook_timeout=settings.notebook_timeout,
                               output_limit=settings.output_limit, restore=restore)
        env = kernel_env(slot.scratch, sys.executable)
        await client.run(cwd=str(slot.scratch), env=env)
        client.mark_not_run()
        facts = dict(client.facts)
        facts["replies"] = {str(k): v for k, v in client.replies.items()}
        facts["output_bytes"] = client.output_bytes
        facts["sandbox_uid"] = slot.uid
        return client.nb, facts
    finally:
        slot.release()


def execute(nb_json: str, settings: Settings) -> dict:
    """Execute a sanitized notebook. Returns {"nb": executed JSON or None, "facts": {...},
    "seconds": s, "worker": "host:pid"}.

    `facts["infra_error"]` is set when this machine cannot apply the run's protections, or the
    kernel could not be started after the retries.
    """
    start = time.monotonic()
    missing = unavailable(settings.sandbox)
    if missing:
        return infra_error(f"worker {worker_name()} cannot apply this run's protections ({'; '.join(missing)}): "
                           "run every worker as root on Linux with util-linux (unshare, setpriv, prlimit)")
    error = ""
    for attempt in range(START_ATTEMPTS):
        nb = nbformat.reads(nb_json, as_version=4)
        try:
            executed, facts = asyncio.run(_run_once(nb, settings))
        except KernelStartError as failure:
            error = str(failure)
            time.sleep(2 ** attempt)
            continue
        facts["attempts"] = attempt + 1
        return {"nb": nbformat.writes(executed), "facts": facts, "seconds": time.monotonic() - start,
                "worker": worker_name()}
    return infra_error(error, time.monotonic() - start, START_ATTEMPTS)
