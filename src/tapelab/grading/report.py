"""report.json and the terminal summary of a run.

The scores in both come from the gradebook (`standings`), read after the run: every student and
notebook ever graded, manual scores included, never only what this run's inputs said. What is
about this run (the status of each input file, timing, warnings) sits beside them, and the history
of every input file tapelab has seen (`inputs`) comes from the resume state.
"""
from __future__ import annotations

import json
import statistics
from dataclasses import asdict
from pathlib import Path

from tapelab.outside import printable
from tapelab.grading.records import atomic_write_text
from tapelab.grading.grades.standings import Standing, distribution
from tapelab.grading.statuses import STATUSES

__all__ = ["ENTRY_FIELDS", "build_report", "write_report", "summary_table"]

ENTRY_FIELDS = ("student", "assignment", "notebook", "status", "score", "max_score", "reason", "flags", "worker",
                "kernel", "submitted_at")  # kernel: "warm" or "cold" where a kernel was started, else None
_NAMES_SHOWN = 12  # per status in the summary; report.json lists all


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return round(ordered[index], 2)


def build_report(run_id: str, protections: dict, entries: list[dict], seconds: list[float], skipped: int,
                 wall: float, standings: list[Standing] | None, inputs: dict, written: dict) -> dict:
    """The report: this run's inputs (`submissions`, `counts`, `timing`), the whole gradebook
    (`gradebook`, `distribution`; None when it could not be read), every input's history, what was written."""
    counts = {status: 0 for status in STATUSES}
    for entry in entries:  # each status counts what this run decided; an unchanged input counts as skipped only
        if not entry.get("unchanged"):
            counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    counts = {k: v for k, v in counts.items() if v}
    counts.update(total=len(entries), executed=len(seconds), skipped_unchanged=skipped,
                  failed=sum(v for k, v in counts.items() if k not in ("graded", "tampered", "superseded")))
    return {
        "run_id": run_id,
        "protections": protections,
        "counts": counts,
        "timing": {"wall_seconds": round(wall, 2),
                   "median_seconds": round(statistics.median(seconds), 2) if seconds else None,
                   "p95_seconds": _percentile(seconds, 0.95)},
        "submissions": [{k: e.get(k) for k in ENTRY_FIELDS} | {"source": e.get("source"),
                                                                  "regraded": e.get("regraded", False),
                                                                  "unchanged": e.get("unchanged", False)}
                        for e in entries],
        "gradebook": None if standings is None else [asdict(row) for row in standings],
        "distribution": None if standings is None else distribution(standings),
        "inputs": inputs,
        "written": written,
    }


def write_report(path: Path, report: dict) -> None:
    atomic_write_text(path, json.dumps(report, indent=1))


def _who(entry: dict) -> str:
    student = printable(entry.get("student") or "?")
    source = printable(entry.get("source") or "")
    return f"{student} ({source})" if source else f"{student} ({entry.get('notebook')})"


def _statuses(report: dict) -> list[str]:
    lines = [f"{'status':<18}{'count':>6}   who, and what to do"]
    for status, (_, todo) in STATUSES.items():
        entries = [e for e in report["submissions"] if e["status"] == status and not e.get("unchanged")]
        if not entries:
            continue
        if status == "graded":
            lines.append(f"{status:<18}{len(entries):>6}")
            continue
        names = ", ".join(_who(e) for e in entries[:_NAMES_SHOWN])
        more = f" and {len(entries) - _NAMES_SHOWN} more (report.json lists all)" if len(entries) > _NAMES_SHOWN else ""
        lines.append(f"{status:<18}{len(entries):>6}   {names}{more}")
        lines.append(f"{'':<27}-> {todo}")
    counts = report["counts"]
    if counts["skipped_unchanged"]:
        lines.append(f"{'unchanged':<18}{counts['skipped_unchanged']:>6}   the same file as an earlier run: not "
                     "regraded, its grade kept")
    lines.append(f"{'inputs':<18}{counts['total']:>6}")
    return lines


def _scores(report: dict) -> list[str]:
    if report["distribution"] is None:
        return ["scores: the gradebook could not be read (see the warnings)"]
    bands = ("0-20%", "20-40%", "40-60%", "60-80%", "80-100%")
    lines = ["scores, from the gradebook (every run, manual scores included), over the submitted notebooks only "
             "(mean, median, min, max), and how many submissions scored in each band of the max score:",
             f"  {'notebook':<22}{'submitted':>10}{'mean':>7}{'median':>7}{'min':>6}{'max':>6}{'of':>5}  "
             + "".join(f"{band:>8}" for band in bands)]
    for d in report["distribution"]:
        def num(v):
            return "-" if v is None else f"{v:g}"
        lines.append(f"  {d['notebook']:<22}{d['submitted']:>5}/{d['students']:<4}{num(d['mean']):>7}"
                     f"{num(d['median']):>7}{num(d['min']):>6}{num(d['max']):>6}{num(d['max_score']):>5}  "
                     + "".join(f"{count:>8}" for count in d["bins"]))
    unnamed = sorted({r["student"] for r in report["gradebook"] if not (r["first_name"] or r["last_name"])})
    if unnamed:
        lines.append(f"  {len(unnamed)} student(s) have no name in the gradebook (formgrader shows them as None): "
                     "pass --roster CLASS.csv (columns id,first_name,last_name,email)")
    review = sorted({(r["student"], r["notebook"]) for r in report["gradebook"] if r["needs_review"]})
    if review:
        lines.append(f"  {len(review)} notebook(s) wait for your review in formgrader (needs manual grade)")
    return lines


def _lateness(report: dict) -> list[str]:
    """The deadlines in the gradebook and each late notebook's lateness and penalty (none: no lines)."""
    late = report.get("lateness")
    if not late or not any(late["deadlines"].values()):
        return []
    due = ", ".join(f"{name} {when} UTC" for name, when in late["deadlines"].items() if when)
    lines = [f"deadlines (gradebook duedate): {due}; late policy: {late['rule']}"]
    for row in late["late"]:
        extension = f", extension {row['extension_hours']:g} h" if row["extension_hours"] else ""
        lines.append(f"  late: {printable(row['student'])} {row['notebook']}: submitted {row['submitted']}, due "
                     f"{row['due']}{extension}: {row['hours_late']:g} h late, penalty {row['penalty']:g} of "
                     f"{row['raw_score']:g}")
    return lines


def summary_table(report: dict) -> str:
    """What the run did: every status with who and what to do, the scores, timing, what was written,
    and a loud line for every protection that was off."""
    timing = report["timing"]
    lines = [f"tapelab grade: run {report['run_id']}", *_statuses(report), *_scores(report), *_lateness(report)]
    med, p95 = timing["median_seconds"], timing["p95_seconds"]
    lines.append(f"seconds per notebook: median {med if med is not None else '-'}, p95 "
                 f"{p95 if p95 is not None else '-'}; wall {timing['wall_seconds']} s"
                 + (" (course set-up included)" if timing.get("course_set_up") else ""))
    execution = report.get("execution") or {}
    if execution.get("pool") == "dask":
        lines.append(f"executed on {len(execution['workers'])} Dask workers of {execution['scheduler']}")
    elif execution:
        lines.append(f"executed on this machine, {execution['jobs']} at a time")
    for what, where in (report.get("written") or {}).items():
        lines.append(f"wrote {what}: {where}")
    for name, protection in report["protections"].items():
        if not protection["on"]:
            lines.append(f"WARNING: protection `{name}` is {protection['how']}")
    return "\n".join(lines)
