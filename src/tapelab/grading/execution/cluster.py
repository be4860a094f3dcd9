"""`tapelab grade --scheduler tcp://HOST:PORT`: execute on a Dask cluster, grade here.

Dask (dask.distributed) schedules; tapelab writes no scheduler of its own. Each task is
`worker.execute` on one notebook, so every worker sandboxes its kernels exactly as the local pool
does, and only this process (the coordinator) writes the gradebook. A worker that dies mid-task
makes Dask's scheduler run the task again elsewhere (up to its `allowed-failures`); the
coordinator records each submission once, from the one result its future resolves to.

Before the run, every connected worker is asked what it runs (`describe`): its tapelab code,
the versions of tapelab's dependencies and the protections it can apply must match this machine's
(they decide the grades), or the run stops with a message naming the worker and the fix.
Importing this module needs `distributed`; the local default never imports it.
"""
from __future__ import annotations

import hashlib
import itertools
import re
import socket
import time
import uuid
from importlib import metadata
from pathlib import Path

from distributed import Client, KilledWorker, wait

import tapelab
from tapelab.errors import UsageError
from tapelab.grading.execution.pools import run_task
from tapelab.grading.execution.sandbox import environment_problem, kernel_start, probe
from tapelab.grading.execution.worker import Settings, execute, infra_error

__all__ = ["ClusterError", "DaskPool", "describe", "check"]

CONNECT_SECONDS = 10
WORKER_WAIT_SECONDS = 60  # at the start, and when every worker has left during the run
_ADDRESS = re.compile(r"^(tcp|tls)://[^\s/]+:\d+$")


class ClusterError(UsageError, ValueError):
    """The scheduler cannot be used: a bad address, unreachable, no workers, workers unlike this machine."""


def _code_digest() -> str:
    root = Path(tapelab.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _dependencies() -> list[str]:
    """The course extra's pins and the cluster extra's (not the dev tools)."""
    names = set()
    for requirement in metadata.requires("tapelab") or []:
        if "extra ==" in requirement and not any(f'"{extra}"' in requirement for extra in ("course", "cluster")):
            continue
        names.add(re.split(r"[\s=<>!~;\[]", requirement, maxsplit=1)[0])
    return sorted(names)


def describe() -> dict:
    """What this machine would grade with (run on every worker, and here)."""
    versions = {}
    for name in _dependencies():
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {"host": socket.gethostname(), "tapelab": _code_digest(), "versions": versions, "probe": probe(),
            "environment": environment_problem()}


def check(workers: dict[str, dict], here: dict) -> dict[str, str]:
    """Raise ClusterError unless every worker grades like `here`; return the workers' probe."""
    if not workers:
        raise ClusterError("the Dask workers left before the run could start: restart them (`dask worker ...`)")
    problems = []
    for address, info in sorted(workers.items()):
        name = f"worker {address} on {info['host']}"
        if info["tapelab"] != here["tapelab"]:
            problems.append(f"{name} runs other tapelab code: check out this version there, `make venv`, restart it")
        wrong = [f"{k} {info['versions'].get(k)} (here {v})" for k, v in here["versions"].items()
                 if info["versions"].get(k) != v]
        if wrong:
            problems.append(f"{name} has {', '.join(wrong)}: install requirements.lock there (`make venv`)")
        if info.get("environment"):
            problems.append(f"{name}: {info['environment']}")
    for protection in ("namespaces", "user", "rlimits"):
        lacking = sorted(f"{a} ({i['probe'][protection]})" for a, i in workers.items() if i["probe"][protection])
        if lacking and len(lacking) < len(workers):
            problems.append(f"only some workers can apply `{protection}`; not {', '.join(lacking)}: run every "
                            "worker as root on Linux with util-linux, so all sandbox kernels alike")
    if problems:
        raise ClusterError("the Dask workers cannot grade exactly as this machine would:\n  " + "\n  ".join(problems))
    return next(iter(workers.values()))["probe"]


def _connect(address: str) -> Client:
    if not _ADDRESS.match(address):
        raise ClusterError(f"--scheduler {address!r} is not a scheduler address: write tcp://HOST:PORT, as "
                           "`dask scheduler` prints it ('Scheduler at: tcp://...')")
    try:
        client = Client(address, timeout=f"{CONNECT_SECONDS}s", set_as_default=False)
    except Exception as error:
        raise ClusterError(f"cannot reach the Dask scheduler at {address} ({type(error).__name__}: {error}): start "
                           "it there with `dask scheduler --port PORT` and check that this machine can reach that "
                           "host and port") from None
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT_SECONDS)
    except TimeoutError:
        client.close()
        raise ClusterError(f"no Dask worker joined {address} within {WORKER_WAIT_SECONDS} s: start one on each "
                           f"grading machine with `dask worker {address} --nthreads N`") from None
    return client


class DaskPool:
    """Executions on the workers of the scheduler at `address`; the same interface as LocalPool."""

    def __init__(self, address: str):
        kernel_start()  # a bad TAPELAB_KERNELS stops the run before anything starts
        self.client = _connect(address)
        try:
            workers = self.client.run(describe)
            self.available = check(workers, describe())
        except BaseException:
            self.client.close()
            raise
        self.description = {"pool": "dask", "scheduler": address,
                            "workers": sorted(f"{info['host']} {a}" for a, info in workers.items())}
        self._run = uuid.uuid4().hex[:8]
        self._numbers = itertools.count()
        self._pending: dict = {}  # future -> tag

    @property
    def capacity(self) -> int:
        """Two notebooks in flight per worker thread: workers never wait for the coordinator."""
        return max(1, 2 * sum(self.client.nthreads().values()))

    def __len__(self) -> int:
        return len(self._pending)

    def submit(self, tag, nb_json: str, settings: Settings) -> None:
        key = f"tapelab-execute-{self._run}-{next(self._numbers)}"
        self._pending[self.client.submit(run_task, execute, nb_json, settings, key=key, pure=False)] = tag

    def finished(self) -> list[tuple[object, dict]]:
        """Wait for at least one execution to end; when no worker has been connected for
        WORKER_WAIT_SECONDS, every pending one ends as an infra_error (rerun to retry)."""
        alone_since = None
        while True:
            try:
                with self.client.as_current():
                    done, _ = wait(list(self._pending), timeout=5, return_when="FIRST_COMPLETED")
                break
            except TimeoutError:
                if self.client.nthreads():
                    alone_since = None
                    continue
                alone_since = alone_since or time.monotonic()
                if time.monotonic() - alone_since > WORKER_WAIT_SECONDS:
                    lost = [(tag, infra_error(f"no Dask worker was connected for {WORKER_WAIT_SECONDS} s"))
                            for tag in self._pending.values()]
                    self.client.cancel(list(self._pending))
                    self._pending.clear()
                    return lost
        results = []
        for future in done:
            tag = self._pending.pop(future)
            try:
                result = future.result()
            except KilledWorker as error:
                result = infra_error(f"Dask workers died each time they ran this notebook ({error})")
            except Exception as error:
                result = infra_error(f"Dask: {type(error).__name__}: {error}")
            future.release()
            results.append((tag, result))
        return results

    def close(self) -> None:
        if self._pending:
            self.client.cancel(list(self._pending))
        self.client.close()
