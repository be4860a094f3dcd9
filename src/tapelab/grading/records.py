"""What a run leaves on disk besides the gradebook: atomic files, the resume state, the JSON-lines log.

The state file maps each submission (student/assignment/notebook) to the content hash and the
outcome of its last completed grading. It is rewritten atomically after every completion, so a
run killed half way loses nothing already graded, and the next run skips what is unchanged.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

__all__ = ["atomic_write_text", "content_hash", "State", "JsonLog", "STATE_FILE", "LOG_FILE"]

STATE_FILE = "grading-state.json"
LOG_FILE = "grading.log.jsonl"
# Bump when a change to the pipeline changes scores, so old results are regraded.
PIPELINE_VERSION = "1"


def atomic_write_text(path: Path, text: str, mode: int = 0o644) -> None:
    """Write `text` to a temporary file beside `path`, fsync it, then rename it over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def content_hash(raw: bytes, settings_key: str) -> str:
    """Hash of the submitted bytes plus what changes a grade (pipeline version, limits)."""
    digest = hashlib.sha256(raw)
    digest.update(f"\0{PIPELINE_VERSION}\0{settings_key}".encode())
    return digest.hexdigest()


class State:
    """The resume state: key -> {"hash", "status", "score", "max_score", "reason", "flags", ...}."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.entries: dict[str, dict] = json.loads(path.read_text())["submissions"]
        except (OSError, ValueError, KeyError, TypeError):
            self.entries = {}

    @staticmethod
    def key(student: str, assignment: str, notebook: str) -> str:
        return f"{student}/{assignment}/{notebook}"

    def unchanged(self, key: str, digest: str, final: frozenset[str]) -> dict | None:
        """The stored entry when `key` was completed with the same content hash, else None."""
        entry = self.entries.get(key)
        if entry and entry.get("hash") == digest and entry.get("status") in final:
            return entry
        return None

    def complete(self, key: str, entry: dict) -> None:
        self.entries[key] = entry
        atomic_write_text(self.path, json.dumps({"version": 1, "submissions": self.entries}, indent=1,
                                                sort_keys=True))


class JsonLog:
    """Append-only JSON lines: one object per event, flushed as it happens."""

    def __init__(self, path: Path, run_id: str):
        self.path, self.run_id = path, run_id
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(path, "a", encoding="utf-8")

    def write(self, event: str, **fields) -> None:
        record = {"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "run_id": self.run_id, "event": event, **fields}
        self._handle.write(json.dumps(record, sort_keys=True) + "\n")
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()
