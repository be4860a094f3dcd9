"""The local place where notebooks execute: a process pool on this machine (the default).

A pool takes (tag, notebook JSON, Settings), runs `worker.execute`, and hands back
(tag, result) as executions finish; `cluster.DaskPool` does the same on a Dask cluster, so the
coordinator treats both alike. Pools never touch the gradebook.
"""
from __future__ import annotations

import multiprocessing
from concurrent.futures import FIRST_COMPLETED, CancelledError, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from tapelab.grading.sandbox import probe
from tapelab.grading.worker import Settings, execute, infra_error

__all__ = ["LocalPool"]

RESUBMITS = 2  # an execution whose worker process died is run again at most this often


class LocalPool:
    """`jobs` worker processes (forkserver, the worker module preloaded)."""

    def __init__(self, jobs: int):
        self.jobs = max(1, jobs)
        self.capacity = self.jobs + 1  # one prepared notebook waits while the others run
        self.available = probe()
        self.description = {"pool": "local", "jobs": self.jobs}
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(["tapelab.grading.worker"])
        self._generation = 0
        self._executor = self._new_executor()
        self._pending: dict = {}  # future -> (tag, nb_json, settings, resubmits, generation)

    def _new_executor(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=self.jobs, mp_context=self._context)

    def __len__(self) -> int:
        return len(self._pending)

    def submit(self, tag, nb_json: str, settings: Settings, resubmits: int = 0) -> None:
        future = self._executor.submit(execute, nb_json, settings)
        self._pending[future] = (tag, nb_json, settings, resubmits, self._generation)

    def finished(self) -> list[tuple[object, dict]]:
        """Wait for at least one execution to end; its (tag, result) pairs (none when all were resubmitted)."""
        done, _ = wait(self._pending, return_when=FIRST_COMPLETED)
        results = []
        for future in done:
            tag, nb_json, settings, resubmits, generation = self._pending.pop(future)
            try:
                results.append((tag, future.result()))
            except (BrokenProcessPool, CancelledError):  # a worker process died: all its pool's work is lost
                if resubmits >= RESUBMITS:
                    results.append((tag, infra_error("the worker process died each time it ran this notebook")))
                    continue
                if generation == self._generation:  # restart once per breakage, not once per lost future
                    self._executor.shutdown(wait=False, cancel_futures=True)
                    self._generation += 1
                    self._executor = self._new_executor()
                self.submit(tag, nb_json, settings, resubmits + 1)
        return results

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
