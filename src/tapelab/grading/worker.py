"""The worker: a pure, picklable function from (notebook JSON, settings) to (executed JSON, facts).

It never touches the gradebook or the course folder, so it can run in a process pool today and
on a Dask worker tomorrow. A kernel that fails to start (before any student code runs) is an
infrastructure fault: it is retried a bounded number of times with backoff, then reported.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from tapelab.grading.executor import GuardedClient, KernelStartError, SandboxKernelManager
from tapelab.grading.sandbox import Sandbox, Slot

__all__ = ["Settings", "execute", "kernel_sys_path"]

START_ATTEMPTS = 3


@dataclass(frozen=True)
class Settings:
    cell_timeout: int
    notebook_timeout: int
    output_limit: int
    sandbox: Sandbox
    restore: str | None = None  # the guard's restore step, or None to skip it
    python: str = sys.executable


def kernel_sys_path(python: str = sys.executable) -> list[str]:
    """The kernel interpreter's sys.path, without the working folder (which the student can write)."""
    out = subprocess.run([python, "-c", "import sys, json; print(json.dumps(sys.path))"],
                         capture_output=True, text=True, check=True, cwd="/", env={"PATH": "/usr/bin:/bin"})
    return [p for p in json.loads(out.stdout) if p not in ("", "/", ".")]


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
        km.configure(slot.argv(settings.python), slot.give)
        client = GuardedClient(nb, km, cell_timeout=settings.cell_timeout,
                               notebook_timeout=settings.notebook_timeout,
                               output_limit=settings.output_limit, restore=settings.restore)
        env = kernel_env(slot.scratch, settings.python)
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
    """Execute a sanitized notebook. Returns {"nb": executed JSON or None, "facts": {...}, "seconds": s}.

    `facts["infra_error"]` is set when the kernel could not be started after the retries.
    """
    start = time.monotonic()
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
        return {"nb": nbformat.writes(executed), "facts": facts, "seconds": time.monotonic() - start}
    return {"nb": None, "facts": {"infra_error": error, "attempts": START_ATTEMPTS, "flags": []},
            "seconds": time.monotonic() - start, "pid": os.getpid()}
