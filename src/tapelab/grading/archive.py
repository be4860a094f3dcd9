"""Read an LMS zip without trusting it: entry names are only data, and every read is bounded.

Nothing is extracted under a name taken from the archive: `Archive.copy` writes entry *i* to a path
the caller chooses, so an over-long name, a name that is both a file and a folder, or two names that
differ only by case cannot overwrite anything. An entry is read only after its declared size passed
the bound for one entry and what is left of the bound for the archive, and `zipfile` never returns
more than the declared size (a header that lies fails the CRC check). Only stored and deflated
entries are read: `zipfile` decompresses bzip2 and LZMA data without an output bound.
"""
from __future__ import annotations

import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from tapelab.grading.sanitize import MAX_NOTEBOOK_BYTES

__all__ = ["MAX_ENTRY_BYTES", "MAX_ZIP_BYTES", "MAX_ZIP_ENTRIES", "Archive", "Entry", "EntryError", "ZipRejected"]

MAX_ZIP_BYTES = 2 * 1024**3  # everything read from one archive
MAX_ENTRY_BYTES = MAX_NOTEBOOK_BYTES  # one entry: a bigger notebook is refused anyway
MAX_ZIP_ENTRIES = 20_000
_CHUNK = 1 << 20
_UTF8_NAME, _ENCRYPTED = 0x800, 0x1
_UNIX = 3  # ZipInfo.create_system of archives whose external_attr holds a Unix mode
_READABLE = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
_CORRUPT = (zipfile.BadZipFile, zlib.error, EOFError)


class ZipRejected(ValueError):
    """The whole archive is unusable (not a zip, too many entries, a forged name table)."""


class EntryError(Exception):
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


def _name(info: zipfile.ZipInfo) -> str:
    """The entry's name: UTF-8 when it decodes as UTF-8 (flagged or not), else its bytes as surrogates."""
    if info.flag_bits & _UTF8_NAME:
        return info.orig_filename
    raw = info.orig_filename.encode("cp437")  # zipfile decoded the bytes as cp437: undo it
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "surrogateescape")


def _kind(info: zipfile.ZipInfo) -> str:
    mode = info.external_attr >> 16 if info.create_system == _UNIX else 0
    if info.is_dir() or stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    return "file" if stat.S_IFMT(mode) in (0, stat.S_IFREG) else "special"


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
        self.entries = [Entry(i, _name(info), _kind(info), info.file_size) for i, info in enumerate(self._infos)]
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
            raise EntryError("unreadable", f"it cannot be read ({error}): "
                                           "download the archive again, or ask the student to resubmit") from None
