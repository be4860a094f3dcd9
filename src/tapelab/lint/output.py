"""Findings as text, JSON, GitHub workflow annotations or SARIF 2.1.0 (for code scanning)."""
from __future__ import annotations

import json

from tapelab.lint.model import RULES, Finding

__all__ = ["FORMATS", "render"]

FORMATS = ("text", "json", "github", "sarif")


def _text(findings: list[Finding]) -> str:
    lines = [f"{f.where()}: {f.number}{' [*]' if f.edit else ''} [{f.code}] {f.message}. Fix: {f.fix}"
             for f in findings]
    lines.append(f"{len(findings)} finding{'s' if len(findings) != 1 else ''}")
    fixable = sum(f.edit is not None for f in findings)
    if fixable:
        lines.append(f"[*] {fixable} fixable with `tapelab lint --fix`")
    return "\n".join(lines)


def _json(findings: list[Finding]) -> str:
    return json.dumps([{"path": f.path, "cell": f.cell, "line": f.line, "column": f.col + 1, "rule": f.number,
                        "code": f.code, "message": f.message, "fix": f.fix} for f in findings], indent=2)


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _github(findings: list[Finding]) -> str:
    lines = []
    for f in findings:
        cell = f" (cell {f.cell})" if f.cell is not None else ""
        lines.append(f"::error file={f.path},line={f.line},col={f.col + 1},title={f.number} {f.code}::"
                     f"{_escape(f.message + cell + '. Fix: ' + f.fix)}")
    return "\n".join(lines)


def _sarif(findings: list[Finding]) -> str:
    rules = [{"id": r.number, "name": r.code, "shortDescription": {"text": r.cause.title},
              "help": {"text": r.cause.fix, "markdown": r.doc}} for r in RULES.values()]
    index = {r.number: i for i, r in enumerate(RULES.values())}
    results = [{"ruleId": f.number, "ruleIndex": index[f.number], "level": "error",
                "message": {"text": f.message + (f" (cell {f.cell})" if f.cell is not None else "")},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": f.path},
                                                    "region": {"startLine": f.line, "startColumn": f.col + 1}}}]}
               for f in findings]
    return json.dumps({"version": "2.1.0", "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
                       "runs": [{"tool": {"driver": {"name": "tapelab lint", "rules": rules}},
                                 "results": results}]}, indent=2)


def render(findings: list[Finding], fmt: str) -> str:
    """The findings in format `fmt` (one of FORMATS)."""
    return {"text": _text, "json": _json, "github": _github, "sarif": _sarif}[fmt](findings)
