"""The `Report` diagnose returns: every variable's entry, printable in a terminal and as a notebook table."""
from __future__ import annotations

import html
from dataclasses import dataclass, field

from tapelab.diagnose.compiled import Comparison
from tapelab.diagnose.verdicts import Entry

__all__ = ["Report"]

_COLOURS = {"ok": "#1e7e34", "zero": "#b7791f", "None": "#c53030", "non_finite": "#6b46c1", "untracked": "#c05621"}


@dataclass
class Report:
    """Every variable's entry, printable in a terminal and displayed as a table in a notebook."""

    entries: list[Entry] = field(default_factory=list)
    loss: float | None = None
    restored: list[str] = field(default_factory=list)  # state the run changed and diagnose put back
    compiled: Comparison | None = None  # the compiled run against the eager replay, when compiled code ran

    @property
    def ok(self) -> bool:
        """True when every variable received a finite, nonzero gradient (and a compiled run agreed)."""
        return all(entry.ok for entry in self.entries) and (self.compiled is None or self.compiled.agree)

    @property
    def problems(self) -> list[Entry]:
        return [entry for entry in self.entries if not entry.ok]

    def __getitem__(self, name: str) -> Entry:
        for entry in self.entries:
            if entry.name == name:
                return entry
        raise KeyError(f"no variable named {name!r}; the report has: {[e.name for e in self.entries]}")

    def __str__(self) -> str:
        lines = [f"{e.name}: {e.status}" + (f" (gradient norm {e.norm:.3g})" if e.norm is not None else "")
                 + (f" ({e.cause})" if e.cause else "") + (f". {e.explanation}" if e.explanation else "")
                 for e in self.entries]
        verdict = ("Every gradient is fine." if self.ok else
                   f"{len(self.problems)} of {len(self.entries)} gradients need attention." if self.problems else
                   "Every gradient of the eager replay is fine, but the compiled run differs.")
        return "\n".join([verdict] + lines + ([str(self.compiled)] if self.compiled is not None else []))

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><code>{html.escape(e.name)}</code></td>"
            f"<td style='color:white;background:{_COLOURS[e.status]};text-align:center'>{e.status}</td>"
            f"<td>{'' if e.norm is None else f'{e.norm:.3g}'}</td>"
            f"<td>{html.escape(e.cause or '')}</td><td>{_inline_code(e.explanation)}</td></tr>"
            for e in self.entries)
        compared = "" if self.compiled is None else f"<p>{_inline_code(str(self.compiled))}</p>"
        return ("<table><tr><th>variable</th><th>gradient</th><th>norm</th><th>likely cause</th>"
                f"<th>why, and the fix</th></tr>{rows}</table>{compared}")


def _inline_code(text: str) -> str:
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))
