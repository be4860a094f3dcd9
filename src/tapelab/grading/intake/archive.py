"""Read an LMS zip without trusting it: entry names are only data, and every read is bounded.

Names are decoded (`_name`), split (`name_parts`), judged (`name_problem`) and escaped for display
(`shown`) here, for zip entries and folder files alike.

Nothing is extracted under a name taken from the archive: `Archive.copy` writes entry *i* to a path
the caller chooses, so an over-long name, a name that is both a file and a folder, or two names that
differ only by case cannot overwrite anything. An entry is read only after its declared size passed
the bound for one entry and what is left of the bound for the archive, and `zipfile` never returns
more than the declared size (a header that lies fails the CRC check). Only stored and deflated
entries are read: `zipfile` decompresses bzip2 and LZMA data without an output bound.

An entry's time (`Entry.modified`) is the UTC time of its extended-timestamp field (0x5455, written by
Info-ZIP, macOS and others) when it has one, else its DOS `date_time`, which has no time zone (the
zipping machine's local time, to 2 seconds) and is taken as UTC.
"""
from __future__ import annotations

import os
import re
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from tapelab.errors import SubmissionError
from tapelab.outside import printable

__all__ = ["MAX_ENTRY_BYTES", "MAX_NOTEBOOK_BYTES", "MAX_PART_BYTES", "MAX_ZIP_BYTES", "MAX_ZIP_ENTRIES", "Archive", "Entry", "EntryError",
           "ZipRejected", "from_unix", "mode_kind", "name_parts", "name_problem", "read_regular", "shown"]

MAX_ZIP_BYTES = 2 * 1024**3  # everything read from one archive
MAX_NOTEBOOK_BYTES = 64 * 1024**2  # a bigger notebook is refused, in a zip or not (prepare.sanitize)
MAX_ENTRY_BYTES = MAX_NOTEBOOK_BYTES  # one entry: a bigger notebook is refused anyway
MAX_ZIP_ENTRIES = 20_000
MAX_PART_BYTES, _MAX_NAME_BYTES = 255, 4095  # what Linux, macOS and Windows file systems store
_CHUNK = 1 << 20
_SEPARATORS = re.compile(r"[/\\]")
_UTF8_NAME, _ENCRYPTED = 0x800, 0x1
_UNIX = 3  # ZipInfo.create_system of archives whose external_attr holds a Unix mode
_EXTENDED_TIMESTAMP = 0x5455
_READABLE = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
_CORRUPT = (zipfile.BadZipFile, zlib.error, EOFError)


class ZipRejected(SubmissionError, ValueError):
    """The whole archive is unusable (not a zip, too many entries, a forged name table)."""


class EntryError(SubmissionError):
    """One entry cannot be read; `status` is its status in the report, the message says why."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status = status


@dataclass(frozen=True)
class Entry:
    """One member of a zip or a folder, known by its name string; the name is never used as a path."""

    index: int
    name: str  # as written; surrogates stand for bytes that are not UTF-8
    kind: str  # "file", "dir", "link" or "special" (a device, fifo or socket)
    size: int  # bytes, as the zip header or the file system says
    path: Path | None = None  # the file itself, for a folder's entries
    modified: datetime | None = None  # UTC; None when the archive holds no valid time


def shown(text: str, limit: int = 500) -> str:
    """`text` fit to print or store (`tapelab.outside.printable`), at most `limit` characters."""
    return printable(text, limit)


def name_parts(name: str) -> tuple[str, ...]:
    """The folders and file of `name`, split at `/` and `\\`, without empty and `.` parts."""
    return tuple(p for p in _SEPARATORS.split(name) if p not in ("", "."))


def name_problem(name: str, what: str = "its name") -> str | None:
    """Why `name` cannot stand for a submission on every file system and screen, or None."""
    if any("\udc80" <= c <= "\udcff" for c in name):
        return f"{what} holds bytes that are not UTF-8 (shown as \\xNN)"
    if (hidden := next((c for c in name if not (c.isprintable() or c == " ")), None)) is not None:
        return f"{what} holds the control or invisible character U+{ord(hidden):04X}"
    if len(name.encode()) > _MAX_NAME_BYTES or any(len(p.encode()) > MAX_PART_BYTES for p in name_parts(name)):
        return (f"{what} is longer than file systems allow ({MAX_PART_BYTES} bytes a folder or file, "
                f"{_MAX_NAME_BYTES} in all)")
    return None


def from_unix(seconds: float) -> datetime | None:
    """A Unix time as an aware UTC datetime, or None when it is outside what datetime holds."""
    try:
        return datetime.fromtimestamp(seconds, timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def read_regular(path: Path, limit: int, owner: int | None = None) -> bytes | None:
    """The bytes of the regular file at `path` if it holds at most `limit` (and, given `owner`, belongs to that
    uid); None for a link, fifo, device, a bigger file, another's file or one that cannot be read (opened
    without following links or blocking on a fifo; the checks are on the file opened, not on its name)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        try:
            info = os.fstat(fd)
            ours = stat.S_ISREG(info.st_mode) and owner in (None, info.st_uid)
            data = handle.read(limit + 1) if ours else None
        except OSError:
            return None
    return data if data is not None and len(data) <= limit else None


def _modified(info: zipfile.ZipInfo) -> datetime | None:
    """The entry's time: its extended-timestamp field's (UTC), else its DOS date_time taken as UTC."""
    extra = info.extra
    while len(extra) >= 4:
        kind, size = struct.unpack("<HH", extra[:4])
        body, extra = extra[4:4 + size], extra[4 + size:]
        if kind == _EXTENDED_TIMESTAMP and len(body) >= 5 and body[0] & 1:  # flag bit 0: mtime follows
            return from_unix(struct.unpack("<i", body[1:5])[0])
    try:
        return datetime(*info.date_time, tzinfo=timezone.utc)
    except ValueError:  # a forged or damaged header: month 0, second 62...
        return None


def _name(info: zipfile.ZipInfo) -> str:
    """The entry's name: UTF-8 when it decodes as UTF-8 (flagged or not), else its bytes as surrogates."""
    if info.flag_bits & _UTF8_NAME:
        return info.orig_filename
    raw = info.orig_filename.encode("cp437")  # zipfile decoded the bytes as cp437: undo it
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "surrogateescape")


def mode_kind(mode: int) -> str:
    """"dir", "link", "file" or "special" (a device, fifo or socket) for a Unix mode; 0 (no mode) is a file."""
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    return "file" if stat.S_IFMT(mode) in (0, stat.S_IFREG) else "special"


def _kind(info: zipfile.ZipInfo) -> str:
    return "dir" if info.is_dir() else mode_kind(info.external_attr >> 16 if info.create_system == _UNIX else 0)


def _unreadable(error: Exception) -> EntryError:
    return EntryError("unreadable", f"it cannot be read ({error}): "
                                    "download the archive again, or ask the student to resubmit")


class Archive:
    """An LMS zip opened for reading: its entries, and a bounded copy of any one of them."""

    def __init__(self, path: Path, max_bytes: int = MAX_ZIP_BYTES, max_entry: int = MAX_ENTRY_BYTES):
        try:
            self._zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as error:
            raise ZipRejected(f"{path} is not a readable zip file ({error})") from None
        except UnicodeDecodeError as error:
            raise ZipRejected(f"{path} marks the name {error.object!r} as UTF-8 but it is not: "
                              "the archive is damaged or forged") from None
        self._infos = self._zip.infolist()
        if len(self._infos) > MAX_ZIP_ENTRIES:
            self._zip.close()
            raise ZipRejected(f"{path} has {len(self._infos)} entries, more than {MAX_ZIP_ENTRIES}")
        self.entries = [Entry(i, _name(info), _kind(info), info.file_size, modified=_modified(info))
                        for i, info in enumerate(self._infos)]
        self.max_bytes, self.max_entry, self.read = max_bytes, max_entry, 0

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc) -> None:
        self._zip.close()

    def _check(self, info: zipfile.ZipInfo, limit: int) -> None:
        if info.flag_bits & _ENCRYPTED:
            raise EntryError("unreadable", "it is encrypted: ask for the file without a password")
        if info.compress_type not in _READABLE:
            raise EntryError("unreadable", f"it uses compression method {info.compress_type}; only stored and "
                                           "deflated entries are read: zip it again with a standard tool")
        if info.file_size > limit:
            raise EntryError("too_large", f"it expands to {info.file_size} bytes, more than the bound of {limit} "
                                          "for one entry (a zip bomb, or outputs to clear before resubmitting)")
        if self.read + info.file_size > self.max_bytes:
            raise EntryError("too_large", f"the archive's bound of {self.max_bytes} bytes read in all was reached "
                                          "before this entry: unzip it yourself and pass the folder")

    def copy(self, index: int, dest: Path, limit: int | None = None) -> None:
        """Stream entry `index` into `dest` (at most `limit` bytes), or raise EntryError leaving no `dest`."""
        info = self._infos[index]
        self._check(info, self.max_entry if limit is None else limit)
        try:
            with self._zip.open(info) as src, open(dest, "wb") as out:
                while chunk := src.read(_CHUNK):  # never past info.file_size, checked above
                    out.write(chunk)
                    self.read += len(chunk)
        except _CORRUPT as error:
            dest.unlink(missing_ok=True)
            raise _unreadable(error) from None

    def read_bytes(self, index: int, limit: int) -> bytes:
        """Entry `index` in memory, if it holds at most `limit` bytes (a small file), or raise EntryError."""
        info = self._infos[index]
        self._check(info, limit)
        try:
            with self._zip.open(info) as src:
                data = src.read()  # never past info.file_size, checked above
        except _CORRUPT as error:
            raise _unreadable(error) from None
        self.read += len(data)
        return data
