"""The run's outputs for people and programs: report.json, grades.csv and the summary table."""
from __future__ import annotations

import csv
import io
import json
import statistics
from pathlib import Path

from tapelab.grading.records import atomic_write_text
from tapelab.grading.statuses import STATUSES

__all__ = ["ENTRY_FIELDS", "build_report", "write_grades_csv", "summary_table"]

ENTRY_FIELDS = ("student", "assignment", "notebook", "status", "score", "max_score", "reason", "flags", "worker")
CSV_FIELDS = ("student", "assignment", "notebook", "score", "max_score")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return round(ordered[index], 2)


def build_report(run_id: str, protections: dict, entries: list[dict], seconds: list[float],
                 skipped: int, wall: float) -> dict:
    counts = {status: 0 for status in STATUSES}
    for entry in entries:
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    counts = {k: v for k, v in counts.items() if v}
    counts.update(total=len(entries), executed=len(seconds), skipped_unchanged=skipped,
                  failed=sum(v for k, v in counts.items() if k not in ("graded", "tampered")))
    return {
        "run_id": run_id,
        "protections": protections,
        "counts": counts,
        "timing": {"wall_seconds": round(wall, 2),
                   "median_seconds": round(statistics.median(seconds), 2) if seconds else None,
                   "p95_seconds": _percentile(seconds, 0.95)},
        "submissions": [{k: e.get(k) for k in ENTRY_FIELDS} | {"source": e.get("source"),
                                                                  "regraded": e.get("regraded", False)}
                        for e in entries],
    }


def write_report(path: Path, report: dict) -> None:
    atomic_write_text(path, json.dumps(report, indent=1))


def _cell(value):
    """`value` as a spreadsheet shows it, never evaluates: a leading formula character gets a `'` (OWASP)."""
    if not isinstance(value, str):
        return value
    value = value.encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates from undecodable names
    return "'" + value if value.startswith(_FORMULA_START) else value


def write_grades_csv(path: Path, entries: list[dict]) -> None:
    """One row per student and notebook that has a score (graded, flagged or missing), safe to open."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    writer.writeheader()  # text quoted (a CR inside it cannot split a row), numbers bare
    rows = sorted((e for e in entries if e.get("score") is not None),
                  key=lambda e: (e["student"] or "", e["assignment"] or "", e["notebook"] or ""))
    for entry in rows:
        writer.writerow({k: _cell(entry[k]) for k in CSV_FIELDS})
    atomic_write_text(path, buffer.getvalue())


def summary_table(report: dict) -> str:
    """Counts per status, timing, and a loud line for every protection that was off."""
    counts, timing = report["counts"], report["timing"]
    lines = [f"tapelab grade: run {report['run_id']}", f"{'status':<18}{'count':>7}"]
    for status in STATUSES:
        if counts.get(status):
            lines.append(f"{status:<18}{counts[status]:>7}")
    lines.append(f"{'total':<18}{counts['total']:>7}   ({counts['skipped_unchanged']} unchanged, not regraded)")
    med, p95 = timing["median_seconds"], timing["p95_seconds"]
    lines.append(f"seconds per notebook: median {med if med is not None else '-'}, p95 "
                 f"{p95 if p95 is not None else '-'}; wall {timing['wall_seconds']} s")
    execution = report.get("execution") or {}
    if execution.get("pool") == "dask":
        lines.append(f"executed on {len(execution['workers'])} Dask workers of {execution['scheduler']}")
    elif execution:
        lines.append(f"executed on this machine, {execution['jobs']} at a time")
    for name, protection in report["protections"].items():
        if not protection["on"]:
            lines.append(f"WARNING: protection `{name}` is {protection['how']}")
    return "\n".join(lines)
