"""The worker: a pure, picklable function from (notebook JSON, settings) to (executed JSON, facts).

It never touches the gradebook or the course folder, so it runs alike in the local process pool
and on a Dask worker on another machine. What depends on the machine (the interpreter, its
sys.path for the guard) is found out here, not sent by the coordinator. A machine that cannot
apply the protections the run asks for refuses to execute (never grades with less).
A kernel that fails to start (before any student code runs) is an infrastructure fault: it is
retried a bounded number of times with backoff, then reported. A run that stops early has the
hidden tests of its passed checks run in a replay (see `_replay`). `execute` never raises: any
unexpected exception becomes `infra_error` naming it, and it returns within the notebook timeout
plus `GRACE` seconds whatever the kernel does.

Kernels start warm where the sandbox allows it (`Sandbox.warm`, `probe()["warm"]`): forked from the
local pool's shared zygote (`Settings.zygote`), or else this worker process's own (`warm`), which paid
the TensorFlow import once (or, for a notebook that does not use TensorFlow, a light zygote that never
imports it). A warm start that fails
(before any student code) is retried at once as a cold start, never with less protection; the result
says which ran (`facts["kernel"]`, and `facts["warm_failed"]` with why), and so does a line on stderr.

In a course with per-student variants the coordinator sends only whose variant the checks test
(`Settings.variant`); the worker pins them (`pinned`, tapelab.release_variants.pin) before the kernel
starts, computing the hidden cases' expected values with the references here, in the worker process,
which the kernel's sandbox cannot read: the kernel receives them only in the graded test cells' source,
as it did when the coordinator pinned them (`facts["timing"]["pin"]` says what it cost).
"""
from __future__ import annotations

import asyncio
import compileall
import functools
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

import tapelab
from tapelab.grading.integrity import channel
from tapelab.grading.execution import warm, zygote
from tapelab.grading.execution.executor import GuardedClient
from tapelab.grading.execution.judge import RECORD, Judge
from tapelab.grading.execution.kernels import KernelStartError, SandboxKernelManager, kernel_env, kernel_sys_path
from tapelab.grading.execution.sandbox import KERNEL_ARGS, Sandbox, Slot, probe, unavailable

__all__ = ["Settings", "execute", "infra_error"]

START_ATTEMPTS = 3
GRACE = 60  # seconds beyond the notebook timeout: starting, retrying and stopping kernels, a replay
STOP_SECONDS = 20  # left for stopping the replay's kernel
REPLAY_MIN_SECONDS = 10  # a replay with less time than this is not started


@dataclass(frozen=True)
class Settings:
    cell_timeout: int
    notebook_timeout: int
    output_limit: int
    sandbox: Sandbox
    # The notebook's trusted tapelab imports, re-run by the guard's step around each graded
    # check; None runs no guard.
    restore_imports: tuple[str, ...] | None = None
    # The top-level packages the instructor's notebook imports (None: not known), which decide what a
    # warm kernel's zygote preloads (zygote.preload_for); what a student imports besides, the kernel imports.
    packages: frozenset[str] | None = None
    # (salt, student) in a course with per-student variants: the checks are pinned to that student's variant
    # here (`pinned`); None: the notebook is run as it came.
    variant: tuple[str, str] | None = None
    # The address of the local pool's shared zygote for this notebook's preload (warm.Joined); None: this
    # worker process's own zygote (a Dask worker's).
    zygote: str | None = None


@functools.lru_cache(maxsize=None)
def cache_bytecode() -> None:
    """Compile tapelab's modules next to their source, once per worker process. A kernel cannot write them
    (the sandbox shows it the Python environment read-only, and `kernel_env` sets PYTHONDONTWRITEBYTECODE),
    and in an editable install, or after a change, nothing else does: without them every kernel, and every
    guard step (which imports tapelab afresh from disk), compiles tapelab from source. Files up to date are
    only checked; a folder this process cannot write is left as it is (pip compiled an installed package)."""
    compileall.compile_dir(Path(tapelab.__file__).parent, quiet=2)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def infra_error(reason: str, seconds: float = 0.0, attempts: int = 0) -> dict:
    """The result of an execution that could not happen (no student code ran to completion)."""
    return {"nb": None, "facts": {"infra_error": reason, "attempts": attempts, "flags": []},
            "seconds": seconds, "worker": worker_name()}


def pinned(nb_json: str, salt: str, student: str) -> str:
    """`nb_json` with every check of an exercise that varies pinned to `student`'s variant, the expected values
    the references compute included (tapelab.release_variants.pin, imported here: it imports the exercises)."""
    from tapelab.release_variants import notebook_exercises, pin

    nb = nbformat.reads(nb_json, as_version=4)
    pin(nb, salt, student, notebook_exercises(nb))
    return nbformat.writes(nb)


async def _in_slot(nb: nbformat.NotebookNode, settings: Settings, timeout: int,
                   kernel: str) -> tuple[GuardedClient, int | None]:
    """Run `nb` in a fresh sandbox slot within `timeout` seconds, in a `kernel` ("warm" or "cold") kernel;
    the client (its kernel stopped) and the uid."""
    cache_bytecode()
    clock = time.monotonic()
    slot = Slot(settings.sandbox)
    seconds, client = time.monotonic() - clock, None
    try:
        km = SandboxKernelManager(transport="ipc", connection_file=str(slot.scratch / "kernel.json"))
        max_frame = max(settings.output_limit, 1 << 20)
        if kernel == "warm":
            forked = warm.provisioner(slot, zygote.preload_for(settings.packages), settings.zygote)
            km.configure([sys.executable, *KERNEL_ARGS], slot.give, max_frame, provisioner=forked)
        else:
            km.configure(slot.argv(sys.executable), slot.give, max_frame)
        session = None
        if settings.restore_imports is not None:
            session = channel.Session(list(settings.restore_imports), list(kernel_sys_path()))
        judge = None
        if settings.restore_imports:  # the checks' verdicts: in a judge the zygote forks (warm), else here
            preload = zygote.preload_for(settings.packages)
            judge = Judge(list(settings.restore_imports),
                          functools.partial(warm.judge, preload, settings.zygote) if kernel == "warm" else None)
        client = GuardedClient(nb, km, cell_timeout=min(settings.cell_timeout, timeout), notebook_timeout=timeout,
                               output_limit=settings.output_limit, guard=session, judge=judge)
        env = kernel_env(slot.scratch, sys.executable)
        if judge is not None:
            env[RECORD] = "1"  # the checks record their runs for the judge (tapelab.checker.replay)
        await client.run(cwd=str(slot.scratch), env=env)
        return client, slot.uid
    finally:
        clock = time.monotonic()
        slot.release()
        if client is not None:  # making and removing the uid's scratch folder
            client.facts["timing"]["slot"] = seconds + time.monotonic() - clock


async def _replay(nb_json: str, settings: Settings, client: GuardedClient, bound: float, kernel: str) -> None:
    """The hidden tests of checks that passed before the run stopped (a later cell died, flooded or
    ran out of time): a fresh kernel replays the cells before the stop, then those hidden tests.
    Nothing of the replay is kept but those verdicts, so no output follows hidden-test source."""
    unchecked = client.unchecked()
    if not unchecked:
        return
    budget = min(settings.notebook_timeout, int(bound - time.monotonic() - STOP_SECONDS))
    if budget < REPLAY_MIN_SECONDS:
        client.facts["flags"].append(f"no time was left to replay the cells before the stop for the hidden tests "
                                     f"of {len(unchecked)} passed check(s): they score 0")
        return
    prefix = nbformat.reads(nb_json, as_version=4)
    prefix.cells = prefix.cells[: client.facts["stopped_at"]]
    replay, _ = await _in_slot(prefix, settings, budget, kernel)
    client.adopt(replay, unchecked)
    client.facts["flags"].append(f"the hidden tests of {len(unchecked)} check(s) passed before the stop ran in a "
                                 "replay of the cells before it (its outputs discarded)")


async def _run_once(nb_json: str, settings: Settings, bound: float,
                    kernel: str) -> tuple[nbformat.NotebookNode, dict]:
    client, uid = await _in_slot(nbformat.reads(nb_json, as_version=4), settings, settings.notebook_timeout, kernel)
    await _replay(nb_json, settings, client, bound, kernel)
    client.mark_not_run()
    facts = dict(client.facts)
    facts["replies"] = {str(k): v for k, v in client.replies.items()}
    facts["output_bytes"] = client.output_bytes
    facts["messages"] = client.messages
    facts["sandbox_uid"] = uid
    return client.nb, facts


def execute(nb_json: str, settings: Settings) -> dict:
    """Execute a sanitized notebook. Returns {"nb": executed JSON or None, "facts": {...},
    "seconds": s, "worker": "host:pid"}; never raises.

    `facts["infra_error"]` is set when this machine cannot apply the run's protections, the
    kernel could not be started after the retries, or the worker itself failed.
    """
    start = time.monotonic()
    try:
        return _execute(nb_json, settings, start)
    except (Exception, asyncio.CancelledError) as error:  # a fault of the grader: that submission only
        return infra_error(f"the worker failed: {type(error).__name__}: {error}", time.monotonic() - start)


def _execute(nb_json: str, settings: Settings, start: float) -> dict:
    missing = unavailable(settings.sandbox)
    if missing:
        return infra_error(f"worker {worker_name()} cannot apply this run's protections ({'; '.join(missing)}): "
                           "run every worker as root on Linux with util-linux (unshare, setpriv, prlimit)")
    bound = start + settings.notebook_timeout + GRACE
    pin_seconds = 0.0
    if settings.variant is not None:
        try:
            nb_json = pinned(nb_json, *settings.variant)
        except Exception as error:  # no student code ran: the references are missing or failed here
            return infra_error(f"worker {worker_name()} could not pin the checks to the student's variant "
                               f"({type(error).__name__}: {error})", time.monotonic() - start)
        pin_seconds = time.monotonic() - start
    kernel = "warm" if settings.sandbox.warm and not probe()["warm"] else "cold"
    error, warm_failed = "", None
    for attempt in range(START_ATTEMPTS + (kernel == "warm")):
        if time.monotonic() >= bound:
            break
        try:
            executed, facts = asyncio.run(asyncio.wait_for(_run_once(nb_json, settings, bound, kernel),
                                                           bound - time.monotonic()))
        except KernelStartError as failure:
            error = str(failure)
            if kernel == "warm":  # the same sandbox, started cold: never less protection
                kernel, warm_failed = "cold", error
                print(f"tapelab grade: warning: worker {worker_name()}: a warm kernel did not start ({error[:500]}); "
                      "this notebook runs in a cold kernel", file=sys.stderr, flush=True)
                continue
            time.sleep(min(2 ** attempt, max(0.0, bound - time.monotonic())))
            continue
        except asyncio.TimeoutError:
            return infra_error(f"the execution did not end within {settings.notebook_timeout + GRACE} s (the "
                               "grader's own time bound; the kernel was killed): rerun `tapelab grade`",
                               time.monotonic() - start, attempt + 1)
        facts.update(attempts=attempt + 1, kernel=kernel)
        if settings.variant is not None:
            facts["timing"]["pin"] = pin_seconds
        if warm_failed is not None:
            facts["warm_failed"] = warm_failed
        return {"nb": nbformat.writes(executed), "facts": facts, "seconds": time.monotonic() - start,
                "worker": worker_name()}
    return infra_error(error, time.monotonic() - start, attempt + 1)
