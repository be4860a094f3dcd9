"""Per-student HTML feedback, as nbgrader's generate_feedback makes it, without the hidden tests.

The autograded notebook holds the test cells as restored from the gradebook, hidden tests
included, and nbgrader's feedback shows them. Here every `### BEGIN HIDDEN TESTS ... ### END
HIDDEN TESTS` region is cut from graded cells, and any output line that repeats a hidden-test line
(a traceback quoting the failing line) is replaced, before the HTML is rendered.
"""
from __future__ import annotations

import os
import re

import nbformat
from nbformat import NotebookNode
from traitlets.config import Config

from tapelab.grading.course import Course
from tapelab.grading.records import atomic_write_text

__all__ = ["hidden_lines", "strip_hidden", "write_feedback"]

BEGIN, END = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_SPACE = re.compile(r"\s+")
_HIDDEN_NOTE = "[hidden test line removed]"


def _is_graded(cell: NotebookNode) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return bool(meta.get("grade") or meta.get("locked"))


def hidden_lines(nb: NotebookNode) -> list[str]:
    """The non-blank lines inside hidden-test regions of the graded cells (an unclosed region runs to the end)."""
    found = []
    for cell in nb.cells:
        if not _is_graded(cell):
            continue
        inside = False
        for line in cell.source.splitlines():
            if BEGIN in line:
                inside = True
            elif END in line:
                inside = False
            elif inside and line.strip():
                found.append(line.strip())
    return found


def _squash(text: str) -> str:
    return _SPACE.sub("", _ANSI.sub("", text))


def _scrub(text: str, secrets: list[str]) -> str:
    if not secrets:
        return text
    kept = []
    for line in text.split("\n"):
        flat = _squash(line)
        kept.append(_HIDDEN_NOTE if any(s and s in flat for s in secrets) else line)
    return "\n".join(kept)


def strip_hidden(nb: NotebookNode) -> NotebookNode:
    """Cut hidden regions from graded cells and hidden-test lines from every output, in place."""
    secrets = [_squash(line) for line in hidden_lines(nb)]
    for cell in nb.cells:
        if _is_graded(cell) and BEGIN in cell.source:
            kept, inside = [], False
            for line in cell.source.split("\n"):
                if BEGIN in line:
                    inside = True
                elif END in line:
                    inside = False
                elif not inside:
                    kept.append(line)
            cell.source = "\n".join(kept).rstrip("\n")
        for output in cell.get("outputs", []):
            if "text" in output:
                output.text = _scrub(output.text, secrets)
            if "traceback" in output:
                output.traceback = [_scrub(line, secrets) for line in output.traceback]
            if "evalue" in output:
                output.evalue = _scrub(output.evalue, secrets)
            for mime, value in list(output.get("data", {}).items()):
                if isinstance(value, str):
                    output.data[mime] = _scrub(value, secrets)
    return nb


def _exporter(course: Course):
    from nbconvert.exporters import HTMLExporter
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.converters import generate_feedback
    from nbgrader.preprocessors import GetGrades

    base = os.path.dirname(os.path.abspath(generate_feedback.__file__))
    config = Config(course.config)
    if "template_name" not in config.HTMLExporter:
        config.HTMLExporter.template_name = "feedback"
    if "extra_template_basedirs" not in config.HTMLExporter:
        config.HTMLExporter.extra_template_basedirs = [
            os.path.abspath(os.path.join(base, "..", "server_extensions", "formgrader", "templates"))]
    config.HTMLExporter.extra_template_paths = [os.path.abspath(os.path.join(
        base, "..", "server_extensions", "formgrader", "static", "node_modules", "bootstrap", "dist", "css"))]
    exporter = HTMLExporter(config=config)
    exporter.register_preprocessor(GetGrades(config=config), enabled=True)
    exporter.register_preprocessor(CSSHTMLHeaderPreprocessor(config=config), enabled=True)
    return exporter


def write_feedback(course: Course, student: str, assignment: str, notebook: str):
    """Render feedback/<student>/<assignment>/<notebook>.html from the autograded notebook."""
    nb = nbformat.read(course.path("autograded", student, assignment, notebook), as_version=4)
    nb = strip_hidden(nb)
    resources = {"nbgrader": {"student": student, "assignment": assignment, "notebook": notebook,
                              "db_url": course.db_url}, "unique_key": notebook,
                 "output_files_dir": f"{notebook}_files"}
    html, _ = _exporter(course).from_notebook_node(nb, resources=resources)
    target = course.path("feedback", student, assignment, notebook, ext=".html")
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, html)
    return target
