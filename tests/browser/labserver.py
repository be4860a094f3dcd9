"""A real JupyterLab server for the browser tests, and the Chromium it is driven with.

The server runs from this venv on 127.0.0.1 with a random token and throwaway settings (every
cell rendered, no autosave, no news or update checks; checkpoints and workspaces in a temporary
folder, so the repository is only read), and is stopped with its kernels afterwards.
"""
from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
STUDENT_CONFIG = Path(__file__).resolve().parents[2] / "binder" / "jupyter"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
    # Belt and braces: every host name but the loopback address fails to resolve.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]

_SETTINGS = {
    # Render every cell, not only those near the viewport; no blank page after the last cell
    # (its height follows the viewport's, so a full-notebook screenshot would never fit).
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none",
                                                                  "scrollPastEnd": False},
    # Never write the repository's notebooks back (they are run, not edited).
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    # No calls home from the page or the server.
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "checkForUpdates": False, "fetchNews": "false"},
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LabServer:
    """A `jupyter lab` process serving `root` on 127.0.0.1, with a throwaway settings folder."""

    root: Path
    log_path: Path
    port: int = field(default_factory=_free_port)
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    _process: subprocess.Popen | None = None
    _shutdowns: list[threading.Thread] = field(default_factory=list)
    _tmp: tempfile.TemporaryDirectory | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    status_path = "/api/status"  # answers once the server is ready
    request_timeout = 10.0  # seconds for an API call

    def _env(self, tmp: Path) -> dict[str, str]:
        for name, settings in _SETTINGS.items():
            path = tmp / "settings" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(settings))
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0",
               "JUPYTERLAB_SETTINGS_DIR": str(tmp / "settings"),
               "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces"),
               "JUPYTER_CONFIG_DIR": str(tmp / "config"), "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
               # What `make lab` and Binder give students (binder/jupyter): no instructor tools.
               "JUPYTER_CONFIG_PATH": str(STUDENT_CONFIG)}
        env.pop("PYTEST_CURRENT_TEST", None)  # kernels must behave as in a student's JupyterLab
        return env

    def _argv(self, tmp: Path) -> list[str]:
        jupyter = Path(sys.executable).parent / "jupyter"
        return [str(jupyter), "lab", *self._common_args(),
                "--LabApp.expose_app_in_browser=True",
                "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                # Opening a notebook makes a checkpoint copy: keep those out of the repository.
                f"--FileCheckpoints.checkpoint_dir={tmp / 'checkpoints'}"]

    def _common_args(self) -> list[str]:
        return ["--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={self.port}", "--port-retries=0",
                f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}"]

    def start(self, timeout: float = 90.0) -> None:
        """Start the server and return once `status_path` answers; fail with its log if it does not."""
        self._tmp = tempfile.TemporaryDirectory(prefix="tapelab-lab-")
        tmp = Path(self._tmp.name)
        env, argv = self._env(tmp), self._argv(tmp)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("wb")
        self._process = subprocess.Popen(argv, cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"`{' '.join(argv[:2])}` exited with {self._process.returncode} before "
                                   f"answering on {self.status_path}:\n{self.log_tail()}")
            try:
                self.api("GET", self.status_path, timeout=5)
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the server did not answer on {self.url}{self.status_path} within {timeout:.0f} s:\n"
                           f"{self.log_tail()}")

    def api(self, method: str, path: str, body: Any = None, timeout: float | None = None) -> Any:
        """Call the server with the token, `body` sent as JSON; the decoded JSON answer, or None.

        An HTTP error names the request and carries the server's answer in its message.
        """
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}{path}", data=data, method=method,
                                         headers={"Authorization": f"token {self.token}",
                                                  "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.request_timeout) as response:
                answer = response.read()
        except urllib.error.HTTPError as error:
            error.msg = f"{method} {path}: {error.msg}: {error.read()[:2000].decode(errors='replace')}"
            raise
        return json.loads(answer) if answer else None

    def shutdown_kernels(self, wait: bool = True) -> None:
        """Stop every running kernel (each holds ~0.6 GB of TensorFlow); in the background unless `wait`.

        A kernel takes seconds to exit; the next notebook can open meanwhile. `stop()` waits for all.
        """
        for kernel in self.api("GET", "/api/kernels"):
            thread = threading.Thread(target=self._delete_kernel, args=(kernel["id"],), daemon=True)
            thread.start()
            self._shutdowns.append(thread)
        if wait:
            self.wait_for_shutdowns()

    def wait_for_shutdowns(self) -> None:
        while self._shutdowns:
            self._shutdowns.pop().join(timeout=30)

    def _delete_kernel(self, kernel_id: str) -> None:
        try:
            self.api("DELETE", f"/api/kernels/{kernel_id}")
        except urllib.error.HTTPError as error:
            if error.code != 404:  # 404: already gone
                raise
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass  # the server is going away; stop() kills what is left

    def stop(self) -> None:
        """Shut kernels down, then the server; kill its process group if it lingers."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            try:
                self.shutdown_kernels(wait=True)
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            process.send_signal(signal.SIGINT)
            process.send_signal(signal.SIGINT)  # the second one skips jupyter's "are you sure?"
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
            try:  # the server and any kernel it started are in the group we created
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(timeout=10)
        self.wait_for_shutdowns()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"
