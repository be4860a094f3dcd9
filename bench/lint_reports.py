"""`tapelab lint` against bugs reduced from public reports: recall per kind and false alarms.

    python bench/lint_reports.py            # this checkout's linter
    python bench/lint_reports.py -v         # also every finding on every file

bench/lint_reports/manifest.toml lists each report (its thread, what the thread established, its kind) with a
buggy file under bugs/ and the fixed one under fixed/; correct/ holds files that are right as written; reports marked `heldout` were added after the rules changed
and are counted apart. A bug
is found when lint reports a finding on one of the lines its file marks `# BUG`, or one whose message cites such a
line as the cause ("... (line 9)", as the path rules name the culprit); any finding on a fixed or
correct file is a false alarm. The set was written from the reports before the rules were changed for it.
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import tomllib
from pathlib import Path

from tapelab.lint.files import Config, cell_source, code_cells, lint_file

HERE = Path(__file__).resolve().parent / "lint_reports"
MARK = "# BUG"
CITED = re.compile(r"(cell \d+, )?\bline (\d+)\b")  # "line 9" in the same cell; "cell 2, line 9" elsewhere


def bug_lines(path: Path) -> set[tuple[int | None, int]]:
    """(cell, line) of every line marked `# BUG` (cell None in a `.py` file)."""
    if path.suffix == ".ipynb":
        cells = code_cells(json.loads(path.read_text()))
        return {(n, i) for n, cell in enumerate(cells, start=1)
                for i, line in enumerate(cell_source(cell).split("\n"), start=1) if MARK in line}
    return {(None, i) for i, line in enumerate(path.read_text().split("\n"), start=1) if MARK in line}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    manifest = tomllib.loads((HERE / "manifest.toml").read_text())
    found: dict[str, list[str]] = collections.defaultdict(list)
    missed: dict[str, list[str]] = collections.defaultdict(list)
    alarms: list[str] = []
    for report in manifest["report"]:
        path = HERE / "bugs" / report["file"]
        findings = lint_file(path, Config())[0]
        wanted = bug_lines(path)
        if not wanted:
            raise SystemExit(f"{path}: no line marked {MARK!r}")
        hit = any((f.cell, f.line) in wanted or any((f.cell, int(n)) in wanted for other, n in CITED.findall(f.message) if not other)
                  for f in findings)
        kind = report["kind"] + (" (held out)" if report.get("heldout") else "")
        (found if hit else missed)[kind].append(f"{report['file']} ({report['class']})")
        if args.verbose:
            for f in findings:
                print(f"  {f.where()}: {f.number} {f.code}: {f.message}")
    correct = [HERE / "fixed" / r["file"] for r in manifest["report"]] + [
        HERE / "correct" / c["file"] for c in manifest["correct"]]
    for path in correct:
        for f in lint_file(path, Config())[0]:
            alarms.append(f"{path.relative_to(HERE)}:{f.where().split(str(path))[-1].lstrip(':')}: {f.number} "
                          f"{f.code}: {f.message}")
    total_found = sum(map(len, found.values()))
    total = total_found + sum(map(len, missed.values()))
    for kind in sorted(set(found) | set(missed)):
        n, m = len(found[kind]), len(found[kind]) + len(missed[kind])
        print(f"{kind}: found {n} of {m} ({n / m:.0%})")
    print(f"all bugs: found {total_found} of {total} ({total_found / total:.0%})")
    print(f"false alarms: {len(alarms)} on {len(correct)} fixed or correct files")
    for kind, names in sorted(missed.items()):
        for name in names:
            print(f"  missed [{kind}]: {name}")
    for alarm in alarms:
        print(f"  false alarm: {alarm}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
