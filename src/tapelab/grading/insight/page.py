"""The class insight as one self-contained HTML page: tables and matplotlib plots (PNG, base64).

Every text on the page (ids, causes, example answers, checker messages, all reachable by student
code) is escaped; the page carries no script and a Content-Security-Policy that allows none, loads
nothing from anywhere (images are data: URLs) and can be mailed or opened from a file.
"""
from __future__ import annotations

import base64
import io
import re
from html import escape

__all__ = ["render", "CSP"]

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
# Each outcome has a colour and a hatching of its own, so the bars read without telling colours apart.
_COLOURS = {"correct": "#1e7e34", "named": "#b3261e", "unnamed": "#e8710a", "hidden_only": "#5b3e96",
            "not_attempted": "#9aa0a6"}
_HATCHES = {"correct": "", "named": "//", "unnamed": "\\\\", "hidden_only": "xx", "not_attempted": ".."}
_BANDS = ("0-20%", "20-40%", "40-60%", "60-80%", "80-100%")
_CODE = re.compile(r"`([^`]+)`")
_OUTCOME_NAMES = {"correct": "correct", "named": "named mistake", "unnamed": "wrong, no cause named",
                  "hidden_only": "wrong on hidden inputs only", "not_attempted": "not attempted"}
_STYLE = """body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#202124}
table{border-collapse:collapse;margin:8px 0 16px}td,th{border:1px solid #dadce0;padding:3px 8px;text-align:left;
vertical-align:top}th{background:#f1f3f4}pre{background:#f8f9fa;padding:6px;white-space:pre-wrap;
overflow-wrap:anywhere;margin:4px 0}.num{text-align:right}img{max-width:100%}"""


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.0f}%"


def _num(value) -> str:
    return "-" if value is None else escape(f"{value:g}" if isinstance(value, float) else str(value))


def _png(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=80, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def load_plotting() -> None:
    """Import matplotlib with its Agg backend (seconds of CPU): `tapelab grade` calls this once nothing is
    left to start, while the last notebooks run, so the report written at the end does not wait for it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.figure  # noqa: F401


def _code(text: str) -> str:
    """`text` escaped, its Markdown code spans (`x`) as <code>."""
    return _CODE.sub(r"<code>\1</code>", escape(text))


def _mine(insight: dict, notebook: str) -> list[dict]:
    return [e for e in insight["exercises"] if e["notebook"] == notebook]


def _plots(insight: dict) -> dict[str, str]:
    """One figure per notebook with submissions: its score histogram (whole students on the axis) beside the
    outcome of each exercise (stacked shares, each outcome coloured and hatched, the legend beside the bars)."""
    load_plotting()
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    out = {}
    for a in insight["assignments"]:
        if not a["submitted"]:
            continue
        mine = _mine(insight, a["notebook"])
        figure = Figure(figsize=(10, 2.6))
        left, right = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.6]})
        left.bar(_BANDS, a["bins"], color="#1a4fa0")
        left.yaxis.set_major_locator(MaxNLocator(integer=True))
        left.set_ylabel("students", fontsize=7)
        left.set_title(f"scores of {a['submitted']} submission(s)", fontsize=9)
        left.tick_params(labelsize=7)
        bottom = [0.0] * len(mine)
        for outcome, colour in _COLOURS.items():
            shares = [e[f"share_{outcome}"] or 0.0 for e in mine]
            right.barh([e["exercise"] for e in mine], shares, left=bottom, color=colour, hatch=_HATCHES[outcome],
                       edgecolor="white", label=_OUTCOME_NAMES[outcome])
            bottom = [b + s for b, s in zip(bottom, shares)]
        right.set_xlim(0, 1)
        right.invert_yaxis()
        right.set_title("share of submissions, per exercise", fontsize=9)
        right.tick_params(labelsize=7)
        right.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
        out[a["notebook"]] = _png(figure)
    return out


def _alt(insight: dict, a: dict) -> str:
    """What the figure of notebook `a` shows, in words and counts."""
    bands = ", ".join(f"{band}: {count}" for band, count in zip(_BANDS, a["bins"]))
    exercises = "; ".join(f"exercise {e['exercise']}: " + ", ".join(f"{e[k]} {_OUTCOME_NAMES[k]}" for k in _COLOURS)
                          for e in _mine(insight, a["notebook"]))
    return (f"{a['notebook']}: {a['submitted']} submission(s) by share of the max score ({bands}). "
            f"Outcomes of the submissions per exercise: {exercises}.")


def _table(heads: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in heads)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _late(late: dict, names: bool) -> str:
    """The notebook's deadline, how many were late, the penalties stored in the gradebook, and one row
    per late notebook (labelled only when the report names students)."""
    if late["deadline"] is None and not late["late"]:
        return "<p>No deadline in the gradebook: nothing is late.</p>"
    summary = _table(["deadline (UTC)", "late submissions", "penalised", "points deducted"],
                     [[escape(late["deadline"] or "none"), str(late["late"]), str(late["penalised"]),
                       _num(late["points_deducted"])]])
    if not late["submissions"]:
        return summary
    heads = ["hours late", "extension (hours)", "raw score", "late penalty", "score"]
    rows = [[_num(r["hours_late"]), _num(r["extension_hours"]), _num(r["raw_score"]), _num(r["penalty"]),
             _num(r["score"])] for r in late["submissions"]]
    if names:
        heads, rows = ["student", *heads], [[escape(r["student"]), *row] for r, row in zip(late["submissions"], rows)]
    return summary + _table(heads, rows)


def _assignments(insight: dict, plots: dict[str, str]) -> str:
    parts = ["<h2 id='assignments'>Assignments</h2>",
             f"<p>Late policy: {escape(insight['late_rule'])}; deadlines and penalties as the gradebook holds "
             "them. Mean, median, min and max are over the submitted notebooks only: a student who sent nothing "
             "counts in students, not in the scores.</p>"]
    for a in insight["assignments"]:
        statuses = ", ".join(f"{escape(k)}: {v}" for k, v in a["statuses"].items())
        grading = a["grading"]
        parts.append(f"<h3>{escape(a['notebook'])}</h3>")
        parts.append(_table(
            ["students", "submitted", "completion", "mean", "median", "min", "max", "of", "statuses",
             "grading time"],
            [[str(a["students"]), str(a["submitted"]), _pct(a["completion"]), _num(a["mean"]), _num(a["median"]),
              _num(a["min"]), _num(a["max"]), _num(a["max_score"]), statuses,
              f"{grading['executions']} execution(s), {_num(grading['total_seconds'])} s in all, median "
              f"{_num(grading['median_seconds'])} s"]]))
        parts.append(_late(a["late_policy"], insight["names"]))
        if a["notebook"] in plots:
            parts.append(f"<img alt='{escape(_alt(insight, a))}' src='{plots[a['notebook']]}'>")
        else:
            parts.append(f"<p>No submissions of {escape(a['notebook'])} yet: nothing to plot.</p>")
    return "".join(parts)


def _exercises(insight: dict) -> str:
    parts = ["<h2 id='exercises'>Exercises</h2>"]
    for e in insight["exercises"]:
        label = f"{e['notebook']} exercise {e['exercise']}"
        parts.append(f"<h3>{escape(label)}</h3>")
        parts.append(_table(["submitted", *(_OUTCOME_NAMES[k] for k in _COLOURS)],
                            [[str(e["submitted"]), *(f"{e[k]} ({_pct(e[f'share_{k}'])})" for k in _COLOURS)]]))
        if e["causes"]:
            summary = ", ".join(f"{_pct(c['share'])} {c['title']}" for c in e["causes"])
            parts.append(f"<p>{escape(e['exercise'])}: {_code(summary)}</p>")
        for c in e["causes"]:
            ex = c["example"]
            parts.append(f"<p><b>{_code(c['title'])}</b> (<code>{escape(c['cause'])}</code>): {c['students']} "
                         f"student(s), {_pct(c['share'])}. Fix: {_code(c['fix'])}<br>Example, "
                         f"{escape(ex['student'])}:</p><pre>{escape(ex['answer'])}</pre>"
                         + (f"<pre>{escape(ex['message'])}</pre>" if ex["message"] else ""))
    return "".join(parts)


def _ranking(insight: dict) -> str:
    ranking = insight["ranking"]
    exercises = _table(["exercise", "not correct", "submitted"],
                       [[escape(f"{r['notebook']} {r['exercise']}"), _pct(r["share_not_correct"]), str(r["submitted"])]
                        for r in ranking["exercises"]])
    causes = _table(["cause", "students", "in exercises", "fix"],
                    [[f"{_code(c['title'])} (<code>{escape(c['cause'])}</code>)", str(c["students"]),
                      escape(", ".join(c["exercises"])), _code(c["fix"])] for c in ranking["causes"]])
    return f"<h2 id='ranking'>What most needs class time</h2><h3>Exercises</h3>{exercises}<h3>Causes</h3>{causes}"


def _change(insight: dict) -> str:
    change = insight["change"]
    if change["previous"] is None:
        return "<h2 id='change'>Change since the last run</h2><p>No earlier insight to compare with.</p>"
    moved = _table(["exercise", "submitted", "correct"],
                   [[escape(f"{m['notebook']} {m['exercise']}"), f"{_num(m['submitted_before'])} -> {m['submitted_now']}",
                     f"{_pct(m['share_correct_before'])} -> {_pct(m['share_correct_now'])}"] for m in change["exercises"]])
    causes = _table(["exercise", "cause", "students"],
                    [[escape(f"{c['notebook']} {c['exercise']}"), f"<code>{escape(str(c['cause']))}</code>",
                      f"{c['students_before']} -> {c['students_now']}"] for c in change["causes"]])
    return (f"<h2 id='change'>Change since the last run</h2><p>Compared with the insight of "
            f"{escape(str(change['previous']))}.</p>{moved}{causes}")


def render(insight: dict) -> str:
    """The whole page."""
    who = "students by id" if insight["names"] else "students anonymised (pass --names to show ids)"
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\"><title>tapelab class insight</title>"
            f"<style>{_STYLE}</style></head><body><h1>Class insight</h1>"
            f"<p>{insight['students']} student(s), {escape(who)}; made {escape(insight['generated'])} from the "
            "gradebook (scores) and the autograded notebooks (causes, as the checkers printed them).</p>"
            f"{_ranking(insight)}{_assignments(insight, _plots(insight))}{_exercises(insight)}{_change(insight)}"
            "</body></html>")
