"""Findings as text, JSON, GitHub workflow annotations or SARIF 2.1.0 (for code scanning).

Every format carries each finding's level (its rule's: "error" or "warning") and, in a notebook, its code
cell. A notebook finding's line and column count within its cell, as Jupyter numbers a cell's lines and as
the text format prints them (`book.ipynb:cell 3:2:5`), never lines of the `.ipynb` file's JSON: every
format says which cell (JSON `cell`; GitHub the annotation's title and message; SARIF the message, a
`logicalLocations` entry and the region's `properties.cell`).

SARIF names the tool's version and links each rule to its section of docs/lint.md (`helpUri`); both come
from tapelab's project metadata (`version` and `[project.urls] Documentation` of pyproject.toml), see
`about`.
"""
from __future__ import annotations

import json
import tomllib
from pathlib import Path, PurePath
from urllib.parse import quote

from tapelab.lint.model import RULES, Finding, Rule

__all__ = ["FORMATS", "SARIF_SCHEMA", "about", "anchor", "render"]

FORMATS = ("text", "json", "github", "sarif")
# The `id` of the OASIS SARIF 2.1.0 (errata 01) schema, as a log's `$schema` names it.
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
# tapelab's pyproject.toml when this module runs from a checkout (src/tapelab/lint/output.py), editable or not.
_PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"


def about() -> tuple[str | None, str | None]:
    """tapelab's version and the URL of its rule docs (docs/lint.md), from the project's own metadata: the
    pyproject.toml of the checkout this module runs from (an editable install's metadata may be older), else
    the installed distribution's; None for what neither says."""
    if _PYPROJECT.is_file():
        project = tomllib.loads(_PYPROJECT.read_text(encoding="utf-8")).get("project", {})
        if project.get("name") == "tapelab":
            return project.get("version"), _lint_docs(project.get("urls", {}).get("Documentation"))
    from importlib import metadata  # here: only SARIF says the version

    try:
        meta = metadata.metadata("tapelab")
    except metadata.PackageNotFoundError:
        return None, None
    urls = dict(entry.split(", ", 1) for entry in meta.get_all("Project-URL") or [] if ", " in entry)
    return meta["Version"], _lint_docs(urls.get("Documentation"))


def _lint_docs(documentation: str | None) -> str | None:
    return f"{documentation.rstrip('/')}/lint.md" if documentation else None


def anchor(heading: str) -> str:
    """The fragment GitHub gives a Markdown heading (as github-slugger makes it): lower case, every character
    but letters, digits, `-`, `_` and spaces dropped (a code span's backticks too), each space a hyphen."""
    return "".join(c for c in heading.lower() if c.isalnum() or c in "-_ ").replace(" ", "-")


def _heading(rule: Rule) -> str:
    return rule.explanation().split("\n", 1)[0].removeprefix("### ")


def _cell(f: Finding) -> str:
    return f" (cell {f.cell})" if f.cell is not None else ""


def _text(findings: list[Finding]) -> str:
    lines = [f"{f.where()}: {f.number}{' [*]' if f.edit else ''} [{f.code}] {f.level}: {f.message}. Fix: {f.fix}"
             for f in findings]
    lines.append(f"{len(findings)} finding{'s' if len(findings) != 1 else ''}")
    fixable = sum(f.edit is not None for f in findings)
    if fixable:
        lines.append(f"[*] {fixable} fixable with `tapelab lint --fix`")
    return "\n".join(lines)


def _json(findings: list[Finding]) -> str:
    return json.dumps([{"path": f.path, "cell": f.cell, "line": f.line, "column": f.col + 1, "rule": f.number,
                        "code": f.code, "level": f.level, "message": f.message, "fix": f.fix} for f in findings],
                      indent=2)


def _escape(text: str, prop: bool = False) -> str:
    """A workflow command's message (or, with `prop`, a property value, where `:` and `,` are separators)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def _github(findings: list[Finding]) -> str:
    return "\n".join(
        f"::{f.level} file={_escape(f.path, True)},line={f.line},col={f.col + 1},"
        f"title={_escape(f'{f.number} {f.code}{_cell(f)}', True)}::{_escape(f.message + _cell(f) + '. Fix: ' + f.fix)}"
        for f in findings)


def _uri(path: str) -> str:
    """`path` as a SARIF artifact URI: an absolute path as a `file:` URI, a relative one percent-encoded."""
    pure = PurePath(path)
    return Path(path).as_uri() if pure.is_absolute() else quote(pure.as_posix())


def _location(f: Finding) -> dict:
    region: dict = {"startLine": f.line, "startColumn": f.col + 1}
    location: dict = {"physicalLocation": {"artifactLocation": {"uri": _uri(f.path)}, "region": region}}
    if f.cell is not None:
        region["properties"] = {"cell": f.cell}  # the region's lines count within this code cell
        location["logicalLocations"] = [{"name": f"cell {f.cell}", "fullyQualifiedName": f"{f.path}:cell {f.cell}",
                                         "kind": "notebookCell"}]
    return location


def _sarif(findings: list[Finding]) -> str:
    version, docs = about()
    rules = []
    for r in RULES.values():
        rule = {"id": r.number, "name": r.code, "shortDescription": {"text": r.cause.title},
                "help": {"text": r.cause.fix, "markdown": r.doc}, "defaultConfiguration": {"level": r.level}}
        if docs:
            rule["helpUri"] = f"{docs}#{anchor(_heading(r))}"
        rules.append(rule)
    index = {r.number: i for i, r in enumerate(RULES.values())}
    results = [{"ruleId": f.number, "ruleIndex": index[f.number], "level": f.level,
                "message": {"text": f.message + _cell(f)}, "locations": [_location(f)]} for f in findings]
    driver = {"name": "tapelab lint", **({"version": version} if version else {}),
              **({"informationUri": docs} if docs else {}), "rules": rules}
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0",
                       "runs": [{"tool": {"driver": driver}, "results": results}]}, indent=2)


def render(findings: list[Finding], fmt: str) -> str:
    """The findings in format `fmt` (one of FORMATS)."""
    return {"text": _text, "json": _json, "github": _github, "sarif": _sarif}[fmt](findings)
