"""Lazy package faces: a package names its public entry points and imports each only when first used.

A package whose `__init__` imported its modules would make every import of one of them pay for all:
a grading worker would load the coordinator, `tapelab --help` the grading stack, `import tapelab` the
exercise framework. A face instead maps each public name to the module that defines it:

    __all__ = ["grade", "Options"]
    __getattr__, __dir__ = face(__name__, {"grade": "run", "Options": "run"})

`from package import grade` and `package.grade` then import `package.run` on first use and keep the
value. Imports nothing of tapelab (floor 1).
"""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping

__all__ = ["face"]


def face(package: str, names: Mapping[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """Module `__getattr__` and `__dir__` for `package`, whose public `names` each map to the module,
    relative to `package`, that defines that name."""
    def __getattr__(name: str) -> object:
        try:
            module = names[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__
