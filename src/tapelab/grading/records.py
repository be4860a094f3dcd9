"""What a run leaves on disk besides the gradebook: atomic files, the resume state, the JSON-lines log.

The state file maps each submission (student/assignment/notebook) to the content hash and the
outcome of its last completed grading. It is rewritten atomically after every completion, so a
run killed half way loses nothing already graded, and the next run skips what is unchanged. A
state file that does not match its schema is set aside (kept beside it as
`grading-state.json.corrupt-<time>`) and the run starts from an empty state: the state is only a
cache of the gradebook, so the cost is that everything is regraded.

Every log record is one `json.dumps` line in ASCII: a newline, U+2028, a quote, NUL or a lone
surrogate in a student id, a file name or an output is escaped inside its string, so no text can
end a record or start a forged one.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import jsonschema

from tapelab.errors import InfraError, UsageError
from tapelab.grading.statuses import STATUSES
from tapelab.outside import printable

__all__ = ["atomic_write_text", "cause", "content_hash", "check_writable", "destination", "output_folder",
           "metadata_checked_once", "schema_check", "valid_notebook", "Unwritable", "WriteFailed", "State", "JsonLog",
           "STATE_FILE", "LOG_FILE"]

STATE_FILE = "grading-state.json"
LOG_FILE = "grading.log.jsonl"
# Bump when a change to the pipeline changes scores, so old results are regraded.
PIPELINE_VERSION = "1"

_NAME = {"type": ["string", "null"]}
_NUMBER = {"type": ["number", "null"]}
STATE_SCHEMA = {
    "type": "object",
    "required": ["version", "submissions"],
    "properties": {
        "version": {"const": 1},
        "submissions": {"type": "object", "additionalProperties": {
            "type": "object",
            "required": ["student", "assignment", "notebook", "status", "score", "max_score", "flags"],
            "properties": {"student": _NAME, "assignment": _NAME, "notebook": _NAME,
                           "status": {"enum": sorted(STATUSES)}, "score": _NUMBER, "max_score": _NUMBER,
                           "hash": {"type": "string"}, "reason": {"type": "string"},
                           "flags": {"type": "array", "items": {"type": "string"}}},
        }},
        "inputs": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "object"}}},
    },
}


class Unwritable(UsageError, ValueError):
    """A file or folder the run must write cannot be written; the message names it and the fix."""


class WriteFailed(InfraError, OSError):
    """Writing a file failed part way (a full disk, a folder made read-only meanwhile): the previous file is
    intact; the message names the path, the cause in words and what to do. Exit status 1."""


# errno -> the cause in words and what to do about it.
_CAUSES = {
    errno.ENOSPC: ("no space is left on the disk", "free space on that disk (df -h) and rerun"),
    errno.EDQUOT: ("the disk quota is used up", "free space in your quota and rerun"),
    errno.EROFS: ("the file system is read-only", "pass a path on a writable disk, or remount it read-write"),
    errno.EACCES: ("permission is denied", "make the folder writable for you (chmod, chattr -i) or pass another path"),
    errno.EPERM: ("the folder refuses changes (immutable or not yours)",
                  "make the folder writable (chattr -i, chmod) or pass another path"),
    errno.ENOTDIR: ("a part of the path is a file, not a folder", "pass a path whose folders are folders"),
    errno.EISDIR: ("it is a folder", "pass the name of a file, or move the folder away"),
    errno.ENOENT: ("its folder does not exist", "create the folder or pass a path in one that exists"),
}


def cause(error: OSError) -> tuple[str, str]:
    """(what went wrong, what to do) for an OSError, in words."""
    return _CAUSES.get(error.errno, (error.strerror or str(error), "fix the folder or pass another path, and rerun"))


def atomic_write_text(path: Path, text: str | bytes, mode: int = 0o644, what: str = "the file") -> None:
    """The one writer of the files tapelab leaves: `text` (or bytes, written as they are) to a temporary file
    beside `path`, fsynced, then renamed over `path`, so a reader sees the old file or the new one, never
    part of one.

    Text that UTF-8 cannot encode (lone surrogates from non-UTF-8 file names) is written as backslash
    escapes rather than failing the write. Any OSError (a full disk, a read-only folder) becomes
    `WriteFailed` naming `what` and `path`, and the previous file is left as it was.
    """
    data = text if isinstance(text, bytes) else text.encode("utf-8", "backslashreplace")
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
        tmp = None
    except OSError as error:
        happened, todo = cause(error)
        kept = "the previous file is unchanged" if path.is_file() else "nothing was written"
        raise WriteFailed(f"{what} {printable(path)} was not written: {happened}; {kept}. Fix: {todo}") from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def check_writable(path: Path, what: str) -> None:
    """Raise Unwritable unless a file can be written at `path` (a real probe: root ignores modes,
    not read-only mounts, immutable folders or a parent that is a file)."""
    folder = path.parent
    shown = printable(path)
    if path.is_dir():
        raise Unwritable(f"{what} {shown} is a folder: pass the name of a file in it, or move the folder away")
    if folder.exists() and not folder.is_dir():
        raise Unwritable(f"{what} {shown} cannot be written: {printable(folder)} is a file, not a folder. Pass a "
                         "path in a folder you can write")
    if not folder.exists():
        raise Unwritable(f"{what} {shown} cannot be written: the folder {printable(folder)} does not exist. Create "
                         f"it (mkdir -p {printable(folder)}) or pass a path in a folder that exists")
    _probe(folder, f"{what} {shown}")


def _probe(folder: Path, named: str) -> None:
    """Create and remove a file in `folder`, or raise Unwritable saying why `named` cannot be written."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".tapelab.", suffix=".probe", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as error:
        happened, todo = cause(error)
        raise Unwritable(f"{named} cannot be written: {happened} ({printable(folder)}). Fix: {todo}") from None


def destination(path: Path, default_name: str, what: str) -> Path:
    """Where a verb's output file goes, checked before any work: `path`, or `path/default_name` when `path`
    is a folder that exists; Unwritable when its folder is missing, a file, read-only or immutable."""
    target = path / default_name if path.is_dir() else path
    check_writable(target, what)
    return target


def output_folder(folder: Path, what: str) -> Path:
    """A folder a verb writes files into, checked before any work: created when only it is missing (its parent
    must be a folder that exists); Unwritable when it is a file, under a file, missing deeper, or read-only."""
    if folder.exists() and not folder.is_dir():
        raise Unwritable(f"{what} {printable(folder)} is a file, not a folder: pass a folder (it is created when "
                         "missing) or move the file away")
    if not folder.exists():
        check_writable(folder, what)
        try:
            folder.mkdir()
        except OSError as error:
            happened, todo = cause(error)
            raise Unwritable(f"{what} {printable(folder)} cannot be created: {happened}. Fix: {todo}") from None
    _probe(folder, f"{what} {printable(folder)}")
    return folder


def content_hash(raw: bytes, settings_key: str) -> str:
    """Hash of the submitted bytes plus what changes a grade (pipeline version, limits)."""
    digest = hashlib.sha256(raw)
    digest.update(f"\0{PIPELINE_VERSION}\0{settings_key}".encode())
    return digest.hexdigest()


def schema_check(schema: dict) -> Callable[[object], None]:
    """`jsonschema.validate(instance, schema)` as a function of the instance: the same error raised (the best match),
    but the schema is checked and its validator built once, not at every call (a check of the schema costs more than
    that of a small instance, and the coordinator checks a worker's result and the feedback state per submission)."""
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema)

    def check(instance: object) -> None:
        error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
        if error is not None:
            raise error

    return check


def valid_notebook(text: str):
    """`text` read as an nbformat 4 notebook, validated once (nbformat's `reads` validates, but only logs what it
    finds): raises nbformat's ValidationError, or what its reader raises, for what is not a valid notebook."""
    import nbformat

    found: dict = {}
    nb = nbformat.reads(text, as_version=4, capture_validation_error=found)
    if found:
        raise found["ValidationError"]
    return nb


@contextlib.contextmanager
def metadata_checked_once():
    """While it lasts, nbgrader's check of a cell's nbgrader metadata (`CheckCellMetadata`, which a run makes twice
    per submission: preparing it and saving its grades) uses `schema_check`: the same errors, but nbgrader's
    schema is checked once, not once per cell (most of the check's time). nbgrader's own is back after."""
    from nbgrader.nbgraderformat import common

    checks: dict[str, Callable[[object], None]] = {}

    class Once:
        def __getattr__(self, name: str):
            return getattr(jsonschema, name)

        @staticmethod
        def validate(instance: object, schema: dict, *args, **kwargs) -> None:
            if args or kwargs:
                return jsonschema.validate(instance, schema, *args, **kwargs)
            key = json.dumps(schema, sort_keys=True)  # nbgrader reads its schema afresh for every notebook
            if key not in checks:
                checks[key] = schema_check(schema)
            return checks[key](instance)

    common.jsonschema = Once()
    try:
        yield
    finally:
        common.jsonschema = jsonschema


_check_state = schema_check(STATE_SCHEMA)


def _problem(data: object) -> str | None:
    """Why `data` is not a state file this version wrote, or None."""
    try:
        _check_state(data)
    except jsonschema.ValidationError as error:
        where = "/".join(map(str, error.absolute_path)) or "the top level"
        return f"{where}: {error.message[:200]}"
    for key, entry in data["submissions"].items():
        if key != State.key(entry["student"], entry["assignment"], entry["notebook"]):
            return f"submissions/{key}: the entry is for {entry['student']}/{entry['assignment']}/{entry['notebook']}"
    return None


class State:
    """The resume state: key -> {"hash", "status", "score", "max_score", "reason", "flags", ...}, and the
    history of every input file ever seen: source -> [{"run_id", "time", "status", ...}, ...].

    `set_aside` says, for the instructor, where an unusable state file was moved and why.
    """

    def __init__(self, path: Path):
        self.path = path
        self.entries: dict[str, dict] = {}
        self.inputs: dict[str, list[dict]] = {}
        self.set_aside: str | None = None
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return
        try:
            data = json.loads(raw)
            reason = _problem(data)
        except (ValueError, RecursionError) as error:  # not UTF-8, not JSON, nested past the parser's depth
            reason = f"not JSON ({error})"
        if reason is None:
            self.entries, self.inputs = data["submissions"], data.get("inputs", {})
            return
        copy = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
        os.replace(path, copy)
        self.set_aside = (f"{path} is not a state file tapelab wrote ({reason}). It was kept as {copy.name} and "
                          "this run starts from an empty state: every submission is regraded, the gradebook is "
                          "unchanged. Delete the copy once the run has ended well")

    @staticmethod
    def key(student: str, assignment: str, notebook: str) -> str:
        return f"{student}/{assignment}/{notebook}"

    def unchanged(self, key: str, digest: str, final: frozenset[str]) -> dict | None:
        """The stored entry when `key` was completed with the same content hash, else None."""
        entry = self.entries.get(key)
        if entry and entry.get("hash") == digest and entry.get("status") in final:
            return entry
        return None

    def seen(self, source: str, record: dict) -> None:
        """Add `record` (run, time, status...) to the history of the input file `source` (kept by `save`)."""
        self.inputs.setdefault(source, []).append(record)

    def complete(self, key: str, entry: dict) -> None:
        """Store `entry` as the last outcome of `key` and write the file."""
        self.entries[key] = entry
        self.save()

    def save(self) -> None:
        atomic_write_text(self.path, json.dumps({"version": 1, "submissions": self.entries, "inputs": self.inputs},
                                                indent=1, sort_keys=True))


class JsonLog:
    """Append-only JSON lines: one object per event, flushed as it happens.

    A write that fails (disk full) is remembered in `failed` instead of stopping the run.
    """

    def __init__(self, path: Path, run_id: str):
        self.path, self.run_id = path, run_id
        self.failed: str | None = None
        try:
            self._handle = open(path, "a", encoding="ascii")
        except OSError as error:
            raise Unwritable(f"the log {path} cannot be opened ({error.strerror}): make it a writable file "
                             "in the course folder, or move it away") from None

    def write(self, event: str, **fields) -> None:
        record = {"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "run_id": self.run_id, "event": event, **fields}
        line = json.dumps(record, sort_keys=True, ensure_ascii=True, default=repr) + "\n"
        try:
            self._handle.write(line)
            self._handle.flush()
        except OSError as error:
            self.failed = self.failed or f"{error.strerror} ({event} event)"

    def close(self) -> None:
        try:
            self._handle.close()
        except OSError as error:
            self.failed = self.failed or error.strerror
