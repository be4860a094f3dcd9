"""The local place where notebooks execute: a process pool on this machine (the default).

A pool takes (tag, notebook JSON, Settings), runs `worker.execute`, and hands back
(tag, result) as executions finish; `cluster.DaskPool` does the same on a Dask cluster, so the
coordinator treats both alike. Pools never touch the gradebook.

Whatever happens to one execution (an exception in the worker, a result that cannot cross the
process boundary, a worker process that dies) ends as `infra_error` for that submission alone.
No process outlives the coordinator: each worker holds the read end of a pipe whose only writer is
the coordinator, and when it closes (the coordinator exited, was killed, or stopped the pool
early) the worker kills its kernels, removes their scratch folders and exits.

With warm kernels the workers share one zygote per set of preloaded modules (`warm.Zygote(shared=True)`),
started here at the first notebook that asks for it, whose address each such notebook's settings carry;
it ends with the coordinator (or at `close`), its kernels with it. One that died is started again, up to
warm.MAX_STARTS times in all; after that the dead one's address stays, so the workers start kernels cold.
"""
from __future__ import annotations

import dataclasses
import multiprocessing
import os
import pickle
import signal
import sys
import threading
from concurrent.futures import FIRST_COMPLETED, CancelledError, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Callable

from tapelab.grading.execution import warm, zygote
from tapelab.grading.execution.sandbox import SandboxError, environment_problem, kernel_start, probe, release_all
from tapelab.grading.execution.worker import Settings, execute, infra_error

__all__ = ["LocalPool", "run_task"]

RESUBMITS = 2  # a notebook whose worker process dies while it runs alone is run alone at most this often
Task = Callable[[str, Settings], dict]


def run_task(task: Task, nb_json: str, settings: Settings) -> dict:
    """`task(nb_json, settings)` in a worker, as a result that always crosses back: any exception,
    or a result that cannot be pickled and unpickled, becomes an infra_error naming it."""
    try:
        return pickle.loads(pickle.dumps(task(nb_json, settings)))
    except Exception as error:
        return infra_error(f"the worker failed: {type(error).__name__}: {error}"[:2000])


def _stop() -> None:
    warm.stop()  # no kernel is forked from here on; those forked die with the zygote
    release_all()  # kills this worker's kernels and removes their scratch folders
    os._exit(1)


def _watch(lifeline) -> None:
    """Initializer of each worker process: Ctrl-C is the coordinator's to handle; SIGTERM, or the
    coordinator's end of `lifeline` closing, stops this worker and its kernels."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: _stop())

    def wait_for_eof() -> None:
        try:
            lifeline.recv_bytes()  # nothing is ever sent: this returns only when the coordinator's end closes
        except (EOFError, OSError):
            pass
        _stop()

    threading.Thread(target=wait_for_eof, name="tapelab-lifeline", daemon=True).start()


class LocalPool:
    """`jobs` worker processes (forkserver, the worker module preloaded), each running `task`.

    A worker process that dies loses every execution of its pool; each lost one then runs again
    alone, in a pool of one, so only a notebook that kills its worker by itself is blamed for it."""

    def __init__(self, jobs: int, task: Task = execute):
        kernel_start()  # a bad TAPELAB_KERNELS stops the run before anything starts
        self.available = probe()
        problem = environment_problem()
        if problem:
            raise SandboxError(problem)
        self.jobs = max(1, jobs)
        self.capacity = self.jobs + 1  # one prepared notebook waits while the others run
        self.description = {"pool": "local", "jobs": self.jobs}
        self._task = task
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(["tapelab.grading.execution.pools"])
        self._lifeline, self._alive = self._context.Pipe(duplex=False)
        self._executor = self._new_executor(self.jobs)
        self._solo: ProcessPoolExecutor | None = None  # runs one suspect at a time
        self._pending: dict = {}  # future -> (tag, nb_json, settings, deaths alone, executor)
        self._suspects: list[tuple] = []  # lost with their pool, waiting to run alone
        self._zygotes: dict[tuple[str, ...], warm.Zygote] = {}  # the shared ones, by what each preloads
        self._zygote_starts = 0

    def _new_executor(self, workers: int) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=workers, mp_context=self._context, initializer=_watch,
                                   initargs=(self._lifeline,))

    def __len__(self) -> int:
        return len(self._pending) + len(self._suspects)

    def _shared_zygote(self, settings: Settings) -> Settings:
        """`settings` with the address of the shared zygote its notebook's kernel forks from (started if
        need be), or as they are where kernels do not start warm."""
        if not settings.sandbox.warm or self.available["warm"]:
            return settings
        preload = zygote.preload_for(settings.packages)
        made = self._zygotes.get(preload)
        if (made is None or not made.alive()) and self._zygote_starts < warm.MAX_STARTS:
            if made is not None:
                made.close()
            self._zygote_starts += 1
            try:
                made = self._zygotes[preload] = warm.Zygote(sys.executable, preload, shared=True)
            except warm.ZygoteError:
                return settings  # each worker starts its own
        return dataclasses.replace(settings, zygote=made.address) if made is not None else settings

    def submit(self, tag, nb_json: str, settings: Settings) -> None:
        settings = self._shared_zygote(settings)
        future = self._executor.submit(run_task, self._task, nb_json, settings)
        self._pending[future] = (tag, nb_json, settings, 0, self._executor)

    def _run_suspect(self) -> None:
        if self._suspects and not any(item[4] is self._solo for item in self._pending.values()):
            tag, nb_json, settings, deaths, _ = self._suspects.pop(0)
            settings = self._shared_zygote(settings)  # (the one it was given may have died with its worker)
            self._solo = self._solo or self._new_executor(1)
            self._pending[self._solo.submit(run_task, self._task, nb_json, settings)] = (
                tag, nb_json, settings, deaths, self._solo)

    def finished(self) -> list[tuple[object, dict]]:
        """Wait for at least one execution to end; its (tag, result) pairs (none when all were lost)."""
        self._run_suspect()
        done, _ = wait(self._pending, return_when=FIRST_COMPLETED)
        results = []
        for future in done:
            tag, nb_json, settings, deaths, executor = self._pending.pop(future)
            try:
                results.append((tag, future.result()))
            except (BrokenProcessPool, CancelledError):  # a worker process died: all its pool's work is lost
                alone = executor is self._solo
                if executor is self._executor:  # replaced once per breakage, not once per lost future
                    self._executor.shutdown(wait=False, cancel_futures=True)
                    self._executor = self._new_executor(self.jobs)
                elif alone:
                    self._solo.shutdown(wait=False, cancel_futures=True)
                    self._solo = None
                deaths += alone
                if deaths >= RESUBMITS:
                    results.append((tag, infra_error(f"the worker process died each of the {deaths} times this "
                                                     "notebook ran alone in it")))
                else:
                    self._suspects.append((tag, nb_json, settings, deaths, None))
            except Exception as error:  # anything else: this submission only
                results.append((tag, infra_error(f"the local pool failed: {type(error).__name__}: {error}")))
        self._run_suspect()
        return results

    def close(self) -> None:
        """Shut the workers down; with executions still running (the run was interrupted), stop them now."""
        if len(self):
            self._alive.close()
        for executor in (self._executor, self._solo):
            if executor is not None:
                executor.shutdown(wait=True, cancel_futures=True)
        self._alive.close()
        self._lifeline.close()
        for made in self._zygotes.values():
            made.close()
