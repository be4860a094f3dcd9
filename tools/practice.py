"""How much practice the instructor notebooks give (issue 51, "Measure"): tasks per section, retyping, length.

    python tools/practice.py [NOTEBOOK ...] [--json]

Reads solutions/*.ipynb (or the notebooks named) with nbformat only, and prints per notebook:

1. Teaching sections and their tasks. A section is a level-2 markdown heading (`## ...`, outside code fences)
   and everything up to the next level-2 heading. Headings containing the words Setup, Summary, Optional or
   "Going further" (any case) are not teaching sections and need no task; every other `##` heading is one.
   A section has a task when one of its code cells is an exercise answer (nbgrader `solution: true`) or a
   prediction / quick check: a call `predict(...)` or `quick_check(...)` by bare name, or a call
   `<name>.check(...)`, `<name>.predict(...)`, `<name>.quick_check(...)` on a name like `ex1_2`, `q1_2`,
   `p1_2`, in a cell that is not an nbgrader test cell (an exercise's own test cell is not a second task;
   `model.predict(x)` is not a prediction).
2. Overlap of every exercise with earlier code. The model answer is the code between `### BEGIN SOLUTION`
   and `### END SOLUTION` of its answer cell (the whole cell without markers if there are none): the
   `def` line the stub gives is not counted. Tokens come from Python's tokenize: NAME and NUMBER tokens (names,
   keywords, numbers); operators and punctuation, which any two cells of Python share, are left out (counted,
   they raise every overlap: the course's median went from 75% to 87%), and so are comments, strings, newlines
   and indentation; IPython magic and `!` lines are skipped. For
   each earlier code cell that is not an answer cell (the student sees only the stub of an earlier
   answer; test, demo and widget cells count), the overlap is |answer & cell| / |answer| with tokens as
   multisets. The exercise's overlap is the maximum over those cells. Flags: an exercise at >= 70%; the
   median over all exercises of all notebooks read at >= 55%.
3. The core path: markdown words (whitespace-separated, code fences included) and code cells from the
   notebook's start up to the first Summary, Optional or "Going further" level-2 heading. Guide: at most
   2,600 words and 45 code cells.

Exit status: 0 when every threshold holds (no teaching section without a task, every exercise < 70%, median
< 55%, each core path within the guide), 1 otherwise, 2 on usage error.
"""
from __future__ import annotations

import argparse
import ast
import io
import json
import re
import statistics
import sys
import tokenize
from collections import Counter
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
EXERCISE_MAX, MEDIAN_MAX, CORE_WORDS, CORE_CELLS = 0.70, 0.55, 2600, 45
NOT_TEACHING = re.compile(r"\b(setup|summary|optional|going further)\b", re.IGNORECASE)
CORE_ENDS = re.compile(r"\b(summary|optional|going further)\b", re.IGNORECASE)
TASK_NAMES = {"predict", "quick_check"}
TASK_METHODS = {"check", "predict", "quick_check"}
TASK_OWNER = re.compile(r"^[eqp]x?\d+_\d+\w*$")
SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.DOTALL)
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)


def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def _is_answer(cell) -> bool:
    return cell.cell_type == "code" and bool(_nbgrader(cell).get("solution"))


def _python(source: str) -> str:
    """The cell as Python: IPython magics and shell lines blanked."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def tokens(source: str) -> list[str]:
    """NAME and NUMBER tokens of `source`, in order; a tokenize error keeps the tokens before it."""
    found = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(_python(source) + "\n").readline):
            if tok.type in (tokenize.NAME, tokenize.NUMBER):
                found.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return found


def model_answer(source: str) -> str:
    match = SOLUTION.search(source)
    return match.group(1) if match else source


def overlap(answer: list[str], cell: list[str]) -> float:
    """Share of the answer's tokens found in the cell, counted as a multiset intersection."""
    return sum((Counter(answer) & Counter(cell)).values()) / len(answer) if answer else 0.0


def has_task(cell) -> bool:
    if cell.cell_type != "code":
        return False
    if _is_answer(cell):
        return True
    if _nbgrader(cell).get("grade"):
        return False
    try:
        tree = ast.parse(_python(cell.source))
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in TASK_NAMES:
            return True
        if (isinstance(func, ast.Attribute) and func.attr in TASK_METHODS
                and isinstance(func.value, ast.Name) and TASK_OWNER.match(func.value.id)):
            return True
    return False


def headings(cell) -> list[str]:
    """Level-2 headings of a markdown cell, outside code fences."""
    if cell.cell_type != "markdown":
        return []
    return [line[3:].strip() for line in FENCE.sub("", cell.source).splitlines() if line.startswith("## ")]


def measure(path: Path) -> dict:
    nb = nbformat.read(str(path), as_version=4)
    sections, current, core_done = [], None, False
    words = code_cells = 0
    earlier: list[tuple[int, list[str]]] = []
    exercises = []
    for index, cell in enumerate(nb.cells):
        for title in headings(cell):
            current = {"title": title, "teaching": not NOT_TEACHING.search(title), "task": False}
            sections.append(current)
            core_done = core_done or bool(CORE_ENDS.search(title))
        if not core_done:
            if cell.cell_type == "markdown":
                words += len(cell.source.split())
            elif cell.cell_type == "code":
                code_cells += 1
        if current is not None and has_task(cell):
            current["task"] = True
        if cell.cell_type != "code":
            continue
        if _is_answer(cell):
            answer = tokens(model_answer(cell.source))
            best = max(((overlap(answer, toks), i) for i, toks in earlier), default=(0.0, None))
            exercises.append({"id": _nbgrader(cell).get("grade_id", f"cell-{index}"), "tokens": len(answer),
                              "overlap": round(best[0], 4), "cell": best[1], "section": current and current["title"]})
        else:
            earlier.append((index, tokens(cell.source)))
    return {"notebook": path.name, "sections": sections, "exercises": exercises,
            "core_words": words, "core_code_cells": code_cells}


def verdict(results: list[dict]) -> dict:
    shares = [e["overlap"] for r in results for e in r["exercises"]]
    median = statistics.median(shares) if shares else 0.0
    untasked = sum(1 for r in results for s in r["sections"] if s["teaching"] and not s["task"])
    high = sum(1 for s in shares if s >= EXERCISE_MAX)
    long_ = [r["notebook"] for r in results if r["core_words"] > CORE_WORDS or r["core_code_cells"] > CORE_CELLS]
    return {"sections_without_task": untasked, "exercises": len(shares), "exercises_at_or_over_70": high,
            "exercises_at_or_over_60": sum(1 for s in shares if s >= 0.60), "median_overlap": round(median, 4),
            "core_paths_over_guide": long_, "ok": not (untasked or high or median >= MEDIAN_MAX or long_)}


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def report(results: list[dict], summary: dict) -> str:
    lines = []
    for r in results:
        teaching = [s for s in r["sections"] if s["teaching"]]
        missing = [s["title"] for s in teaching if not s["task"]]
        flag = " !" if r["core_words"] > CORE_WORDS or r["core_code_cells"] > CORE_CELLS else ""
        lines.append(f"{r['notebook']}: {len(teaching)} teaching sections, {len(teaching) - len(missing)} with a "
                     f"task; core path {r['core_words']} words, {r['core_code_cells']} code cells{flag}")
        lines += [f"  no task: {title}" for title in missing]
        for e in r["exercises"]:
            mark = "  >= 70%" if e["overlap"] >= EXERCISE_MAX else ""
            lines.append(f"  {e['id']:<14} {e['tokens']:>4} tokens  max overlap {_pct(e['overlap']):>4}"
                         f"  with cell {e['cell']}{mark}")
    s = summary
    lines.append(f"total: {s['sections_without_task']} teaching sections without a task; {s['exercises']} exercises, "
                 f"{s['exercises_at_or_over_70']} at >= 70% ({s['exercises_at_or_over_60']} at >= 60%), median "
                 f"{_pct(s['median_overlap'])} (goal < 55%); core paths over "
                 f"{CORE_WORDS} words or {CORE_CELLS} cells: {', '.join(s['core_paths_over_guide']) or 'none'}")
    lines.append("OK" if s["ok"] else "NOT MET")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: solutions/*.ipynb")
    parser.add_argument("--json", action="store_true", help="print the measurements as JSON")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "solutions").glob("*.ipynb"))
    missing = [str(p) for p in paths if not p.is_file()]
    if missing or not paths:
        print(f"practice.py: no such notebook: {', '.join(missing) or 'solutions/*.ipynb'}; "
              "name .ipynb files that exist", file=sys.stderr)
        return 2
    results = [measure(p) for p in paths]
    summary = verdict(results)
    if args.json:
        print(json.dumps({"notebooks": results, "summary": summary}, indent=1))
    else:
        print(report(results, summary))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
