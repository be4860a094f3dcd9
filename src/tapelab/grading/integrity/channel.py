"""Defences against students who game the checks rather than answer them, executor side.

A `Session` belongs to one kernel. Its `prologue()` runs once, before any notebook cell: it
installs `in_kernel` (snapshot of every loaded module, class and IPython component, held by an
audit hook that cannot be removed). Its `step()` runs before and after every graded check: the
hook restores everything, re-imports tapelab fresh and re-runs the notebook's trusted imports,
then reports what it had to undo. Requests and reports are authenticated with a per-kernel
secret that never enters the notebook's history, so the student's code can neither silence the
guard nor forge a clean report: `findings()` turns a missing or forged report into a finding.

`scan` flags suspicious student code statically, for review.
"""
from __future__ import annotations

import ast
import hashlib
import hmac
import json
import secrets
from pathlib import Path

from tapelab.grading.integrity.scan import scan

__all__ = ["REPORT_EXPRESSION", "Session", "scan"]

REPORT_EXPRESSION = "_tapelab_guard_out"
_SOURCE = (Path(__file__).with_name("in_kernel.py")).read_text(encoding="utf-8")
_ALLOWED_MODULES = ("IPython", "ipykernel", "matplotlib", "matplotlib_inline", "ipywidgets", "comm",
                    "traitlets", "jupyter_client", "tapelab")
_MISSING = "the guard's report is missing or forged (the notebook interfered with grading)"


class Session:
    """The guard of one kernel: prologue once, then one `step()` per guard execution, in order."""

    def __init__(self, imports: list[str], sys_path: list[str]):
        self.imports, self.sys_path = list(imports), list(sys_path)
        self._key = secrets.token_bytes(32)
        self._n = 0

    def _mac(self, text: str) -> str:
        return hmac.new(self._key, text.encode(), hashlib.sha256).hexdigest()

    def prologue(self) -> str:
        """Code that installs the guard; run it before the first cell (silent, no history)."""
        args = (self._key.hex(), self.imports, self.sys_path, _ALLOWED_MODULES)
        return (f"exec(compile({_SOURCE!r}, '<tapelab-guard>', 'exec'), _tapelab_g := "
                "{'__name__': '_tapelab_guard', '__builtins__': dict(vars(__import__('builtins')))})\n"
                f"_tapelab_g['_install'](*{args!r})\n"
                "del _tapelab_g\n")

    def step(self, fresh: bool = True) -> str:
        """Code for the next guard execution; pass user_expressions={"tapelab_guard": REPORT_EXPRESSION}.
        `fresh`: tapelab is then re-imported from disk, as a check needs; a step that no check follows
        before the next step (after the last check in a row) restores and reports only."""
        self._n += 1
        mode = "fresh" if fresh else "restore"
        return (f"__import__('sys').audit('tapelab.guard', {self._mac(f'request {self._n} {mode}')!r}, "
                f"{REPORT_EXPRESSION} := [], {mode!r})\n")

    def findings(self, reply: dict | None) -> list[str]:
        """What the last step found and undid; a missing or forged report is itself a finding."""
        try:
            text = reply["content"]["user_expressions"]["tapelab_guard"]["data"]["text/plain"]
            entries = ast.literal_eval(text)
        except (KeyError, TypeError, ValueError, SyntaxError, MemoryError, RecursionError):
            return [_MISSING]
        if not isinstance(entries, list):
            return [_MISSING]
        for entry in entries:
            try:
                signed = json.loads(entry)
                report, mac = signed["report"], signed["mac"]
                if not (isinstance(report, str) and isinstance(mac, str)
                        and hmac.compare_digest(mac, self._mac(report))):
                    continue
                content = json.loads(report)
            except (TypeError, ValueError, KeyError):
                continue
            if content.get("n") == self._n and isinstance(content.get("findings"), list):
                return [str(f) for f in content["findings"]]
        return [_MISSING]

