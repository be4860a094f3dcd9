"""Write the blind judging sheet of the third catalogue (tests/third_mistakes/): for every wrong answer, only
what a judge may see, the task, the student's code, what is really wrong, and the message the student gets.

    python tools/judging_sheet.py LABEL [NOTEBOOK ...] [--out DIR] [--since JUDGED.json ...]

Each answer is graded in this one process through its exercise's whole test cell, as nbgrader runs it
(tests/mutation/inprocess.py). The message is the failing part's: the visible check's, else the hidden
tests' (which the student reads in the graded feedback); an answer the whole cell passes gets the
confirmation the student would see. Writes DIR/LABEL.json and DIR/LABEL.md (DIR defaults to
tests/third_mistakes/judging) and prints how each notebook's answers ended. No cause codes, no engine
internals and no sources are written: the judge sees what a tutor reading over the student's shoulder sees.
With --since, the sheet keeps only the answers that are new or whose task, code, tutor sentence or message
differ from the same answer in the sheets given (sheets already judged): the rest keep their verdicts.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.update(TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
OUT = ROOT / "tests" / "third_mistakes" / "judging"
_WHERE = {"visible": "the check in the notebook", "hidden": "the graded feedback (hidden tests)"}


def task_texts(notebook: str) -> dict[str, str]:
    """answer cell id -> the exercise's task: the markdown from its `### Exercise` heading to the answer cell."""
    import nbformat

    nb = nbformat.read(ROOT / "solutions" / f"{notebook}.ipynb", as_version=4)
    texts, pending = {}, []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            if "### Exercise" in cell.source:
                pending = [cell.source[cell.source.index("### Exercise"):]]
            elif pending:
                pending.append(cell.source)
            continue
        answer_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution") and pending:
            texts[answer_id] = "\n\n".join(pending).strip()
            pending = []
    return texts


def sheet_rows(notebook: str) -> list[dict]:
    """One row per third-catalogue mistake of `notebook`: what the judge sees, and how the test cell ended."""
    from answers import reported_mistakes
    from mutation.inprocess import exercises, grade

    by_id = {e.answer_id: e for e in exercises(notebook)}
    tasks = task_texts(notebook)
    rows = []
    for answer_id, found in sorted(reported_mistakes(notebook).items()):
        for number, mistake in enumerate(found, 1):
            verdict = grade(by_id[answer_id], mistake.code, f"third {mistake.name}")
            if verdict.passed:
                message, where = "(no message: the whole test cell passes this answer as correct)", "nowhere"
            else:
                message, where = verdict.message, _WHERE.get(verdict.part, verdict.part)
            rows.append({"id": f"{notebook[:2]}-{answer_id.removesuffix('_answer')}-{number}",
                         "notebook": notebook, "exercise": answer_id.removesuffix("_answer"),
                         "task": tasks.get(answer_id, ""), "code": mistake.code.strip("\n"),
                         "what_is_wrong": mistake.tutor, "message": message, "message_from": where,
                         "outcome": verdict.outcome})
    return rows


_JUDGED = ("task", "code", "what_is_wrong", "message")


def changed(rows: list[dict], judged: list[Path]) -> list[dict]:
    """The rows that no sheet in `judged` holds with the same id and the same judged content (later sheets win)."""
    before: dict[str, dict] = {}
    for path in judged:
        before.update({row["id"]: row for row in json.loads(path.read_text())})
    return [row for row in rows if row["id"] not in before
            or any(row[key] != before[row["id"]][key] for key in _JUDGED)]


def markdown(rows: list[dict], label: str) -> str:
    """The sheet as Markdown, one section per answer, tasks written once per exercise."""
    out = [f"# Judging sheet ({label}): third catalogue", "",
           "For each answer give one verdict: named / symptom / bare / misleading / praised.", ""]
    seen = set()
    for row in rows:
        if row["exercise"] not in seen:
            seen.add(row["exercise"])
            out += [f"## {row['notebook']} {row['exercise']}", "", "<details><summary>task</summary>", "",
                    row["task"], "", "</details>", ""]
        out += [f"### {row['id']}", "", "```python", row["code"], "```", "",
                f"**What is really wrong:** {row['what_is_wrong']}", "",
                f"**Message the student gets** (from {row['message_from']}):", "", "```text",
                row["message"], "```", "", "verdict: ____", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("label", help="the sheet's name, e.g. before or after")
    parser.add_argument("notebooks", nargs="*", help="notebook names (default: all six)")
    parser.add_argument("--out", type=Path, default=OUT, help="folder for LABEL.json and LABEL.md")
    parser.add_argument("--since", type=Path, nargs="+", default=[], metavar="JUDGED.json",
                        help="sheets already judged: keep only answers that are new or changed against them")
    args = parser.parse_args(argv)
    from answers import chosen_notebooks

    rows = [row for nb in chosen_notebooks(parser, args.notebooks) for row in sheet_rows(nb)]
    if args.since:
        rows = changed(rows, args.since)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.label}.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")
    (args.out / f"{args.label}.md").write_text(markdown(rows, args.label))
    kinds = ("incorrect", "passed", "raw_exception", "stderr", "not_attempted", "timeout")
    print(f"{'notebook':22}" + "".join(f"{k:>15}" for k in kinds) + f"{'hidden only':>13}")
    for nb in dict.fromkeys(r["notebook"] for r in rows):
        mine = [r for r in rows if r["notebook"] == nb]
        hidden = sum(r["message_from"].startswith("the graded") for r in mine)
        print(f"{nb:22}" + "".join(f"{sum(r['outcome'] == k for r in mine):>15}" for k in kinds) + f"{hidden:>13}")
    print(f"wrote {args.out / args.label}.json and .md ({len(rows)} answers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
