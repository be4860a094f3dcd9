"""Per-student feedback HTML, as nbgrader's generate_feedback makes it, with no hidden test and no script.

The autograded notebook holds the test cells as restored from the gradebook, hidden tests
included, and whatever the student wrote: markdown, HTML, JavaScript and widget outputs,
metadata. `configure_feedback` gives nbgrader's GenerateFeedback converter these steps, and both
`write_feedback` and the course configuration (grader/nbgrader_config.py, hence `nbgrader
generate_feedback` and formgrader's "Generate Feedback" button) use it, so all render alike:

- InertNotebook, first, rebuilds the notebook from plain parts: cell kind, source, outputs of
  known kinds with text, HTML, Markdown, LaTeX, PNG or JPEG data only (JavaScript, widget views,
  SVG and JSON are dropped), image attachments; no notebook, cell or output metadata survives,
  and nbgrader's cell roles come from the gradebook by grade id. HTML goes through nbconvert's
  SanitizeHTML (bleach) with a tight policy: no script, event handler, style or class; links to
  http(s), mailto or `#` only; images only inline PNG, JPEG or GIF. Unsafe markup is escaped.
- CutHiddenTests cuts the hidden region of every code cell (`hidden.split`); as a second layer, an
  output that quotes a hidden line (a traceback of stock `nbgrader autograde`) is replaced.
- Markdown is cleaned after it is rendered (filter `markdown2html`): nbgrader's template renders
  markdown cells without nbconvert's `sanitize_html`. The policy keeps no relative URL, so the
  template's `strip_files_prefix` after it cannot turn `files/javascript:` into a live link.
- The page (templates/tapelab_feedback.html.j2) is nbgrader's, with a Content-Security-Policy
  meta that allows no script, and without MathJax.
"""
from __future__ import annotations

import base64
import binascii
import copy
import functools
import html
import re
from pathlib import Path

import bleach
import jinja2
import nbformat
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.markdown_mistune import InvalidNotebook, IPythonRenderer, MarkdownWithMath
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbconvert.preprocessors import Preprocessor
from nbconvert.preprocessors.sanitize import SanitizeHTML
from nbformat import NotebookNode
from nbformat.v4 import new_notebook
from traitlets import Any, Bool, List, Set, Unicode
from traitlets.config import Config

from tapelab.grading.course import Course
from tapelab.grading.hidden import split
from tapelab.grading.records import atomic_write_text

__all__ = ["CutHiddenTests", "InertNotebook", "InertPage", "clean_markdown", "configure_feedback", "feedback_exporter", "hidden_lines",
           "markdown2html", "strip_hidden", "write_feedback"]

PAGE = Path(__file__).with_name("templates") / "tapelab_feedback.html.j2"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_SPACE = re.compile(r"\s+")
_HIDDEN_NOTE = "[hidden test line removed]"
_HIDDEN_FAILED = "A hidden test failed (its code and its message are not shown)."
CACHED = 4096  # rendered markdown sources and highlighted code sources kept (the pages of a class share most)

# -- hidden tests ------------------------------------------------------------------------------------


def hidden_lines(nb: NotebookNode) -> list[str]:
    """The non-blank lines of the hidden-test regions of the code cells, stripped."""
    return [line.strip() for cell in nb.cells if cell.cell_type == "code"
            for line in split(cell.source)[1].splitlines() if line.strip()]


def _squash(text: str) -> str:
    return _SPACE.sub("", _ANSI.sub("", text))


def _quotes(line: str, secrets: list[str]) -> bool:
    squashed = _squash(line)
    return any(secret in squashed for secret in secrets)


def _scrub(text: str, secrets: list[str]) -> str:
    return "\n".join(_HIDDEN_NOTE if _quotes(line, secrets) else line for line in text.split("\n"))


def strip_hidden(nb: NotebookNode) -> NotebookNode:
    """Cut the hidden regions from the code cells, in place (on a valid notebook: InertNotebook
    runs first). Second layer, for notebooks autograded by stock nbgrader: an error that quotes a
    hidden line came from the hidden part, so it shows a note instead; other output lines that
    quote one are replaced."""
    secrets = [s for s in map(_squash, hidden_lines(nb)) if s]
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.source = split(cell.source)[0]
        for output in cell.outputs if secrets else []:
            if output.output_type == "error":
                if any(_quotes(line, secrets) for line in [*output.traceback, output.evalue]):
                    output.evalue, output.traceback = "", [_HIDDEN_FAILED]
            elif output.output_type == "stream":
                output.text = _scrub(output.text, secrets)
            else:
                for mime, value in output.data.items():
                    if isinstance(value, str):
                        output.data[mime] = _scrub(value, secrets)
    return nb


class CutHiddenTests(Preprocessor):
    """nbconvert step of `strip_hidden`: feedback shows the visible part of each test cell only."""

    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        return strip_hidden(nb), resources


# -- inert HTML ----------------------------------------------------------------------------------------

_TAGS = sorted({*bleach.ALLOWED_TAGS, "p", "div", "span", "pre", "br", "hr", "h1", "h2", "h3", "h4", "h5",
               "h6", "table", "thead", "tbody", "tfoot", "tr", "th", "td", "caption", "img", "sub", "sup",
               "del", "s", "dl", "dt", "dd", "kbd", "samp", "var"})
_ATTRIBUTES = {"a": {"title"}, "abbr": {"title"}, "acronym": {"title"}, "img": {"alt", "title"},
               "th": {"colspan", "rowspan"}, "td": {"colspan", "rowspan"}}
# Checked on the value as the browser will read it (bleach decodes entities first): nothing may
# precede the scheme, so no "java\tscript:" or "\x01data:" can pass.
_LINK = re.compile(r"(https?://|mailto:|#)[^\x00-\x20\x7f]*", re.IGNORECASE)
_INLINE_IMAGE = re.compile(r"data:image/(png|jpeg|gif);base64,[A-Za-z0-9+/]*={0,2}")
_IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif")
# An image the policy left without a source (a web or file URL, which the page's policy would not load
# either): its alt text (already escaped by bleach) instead of a broken image. A markdown image with no
# alt text gets nbconvert's (`clean_markdown`; the template gives output images the same).
MISSING_ALT = "No description has been provided for this image"
_IMAGE_TAG = re.compile(r"""<img((?:\s+[\w-]+=(?:"[^"]*"|'[^']*'))*)\s*/?>""")  # as bleach writes it: quoted
_ALT = re.compile(r"""\salt=(?:"([^"]*)"|'([^']*)')""")


def _alt_for_sourceless(tag: re.Match) -> str:
    attributes = tag.group(1)
    if re.search(r"\ssrc=", attributes):
        return tag.group(0)
    alt = _ALT.search(attributes)
    return html.escape(html.unescape(alt.group(1) or alt.group(2) or ""), quote=False) if alt else ""


def _allowed_attribute(tag: str, name: str, value: str) -> bool:
    """bleach's attribute test: a few plain attributes, safe links, inline images."""
    if (tag, name) == ("a", "href"):
        return bool(_LINK.fullmatch(value))
    if (tag, name) == ("img", "src"):
        return bool(_INLINE_IMAGE.fullmatch(value))
    return name in _ATTRIBUTES.get(tag, ())


def _text(value: object) -> str:
    """A notebook string field as str, whatever type the file holds ("" for a non-string)."""
    if isinstance(value, list):
        return "".join(part for part in value if isinstance(part, str))
    return value if isinstance(value, str) else ""


def _base64(value: object) -> str | None:
    """Canonical base64 of an image field, or None when it is not base64 (it could close an attribute)."""
    try:
        raw = base64.b64decode("".join(_text(value).split()), validate=True)
    except (binascii.Error, ValueError):
        return None
    return base64.b64encode(raw).decode("ascii") if raw else None


def _mapping(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _items(value: object) -> list:
    return value if isinstance(value, list) else []


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _node(**fields) -> NotebookNode:
    """A cell or output as nbformat's `new_*` helpers build it, without their schema check of each one (a
    third of a page's time): the policy makes every field valid, and the exporter validates the notebook."""
    node = NotebookNode()
    node.update(fields)  # nested mappings become NotebookNodes, as in the helpers
    return node


class InertNotebook(SanitizeHTML):
    """nbconvert's SanitizeHTML over a notebook rebuilt from plain parts, with tapelab's policy.

    Unsafe markup is escaped, not stripped, so the instructor sees what the student wrote.
    """

    enabled = Bool(True).tag(config=True)
    tags = List(Unicode(), default_value=_TAGS).tag(config=True)
    attributes = Any(default_value=_allowed_attribute).tag(config=True)
    safe_output_keys = Set(default_value={"text/plain", "text/latex", "image/png", "image/jpeg"}).tag(config=True)
    sanitized_output_types = Set(default_value={"text/html", "text/markdown"}).tag(config=True)

    def sanitize_html_tags(self, html_str: str) -> str:
        """bleach.clean with this policy; `data:` passes bleach's scheme check, then `_allowed_attribute`
        keeps it for inline images only; an image left without a source shows its alt text."""
        clean = bleach.clean(html_str, tags=self.tags, attributes=self.attributes,
                             protocols=[*bleach.ALLOWED_PROTOCOLS, "data"], strip=self.strip,
                             strip_comments=self.strip_comments)
        return _IMAGE_TAG.sub(_alt_for_sourceless, clean)

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        roles = _roles(resources)
        clean = new_notebook(metadata={"language_info": {"name": "python"}})  # the course is Python
        for index, cell in enumerate(nb.cells):
            rebuilt = self._cell(cell, f"cell-{index}") if isinstance(cell, dict) else None
            if rebuilt is None:
                continue
            grade_id = _mapping(_mapping(cell.get("metadata")).get("nbgrader")).get("grade_id")
            if isinstance(grade_id, str) and grade_id in roles:
                rebuilt.metadata["nbgrader"] = roles.pop(grade_id)  # pop: a copy gets no role
            clean.cells.append(rebuilt)
        return clean, resources

    def _cell(self, cell: dict, cell_id: str) -> NotebookNode | None:
        source = _text(cell.get("source"))
        kind = cell.get("cell_type")
        if kind == "code":
            outputs = [out for out in map(self._output, _items(cell.get("outputs"))) if out is not None]
            return _node(id=cell_id, cell_type="code", metadata={}, source=source, outputs=self.sanitize_code_outputs(
                outputs), execution_count=_count(cell.get("execution_count")))
        if kind == "markdown":
            rebuilt = _node(id=cell_id, cell_type="markdown", metadata={}, source=source)
            attachments = {name: images for name, bundle in _mapping(cell.get("attachments")).items()
                           if (images := {m: b for m in _IMAGE_MIMES
                                          if (b := _base64(_mapping(bundle).get(m))) is not None})}
            if attachments:
                rebuilt.attachments = attachments
            return rebuilt
        if kind == "raw":
            return _node(id=cell_id, cell_type="raw", metadata={}, source=self.sanitize_html_tags(source))
        return None

    def _output(self, output: object) -> NotebookNode | None:
        output = _mapping(output)
        kind = output.get("output_type")
        if kind == "stream":
            return _node(output_type="stream", name="stderr" if output.get("name") == "stderr" else "stdout",
                         text=_text(output.get("text")))
        if kind == "error":
            return _node(output_type="error", ename=_text(output.get("ename")), evalue=_text(output.get("evalue")),
                         traceback=[_text(line) for line in _items(output.get("traceback"))])
        if kind not in ("display_data", "execute_result"):
            return None
        given, data = _mapping(output.get("data")), {}
        for mime in (self.safe_output_keys | self.sanitized_output_types) & given.keys():
            value = _base64(given[mime]) if mime.startswith("image/") else _text(given[mime])
            if value is not None:
                data[mime] = value
        if not data:  # nothing left that the page may show
            return None
        if kind == "execute_result":
            return _node(output_type=kind, metadata={}, data=data,
                         execution_count=_count(output.get("execution_count")))
        return _node(output_type=kind, metadata={}, data=data)


def _roles(resources: dict) -> dict[str, dict]:
    """nbgrader's metadata of each graded, solution, task or locked cell, from the gradebook (the
    instructor's source notebook), by grade id: nothing the student wrote in a cell's metadata counts."""
    from nbgrader.api import Gradebook

    info = resources["nbgrader"]
    roles: dict[str, dict] = {}

    def role(name: str) -> dict:
        return roles.setdefault(name, {"grade_id": name, "grade": False, "solution": False, "task": False,
                                       "locked": False, "schema_version": 3})

    with Gradebook(info["db_url"]) as gb:
        notebook = gb.find_notebook(info["notebook"], info["assignment"])
        for cell in notebook.source_cells:
            role(cell.name)["locked"] = bool(cell.locked)
        for cell in notebook.grade_cells:
            role(cell.name).update(grade=True, points=float(cell.max_score))
        for cell in notebook.solution_cells:
            role(cell.name)["solution"] = True
        for cell in notebook.task_cells:
            role(cell.name).update(task=True, points=float(cell.max_score))
    return roles


_POLICY = InertNotebook()  # the filters' policy: the same as the step's


@jinja2.pass_context
def markdown2html(context: jinja2.runtime.Context, source: str) -> str:
    """The page's filter: `clean_markdown` with the attachments of the cell being rendered."""
    return clean_markdown(source, context.get("cell", {}).get("attachments"))


def clean_markdown(source: str, attachments: object = None) -> str:
    """nbconvert's markdown rendering (with the cell's attachments), then cleaned with the policy.

    An image naming an attachment the cell lacks shows the markdown as text instead of failing.
    """
    attachments = _mapping(attachments)
    return _clean_markdown(source, attachments) if attachments else _shared_markdown(source)


@functools.lru_cache(maxsize=CACHED)
def _shared_markdown(source: str) -> str:
    """`_clean_markdown` without attachments, once per process for a source: the instructor's markdown
    is the same on every student's page."""
    return _clean_markdown(source, {})


def _clean_markdown(source: str, attachments: dict) -> str:
    renderer = IPythonRenderer(escape=False, attachments=attachments, exclude_anchor_links=True)
    try:
        rendered = MarkdownWithMath(renderer=renderer).render(source)
    except InvalidNotebook:
        rendered = f"<pre>{html.escape(source)}</pre>"
    return _IMAGE_TAG.sub(_described, _POLICY.sanitize_html_tags(rendered))


def _described(tag: re.Match) -> str:
    """An image (the policy left only inline ones) with nbconvert's alt text when it has none."""
    return tag.group(0) if _ALT.search(tag.group(1)) else f'<img{tag.group(1)} alt="{MISSING_ALT}">'


# -- the page ------------------------------------------------------------------------------------------


class InertPage(HTMLExporter):
    """nbconvert's HTMLExporter without its last pass, which re-parses the whole page with BeautifulSoup's
    pure-Python parser (half the page's time) to add alt text to images and tabindex to JupyterLab's cell
    wrappers: here images get their alt text while rendering (the template, `InertNotebook`'s sanitizer),
    and nbgrader's classic page has no JupyterLab wrapper to give a tabindex. Code is highlighted once per
    exporter for a source (`_highlight`): the instructor's code and tests are the same on every page."""

    def from_notebook_node(self, nb: NotebookNode, resources: dict | None = None, **kw) -> tuple[str, dict]:
        language = nb.metadata.get("language_info", {})
        lexer = language.get("pygments_lexer", language.get("name"))
        highlight = self.filters.get("highlight_code") or functools.partial(self._highlight, lexer)
        self.register_filter("highlight_code", highlight)
        resources = self._init_resources(resources)
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata,
                                                                       parent=self, resources=resources))
        return TemplateExporter.from_notebook_node(self, nb, resources, **kw)

    @functools.cached_property
    def _highlighted(self):
        return functools.lru_cache(maxsize=CACHED)(lambda lexer, source, language, magics: Highlight2HTML(
            pygments_lexer=lexer, parent=self)(source, language, {"magics_language": magics} if magics else {}))

    def _highlight(self, lexer: str | None, source: str, language: str | None = None, metadata: dict | None = None):
        """Highlight2HTML's filter, remembered; of the metadata it reads only `magics_language`."""
        magics = (metadata or {}).get("magics_language")
        return self._highlighted(lexer, source, language, magics if isinstance(magics, str) else None)


def configure_feedback(c: Config) -> Config:
    """Make nbgrader's GenerateFeedback cut hidden tests and render inert HTML; return `c`.

    Called by the course configuration (grader/nbgrader_config.py) and by `write_feedback`. The
    exporter settings are scoped to the exporter GenerateFeedback makes, so formgrader's own views
    are untouched; formgrader's button forces nbgrader's template name and folders, which a
    template given by path survives.
    """
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import GetGrades

    c.GenerateFeedback.preprocessors = [InertNotebook, CutHiddenTests, GetGrades, CSSHTMLHeaderPreprocessor]
    c.GenerateFeedback.exporter_class = InertPage
    exporter = c.GenerateFeedback.HTMLExporter  # InertPage is one: the section applies
    exporter.sanitize_html = True  # the template's own switch: no script for JS or widget outputs
    # Validate once, after the steps: a malformed autograded notebook is rebuilt by InertNotebook
    # and rendered, rather than refused by the step that runs before it (the template's CSS one).
    exporter.optimistic_validation = True
    exporter.template_file = str(PAGE)
    exporter.filters = {"markdown2html": markdown2html}
    return c


def feedback_exporter(course: Course):
    """The exporter nbgrader's GenerateFeedback builds, from the course config with `configure_feedback`:
    one per opened course, built on first use and reused for every page (as nbgrader's converter uses
    it), so its templates are compiled once per run, not once per page."""
    from nbgrader.converters import GenerateFeedback
    from nbgrader.coursedir import CourseDirectory

    if course.exporter is None:
        config = configure_feedback(copy.deepcopy(course.config))
        converter = GenerateFeedback(coursedir=CourseDirectory(config=config), config=config)
        exporter = converter.exporter_class(parent=converter, config=converter.config)
        for preprocessor in converter.preprocessors:
            exporter.register_preprocessor(preprocessor)
        course.exporter = exporter
    return course.exporter


def write_feedback(course: Course, student: str, assignment: str, notebook: str) -> Path:
    """Render feedback/<student>/<assignment>/<notebook>.html from the autograded notebook."""
    nb = nbformat.read(course.path("autograded", student, assignment, notebook), as_version=4)
    resources = {"nbgrader": {"student": student, "assignment": assignment, "notebook": notebook,
                              "db_url": course.db_url}, "unique_key": notebook,
                 "output_files_dir": f"{notebook}_files"}
    page, _ = feedback_exporter(course).from_notebook_node(nb, resources=resources)
    target = course.path("feedback", student, assignment, notebook, ext=".html")
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, page)
    return target
