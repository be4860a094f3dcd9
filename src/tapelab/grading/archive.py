"""Safe extraction of an LMS zip: no absolute paths, no `..`, no links, bounded size."""
from __future__ import annotations

import stat
import zipfile
from pathlib import Path, PurePosixPath

__all__ = ["MAX_ZIP_BYTES", "MAX_ZIP_ENTRIES", "ZipRejected", "extract"]

MAX_ZIP_BYTES = 2 * 1024**3  # total uncompressed size
MAX_ZIP_ENTRIES = 20_000
_CHUNK = 1 << 20


class ZipRejected(ValueError):
    """The whole archive is unusable (not a zip, too large, too many entries)."""


def _unsafe(name: str) -> str | None:
    """Why entry `name` must not be extracted, or None."""
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "absolute path"
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if ".." in parts:
        return "`..` in the path"
    return None


def extract(archive: Path, target: Path, max_bytes: int = MAX_ZIP_BYTES) -> list[tuple[str, str]]:
    """Extract the regular files of `archive` into `target`; return (entry, reason) of rejected entries."""
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as error:
        raise ZipRejected(f"{archive} is not a readable zip file ({error})") from None
    rejected: list[tuple[str, str]] = []
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_ZIP_ENTRIES:
            raise ZipRejected(f"{archive} has {len(infos)} entries, more than {MAX_ZIP_ENTRIES}")
        declared = sum(i.file_size for i in infos)
        if declared > max_bytes:
            raise ZipRejected(f"{archive} expands to {declared} bytes, more than the cap of {max_bytes}")
        written = 0
        for info in infos:
            if info.is_dir():
                continue
            reason = _unsafe(info.filename)
            mode = info.external_attr >> 16
            if reason is None and stat.S_ISLNK(mode):
                reason = "symbolic link"
            if reason:
                rejected.append((info.filename, reason))
                continue
            dest = target.joinpath(*PurePosixPath(info.filename.replace("\\", "/")).parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(dest, "wb") as out:
                while chunk := src.read(_CHUNK):
                    written += len(chunk)
                    if written > max_bytes:  # the headers lied
                        raise ZipRejected(f"{archive} expands to more than the cap of {max_bytes} bytes")
                    out.write(chunk)
    return rejected
