"""What a kernel forked from the zygote makes fresh, so that it starts as a cold one would.

The zygote (`zygote.py`, which loads this file by its path: it imports nothing of tapelab) records, after
its imports, each place that holds sys.stdout or sys.stderr (logging handlers, default arguments, class
attributes, closures); each kernel it forks points them at ipykernel's streams once they exist, as if the
imports had run in the kernel. Before that, the kernel's process gets a standard input at its end, new seeds
and OpenBLAS's own number of threads.
"""
from __future__ import annotations

import ctypes
import gc
import os
import random
import sys
import types


def holders(stream: object) -> dict[int, object]:
    return {id(r): r for r in gc.get_referrers(stream) if not isinstance(r, types.FrameType) and r is not vars(sys)}


def bindings(stream: object, name: str, before: dict[int, object]) -> list[tuple]:
    """Each place the imports since `before` keep `stream`: (kind, holder, key, stream name). A place
    that cannot be pointed elsewhere raises, so the zygote refuses to serve rather than diverge."""
    found = []
    for ident, holder in holders(stream).items():
        if ident in before:
            continue
        if isinstance(holder, tuple):
            owners = [f for f in gc.get_referrers(holder) if isinstance(f, types.FunctionType) and f.__defaults__ is holder]
            if not owners:
                raise RuntimeError(f"a tuple that is no function's defaults holds sys.{name}: {holder!r:.200}")
            found += [("defaults", f, None, name) for f in owners]
        elif isinstance(holder, dict):
            if any(key is stream for key in holder):
                raise RuntimeError(f"a dict is keyed by sys.{name}")
            keys = [key for key, value in holder.items() if value is stream]
            classes = [t for t in gc.get_referrers(holder) if isinstance(t, type)
                       and all(vars(t).get(key) is stream for key in keys)]
            if classes:  # a class's namespace: written through setattr, so its attribute cache follows
                found += [("attr", cls, key, name) for cls in classes for key in keys]
            else:
                found += [("item", holder, key, name) for key in keys]
        elif isinstance(holder, list):
            found += [("item", holder, i, name) for i, value in enumerate(holder) if value is stream]
        elif type(holder).__name__ == "cell":
            found.append(("cell", holder, None, name))
        elif hasattr(holder, "__dict__"):
            found += [("attr", holder, key, name) for key, value in vars(holder).items() if value is stream]
        else:
            raise RuntimeError(f"a {type(holder).__name__} holds sys.{name}")
    return found


def rebind(bindings: list[tuple], old: dict[str, object]) -> None:
    """Point every binding at the kernel's stream of the same name (ipykernel's, once it runs)."""
    for kind, holder, key, name in bindings:
        new = getattr(sys, name)
        if kind == "defaults":
            holder.__defaults__ = tuple(new if v is old[name] else v for v in holder.__defaults__)
        elif kind == "item":
            holder[key] = new
        elif kind == "cell":
            holder.cell_contents = new
        else:
            setattr(holder, key, new)


def stdin_at_end() -> None:
    """Standard input as a cold kernel has it: a pipe whose writer has closed."""
    read, write = os.pipe()
    os.close(write)
    os.dup2(read, 0)
    os.close(read)


def reseed() -> None:
    """New seeds from the system for the generators a fork would share: Python's and NumPy's global ones
    (TensorFlow's live in its eager context, created in the kernel; Python's hash seed cannot change)."""
    random.seed()
    sys.modules["numpy"].random.seed()


def blas_threads() -> None:
    """OpenBLAS's threads as a kernel importing NumPy would start them (its default: one per CPU)."""
    with open("/proc/self/maps") as maps:
        blas = {line.split()[-1] for line in maps if "openblas" in line.rsplit("/", 1)[-1]}
    for path in blas:
        library = ctypes.CDLL(path)
        for prefix, suffix in (("scipy_openblas", "64_"), ("openblas", "")):
            setter = getattr(library, f"{prefix}_set_num_threads{suffix}", None)
            if setter is not None:
                setter(getattr(library, f"{prefix}_get_num_procs{suffix}")())
                break
