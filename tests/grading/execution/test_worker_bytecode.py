"""The worker compiles tapelab's bytecode for the kernels, which cannot write it (see worker.cache_bytecode)."""
import importlib.util
import struct
from pathlib import Path

from tapelab.grading.execution import worker


def test_the_worker_writes_bytecode_a_kernel_would_accept():
    """With a module's bytecode gone, does the worker's step write it again, stamped with the source's
    modification time and size (what the import system checks before it uses the file)?"""
    source = Path(worker.__file__)
    cached = Path(importlib.util.cache_from_source(str(source)))
    cached.unlink(missing_ok=True)
    worker.cache_bytecode.__wrapped__()
    header = cached.read_bytes()[:16]
    assert header[:4] == importlib.util.MAGIC_NUMBER
    flags, mtime, size = struct.unpack("<III", header[4:16])
    stat = source.stat()
    assert (flags, mtime, size) == (0, int(stat.st_mtime) & 0xFFFFFFFF, stat.st_size & 0xFFFFFFFF)
