"""A hostile autograded 09_fixture notebook, written by hand (no kernel), for the feedback tests.

Every vector is named; its payload, if it ever ran, would set `window.__pwned_<name>`, set the
page title to PWNED and fetch `<url>/<name>` (a server the browser test runs). Beside them sits
what must still show: the student's text, an honest PNG, the scores from the gradebook.
"""
from __future__ import annotations

import base64
import json
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import nbformat

from grading.grade_fixtures import TINY, TINY_HIDDEN, tiny

STUDENT_TEXT = "My explanation: the answer is forty-two because the tape says so."
MISSING_ATTACHMENT = "attachment:nowhere.png"


def png(width: int = 3, height: int = 2) -> str:
    """Base64 of a real red PNG of that size, made here (no file, no library)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    raw = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    return base64.b64encode(raw).decode()


HONEST_PNG = png()


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@dataclass(frozen=True)
class Payload:
    """The payloads of one run, all aimed at `url`."""

    url: str

    def __call__(self, name: str, scope: str = "window") -> str:
        """JavaScript without spaces or double quotes, so it fits in attributes and markdown links."""
        return f"{scope}.__pwned_{name}=1;{scope}.document.title='PWNED';fetch('{self.url}/{name}')"

    def script(self, name: str, scope: str = "window") -> str:
        return f"<script>{self(name, scope)}</script>"

    def page(self, name: str, scope: str) -> str:
        """A data: URL of an HTML page that runs the payload."""
        return f"data:text/html;base64,{_b64(self.script(name, scope))}"


def _html_vectors(p: Payload) -> dict[str, str]:
    """text/html outputs: name -> markup."""
    url = p.url
    return {
        "html_script": p.script("html_script"),
        "img_onerror": f'<img src=x onerror="{p("img_onerror")}">',
        "svg_script": f"<svg>{p.script('svg_script')}</svg>",
        "svg_onload": f'<svg onload="{p("svg_onload")}"></svg>',
        "iframe_srcdoc": f'<iframe srcdoc="{p.script("iframe_srcdoc", "top")}"></iframe>',
        "iframe_src": f'<iframe src="javascript:{p("iframe_src", "top")}"></iframe>',
        "js_link": f'<a href="javascript:{p("js_link")}">click</a>',
        "entity_link": f'<a href="&#106;avascript:{p("entity_link")}">click</a>',
        "tab_link": f'<a href="jav&#x09;ascript:{p("tab_link")}">click</a>',
        "data_link": f'<a href="{p.page("data_link", "opener")}">x</a>',
        "css_inline": f'<div style="background-image:url({url}/css_inline)">styled</div>',
        "css_js": f'<div style="background:url(javascript:{p("css_js")})">styled</div>',
        "css_block": f"<style>body{{background:url({url}/css_block)}}</style>",
        "css_import": f"<style>@import url({url}/css_import);</style>",
        "link_sheet": f'<link rel="stylesheet" href="{url}/link_sheet">',
        "object_data": f'<object data="{p.page("object_data", "top")}"></object>',
        "embed_src": f'<embed src="{url}/embed_src">',
        "details_toggle": f'<details open ontoggle="{p("details_toggle")}"><summary>s</summary></details>',
        "input_focus": f'<input autofocus onfocus="{p("input_focus")}">',
        "body_onload": f'<body onload="{p("body_onload")}">',
        "noscript_mxss": f'<noscript><p title="</noscript><img src=x onerror={p("noscript_mxss")}>"></noscript>',
        "math_mxss": f'<math><mtext><table><mglyph><style><img src=x onerror="{p("math_mxss")}">',
        "form_action": f'<form action="javascript:{p("form_action")}"><button>go</button></form>',
        "base_href": f'<base href="{url}/base_href/"><img src="base.png">',
        "video_poster": f'<video poster="{url}/video_poster" src="{url}/video_src"></video>',
        "marquee": f'<marquee onstart="{p("marquee")}">m</marquee>',
        "template_img": f'<template><img src=x onerror="{p("template_img")}"></template>',
    }


def _markdown_vectors(p: Payload) -> dict[str, str]:
    """Markdown cells the student wrote (or edited): name -> source."""
    return {
        "md_script": p.script("md_script"),
        "md_img_onerror": f'Text <img src=x onerror="{p("md_img_onerror")}">',
        "md_js_link": f"[a](javascript:{p('md_js_link')})",
        "md_mixed_case": f"[b](JaVaScRiPt:{p('md_mixed_case')})",
        "md_files_prefix": f"[c](files/javascript:{p('md_files_prefix')})",
        "md_files_html": f'<a href="files/javascript:{p("md_files_html")}">d</a>',
        "md_autolink": f"<javascript:{p('md_autolink')}>",
        "md_remote_image": f"![e]({p.url}/md_remote_image)",
        "md_meta_refresh": f'<meta http-equiv="refresh" content="0;url={p.url}/md_meta_refresh">',
        "md_iframe": f'<iframe srcdoc="{p.script("md_iframe", "top")}"></iframe>',
        "md_svg": f"<svg>{p.script('md_svg')}</svg>",
        "md_latex": f"$\\href{{javascript:{p('md_latex')}}}{{x}}$",
    }


def _display(data: dict, metadata: dict | None = None) -> dict:
    return {"output_type": "display_data", "data": data, "metadata": metadata or {}}


def _outputs(p: Payload, control: bool) -> list[dict]:
    """The hostile cell's outputs: every HTML vector, then other kinds, data and metadata."""
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" onload="{p("out_svg")}">{p.script("out_svg_script")}</svg>'
    widget = {"model_id": "w1", "version_major": 2, "version_minor": 0}
    png_meta = {"image/png": {"width": f"1 onerror={p('png_width')}", "alt": f'" onerror="{p("png_alt")}'},
                "filenames": {"image/png": f"{p.url}/png_filenames"}}
    count = 5 if control else f'<img src=x onerror="{p("count")}">'
    return [_display({"text/html": markup, "text/plain": name}) for name, markup in _html_vectors(p).items()] + [
        _display({"application/javascript": p("out_js"), "text/plain": "js"}),
        _display({"text/markdown": f"{p.script('out_markdown')}\n\n[m](javascript:{p('out_markdown_link')})"}),
        _display({"image/svg+xml": svg}),
        _display({"application/json": {"html": p.script("out_json")}, "text/plain": "json"}),
        _display({"application/vnd.jupyter.widget-view+json": widget, "text/plain": "widget"}),
        _display({"text/html": f"{p.script('out_isolated')}isolated"}, {"text/html": {"isolated": True}}),
        _display({"image/png": HONEST_PNG, "text/plain": "<Figure size 3x2>"}),
        _display({"image/png": HONEST_PNG}, png_meta),
        _display({"image/png": f'x" onerror="{p("png_breakout")}'}),
        _display({"text/latex": f"$\\href{{javascript:{p('out_latex')}}}{{x}}$"}),
        {"output_type": "stream", "name": "stdout", "text": f"{p.script('out_stream')}\n"},
        {"output_type": "execute_result", "execution_count": count, "data": {"text/plain": "1"}, "metadata": {}},
        {"output_type": "error", "ename": p.script("out_ename"), "evalue": f'<img src=x onerror="{p("out_evalue")}">',
         "traceback": [f"\x1b[31m<img src=x onerror=\"{p('out_traceback')}\">\x1b[0m"]},
    ]


def _source_json(course: Path) -> dict:
    return json.loads(nbformat.writes(nbformat.read(course / "source" / TINY / f"{TINY}.ipynb", as_version=4)))


def hostile(course: Path, url: str, control: bool = False) -> dict:
    """The autograded notebook (as JSON) of a student who answered right and tried every vector.

    `control=True` leaves out what would take the page away (a meta refresh) and what stock nbconvert
    refuses (a missing attachment, an invalid cell id or execution count), for the control page
    that proves the browser test sees a payload that runs.
    """
    p = Payload(url)
    nb = _source_json(course)
    for cell in nb["cells"]:
        if cell.get("id") == "ex9_1_answer":
            cell["source"] = tiny()["ex9_1_answer"]
    markdown = [source for name, source in _markdown_vectors(p).items() if not control or name != "md_meta_refresh"]
    svg = f"<svg xmlns='http://www.w3.org/2000/svg' onload=\"{p('attachment_svg')}\"/>"
    extra = [{"cell_type": "markdown", "id": f"md{i}", "metadata": {}, "source": source}
             for i, source in enumerate(markdown)]
    extra += [
        {"cell_type": "markdown", "id": "student_text", "metadata": {}, "source": STUDENT_TEXT},
        {"cell_type": "markdown", "id": "attach", "metadata": {},
         "source": "![att](attachment:evil.html) ![svg](attachment:evil.svg)",
         "attachments": {"evil.html": {"text/html": _b64(p.script("attachment_html"))},
                         "evil.svg": {"image/svg+xml": _b64(svg)}}},
        {"cell_type": "raw", "id": "raw", "metadata": {"raw_mimetype": "text/html"},
         "source": f'{p.script("raw_script")}<img src=x onerror="{p("raw_img")}">'},
        {"cell_type": "code", "id": "evil" if control else f'evil"><img src=x onerror="{p("cell_id")}">',
         "execution_count": 3, "source": f"print('</pre>{p.script('code_source')}')",
         "metadata": {"tags": [f'x" onmouseover="{p("tag")}', f'">{p.script("tag_script")}'],
                      "nbgrader": {"grade_id": f'">{p.script("grade_id")}', "solution": True,
                                   "grade": True, "points": "<b>9</b>"}},
         "outputs": _outputs(p, control)},
    ]
    if not control:
        extra.append({"cell_type": "markdown", "id": "missing", "metadata": {},
                      "source": f"Look: ![gone]({MISSING_ATTACHMENT})"})
    at = next(i for i, c in enumerate(nb["cells"]) if c.get("id") == "setup9") + 1
    nb["cells"][at:at] = extra
    # A pasted copy of the test cell, last: it gets no nbgrader role (the first cell with the id keeps it).
    nb["cells"].append({"cell_type": "code", "id": "copy", "execution_count": 4, "source": "# a copy",
                        "outputs": [], "metadata": {"nbgrader": {"grade_id": "ex9_1_test", "grade": True,
                                                                 "points": 100}}})
    nb["metadata"].update({
        "title": f"</title>{p.script('nb_title')}",
        "widgets": {"application/vnd.jupyter.widget-state+json": {
            "state": {"w1": {"model_name": f"</script>{p.script('widget_state')}", "state": {}}},
            "version_major": 2, "version_minor": 0}},
    })
    nb["metadata"]["kernelspec"]["display_name"] = p.script("kernelspec")
    return nb


def failing(course: Path) -> dict:
    """A wrong answer whose traceback quotes the hidden test, as stock `nbgrader autograde` leaves it."""
    nb = _source_json(course)
    for cell in nb["cells"]:
        if cell.get("id") == "ex9_1_answer":
            cell["source"] = tiny("41")["ex9_1_answer"]
        if cell.get("id") == "ex9_1_test":
            cell["outputs"] = [{"output_type": "error", "ename": "AssertionError", "evalue": "hidden check of answer()",
                                "traceback": ["\x1b[0;31mAssertionError\x1b[0m Traceback",
                                              f"\x1b[0;32m----> 4\x1b[0m {TINY_HIDDEN}",
                                              "\x1b[0;31mAssertionError\x1b[0m: hidden check of answer()"]}]
    return nb


def hand_in(course_root: Path, student: str, nb: dict) -> Path:
    """Grade the cells of `nb` that the source notebook has into the gradebook with nbgrader's
    autograde steps (scores from their outputs), then write `nb` as autograded/ exactly as given."""
    from tapelab.grading.grades import autograde as finalize
    from tapelab.grading.course import open_course

    known = {cell["id"] for cell in _source_json(course_root)["cells"]}
    honest = nbformat.reads(json.dumps(nb), as_version=4)
    honest.cells = [cell for cell in honest.cells if cell.get("id") in known]
    course = open_course(course_root)
    try:
        submitted = course.path("submitted", student, TINY, TINY)
        submitted.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(honest, submitted)
        finalize.record_submission(course, student, TINY, submitted)
        finalize.save_grades(course, honest, student, TINY, TINY, review=False)
        target = course.path("autograded", student, TINY, TINY)
        target.write_text(json.dumps(nb))
        return target
    finally:
        course.close()
