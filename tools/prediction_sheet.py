"""Write the blind judging sheet of the "predict, then run" feedback: every wrong prediction the question tests
judge (tests/exercises/test_questions_*.py), with only what the student sees.

    python tools/prediction_sheet.py [--out FILE] [--key FILE] [--since JUDGED.json ...]

Runs those tests in this process with a plugin that records each `Question.judge` call (the beliefs' guesses and
the guesses no belief explains, as the tests choose them), then writes, once per question and prediction, the
question's text (the markdown right before its `predict` cell in solutions/), the form asked for, the prediction,
the message and the value TensorFlow gives. No cause codes: the judge sees what the student sees. Default FILE:
tests/exercises/judging/predictions.json; `--key` also writes the question number and cause behind each entry.
`--since` leaves out every entry a sheet already judged shows the same (question, prediction, message, value).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

import nbformat

os.environ.update(TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")
ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "exercises" / "judging" / "predictions.json"
PREDICT = re.compile(r"\b(q(\d+)_(\d+[a-z]?))\.predict\(")


class Recorder:
    """A pytest plugin: wraps Question.judge while the tests run and keeps every wrong prediction it judges."""

    def __init__(self) -> None:
        self.judged: list[dict] = []

    def pytest_sessionstart(self, session) -> None:
        from tapelab.checker import predictions

        judge, judged = predictions.Question.judge, self.judged

        def recording(question, guess, truth):
            message = judge(question, guess, truth)
            judged.append({"number": question.number, "prediction": predictions._render(guess),
                           "kind": message.kind, "cause": message.cause, "message": message.text,
                           "tensorflow_gives": message.expected})
            return message

        predictions.Question.judge = recording


def questions_asked() -> dict[str, tuple[str, str]]:
    """Question number -> (the markdown cells right before its predict cell, at most two, and the predict cell's
    comment)."""
    found = {}
    for path in sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        for i, cell in enumerate(cells):
            match = PREDICT.search(cell.source) if cell.cell_type == "code" else None
            if match:
                before, j = [], i - 1
                while j >= 0 and cells[j].cell_type == "markdown" and len(before) < 2:
                    before.insert(0, cells[j].source)
                    j -= 1
                form = cell.source.split("#", 1)[1].strip() if "#" in cell.source else ""
                found[f"{match[2]}.{match[3]}"] = ("\n\n".join(before), form)
    return found


def _seen(row: dict) -> tuple:
    """What a judge saw of an entry: the same tuple means the same verdict holds."""
    return tuple(json.dumps(row[key], sort_keys=True) for key in
                 ("question", "student_prediction", "message_shown", "tensorflow_gives"))


def main(argv: list[str] | None = None) -> int:
    import pytest

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--key", type=Path, help="also write id -> (question, cause) here (not for the judge)")
    parser.add_argument("--since", type=Path, nargs="+", default=[], metavar="JUDGED.json",
                        help="sheets already judged: leave out the entries they show the same")
    args = parser.parse_args(argv)
    judged = {_seen(row) for path in args.since for row in json.loads(path.read_text())}
    recorder = Recorder()
    tests = sorted(str(p) for p in (ROOT / "tests" / "exercises").glob("test_questions_*.py"))
    if pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:xdist", *tests], plugins=[recorder]) != 0:
        print("the question tests failed: no sheet written", file=sys.stderr)
        return 1
    asked, seen, sheet, key = questions_asked(), set(), [], {}
    for entry in recorder.judged:
        if entry["kind"] != "incorrect" or (entry["number"], entry["prediction"]) in seen:
            continue
        seen.add((entry["number"], entry["prediction"]))
        question, form = asked[entry["number"]]
        row = {"question": question, "answer_form": form, "student_prediction": entry["prediction"],
               "message_shown": entry["message"], "tensorflow_gives": entry["tensorflow_gives"]}
        if _seen(row) in judged:
            continue
        item = f"P{len(sheet) + 1:02d}"
        sheet.append({"id": item, **row})
        key[item] = {"question": entry["number"], "cause": entry["cause"]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(sheet, indent=1, ensure_ascii=False) + "\n")
    if args.key:
        args.key.write_text(json.dumps(key, indent=1) + "\n")
    print(f"wrote {args.out}: {len(sheet)} wrong predictions, {sum(v['cause'] is not None for v in key.values())} "
          "with a misconception's message")
    return 0


if __name__ == "__main__":
    sys.exit(main())
