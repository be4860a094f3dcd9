"""Servers the scale-out grading tests start themselves, on 127.0.0.1, and stop afterwards.

- `DaskCluster`: `dask scheduler` and worker processes (`dask worker --no-nanny`, so a killed
  worker stays dead), each in its own session so a test can kill one with its kernels.
- `PostgresServer`: a throwaway PostgreSQL cluster from Debian's packages (`make postgres`
  installs them when missing), password authentication, run as the `postgres` user when root.
"""
from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait(what: str, ready, timeout: float, procs=()) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for proc, log in procs:
            if proc.poll() is not None:
                raise RuntimeError(f"{what}: a process exited with {proc.returncode}:\n{Path(log).read_text()[-3000:]}")
        if ready():
            return
        time.sleep(0.2)
    raise TimeoutError(f"{what} not ready within {timeout} s")


class DaskCluster:
    """A scheduler and `workers` single-threaded worker processes on 127.0.0.1."""

    def __init__(self, logs: Path, workers: int = 2):
        self.logs = logs
        logs.mkdir(parents=True, exist_ok=True)
        port = free_port()
        self.address = f"tcp://127.0.0.1:{port}"
        self.procs: dict[str, subprocess.Popen] = {}
        try:
            self._start("scheduler", [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                      "--no-dashboard"])
            self._wait_for(lambda: self._connectable(port), "scheduler")
            for n in range(1, workers + 1):
                self._start(f"w{n}", [str(BIN / "dask"), "worker", self.address, "--host", "127.0.0.1", "--nthreads",
                                      "1", "--no-nanny", "--no-dashboard", "--name", f"w{n}", "--death-timeout", "60"])
            self._wait_for(lambda: len(self.workers()) == workers, f"{workers} workers")
        except BaseException:
            self.stop()
            raise

    def _start(self, name: str, cmd: list[str]) -> None:
        log = open(self.logs / f"{name}.log", "w")
        self.procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def _wait_for(self, ready, what: str) -> None:
        _wait(f"dask {what}", ready, 60, [(p, self.logs / f"{n}.log") for n, p in self.procs.items()])

    @staticmethod
    def _connectable(port: int) -> bool:
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", port)) == 0

    def client(self):
        from distributed import Client

        return Client(self.address, timeout="20s", set_as_default=False)

    def workers(self) -> dict[str, dict]:
        """Scheduler's view: worker address -> info (name, pid, ...)."""
        with self.client() as client:
            return client.scheduler_info(n_workers=-1)["workers"]

    def kill(self, name: str) -> None:
        """SIGKILL a worker process and everything it started (its kernels)."""
        proc = self.procs[name]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def stop(self) -> None:
        """Workers first (they say goodbye to the scheduler), then the scheduler; SIGKILL after 20 s."""
        for proc in reversed(list(self.procs.values())):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def postgres_bin() -> Path:
    """The newest PostgreSQL server binaries from Debian's packages; fails (never skips) when missing."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(Path(p).parts[-3]))
    if not found:
        raise RuntimeError("PostgreSQL server binaries not found: run `make postgres` "
                           "(apt-get install -y postgresql) or `make test`, which does it")
    return Path(found[-1]).parent


class PostgresServer:
    """A new PostgreSQL cluster in a new temporary folder, listening on 127.0.0.1 only."""

    USER = "tapelab"

    def __init__(self):
        self.bin = postgres_bin()
        # Not under pytest's tmp folders: those are private to root, and the server runs as `postgres`.
        root = self.root = Path(tempfile.mkdtemp(prefix="tapelab-postgres-"))
        self.password = secrets.token_hex(12)
        self.port = free_port()
        data, sockets = root / "data", root / "sockets"
        sockets.mkdir()
        (root / "pw").write_text(self.password + "\n")
        owner = self._owner()
        if owner:
            os.chmod(root, 0o755)  # the postgres user must reach its folders
            for path in (root, sockets, root / "pw"):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        self._run([str(self.bin / "initdb"), "-D", str(data), "-U", self.USER, "--auth=scram-sha-256",
                   f"--pwfile={root / 'pw'}", "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync"])
        log = open(root / "server.log", "w")
        self.proc = subprocess.Popen(
            self._as_owner([str(self.bin / "postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(self.port),
                            "-k", str(sockets), "-c", "fsync=off", "-c", "max_connections=100"]),
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            _wait("postgres", self._ready, 60, [(self.proc, root / "server.log")])
        except BaseException:
            self.stop()
            raise

    @staticmethod
    def _owner():
        """Debian's `postgres` user when we are root (initdb refuses root), else nobody."""
        if os.geteuid() != 0:
            return None
        return pwd.getpwnam("postgres")

    def _as_owner(self, cmd: list[str]) -> list[str]:
        owner = self._owner()
        if owner is None:
            return cmd
        return ["setpriv", f"--reuid={owner.pw_uid}", f"--regid={owner.pw_gid}", "--init-groups", "--", *cmd]

    def _run(self, cmd: list[str]) -> None:
        result = subprocess.run(self._as_owner(cmd), capture_output=True, text=True, cwd=self.root)
        if result.returncode:
            raise RuntimeError(f"{cmd[0]} failed:\n{result.stdout}{result.stderr}")

    def _ready(self) -> bool:
        return subprocess.run([str(self.bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
                              capture_output=True).returncode == 0

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://{self.USER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user=self.USER, password=self.password,
                             dbname="postgres", autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)
