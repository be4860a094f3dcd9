"""nbgrader's formgrader behind a real `jupyter server`, for tests that use it as an instructor does.

The server runs from this venv in the course folder (so nbgrader reads the course's
nbgrader_config.py, as `nbgrader formgrader` would), on 127.0.0.1 and a free port, with a random
token and throwaway Jupyter config and runtime folders. Requests carry the token in the
Authorization header: jupyter_server skips its XSRF check for token-authenticated requests, so
PUT and POST need no cookie. Start-up, API calls and shutdown are the browser tests' LabServer's;
only the command line, the environment and the status page differ.
"""
from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from browser.labserver import LabServer
from tapelab.release import nbgrader_env

__all__ = ["Formgrader", "formgrader"]

EXTENSION = "nbgrader.server_extensions.formgrader"


class Formgrader(LabServer):
    """A `jupyter server` with nbgrader's formgrader extension, serving the course folder `root`."""

    status_path = "/formgrader/api/status"
    request_timeout = 60.0  # generating feedback renders pages in the server

    def _env(self, tmp: Path) -> dict[str, str]:
        # nbgrader shells out to alembic (the venv's bin/ on PATH); TensorFlow stays quiet.
        return {**nbgrader_env(), "JUPYTER_CONFIG_DIR": str(tmp / "config"), "JUPYTER_RUNTIME_DIR": str(tmp / "runtime")}

    def _argv(self, tmp: Path) -> list[str]:
        # The command line wins over nbgrader's own jupyter_server_config.d entry, so formgrader loads
        # even where that entry was disabled.
        return [sys.executable, "-m", "jupyter", "server", *self._common_args(),
                f"--ServerApp.jpserver_extensions={EXTENSION}=True"]


@contextmanager
def formgrader(course_root: Path, log_path: Path | None = None) -> Iterator[Formgrader]:
    """A running formgrader on the course folder; stopped (terminated, then killed) however the block ends.

    The server's log goes to `log_path` (default: formgrader.log next to the course folder).
    """
    server = Formgrader(root=course_root, log_path=log_path or course_root.parent / "formgrader.log")
    try:
        server.start(timeout=60)
        yield server
    finally:
        server.stop()
