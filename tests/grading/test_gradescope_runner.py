"""grader/gradescope/run_autograder, run as Gradescope runs it, against a stand-in `tapelab` that
records its calls (the real commands are tested in test_insight.py): does it grade the uploaded
notebook under the assignment's name and always leave a results.json Gradescope accepts?"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import jsonschema

from insight_class import GRADESCOPE_SCHEMA
from tapelab.paths import REPO

RUNNER = REPO / "grader" / "gradescope" / "run_autograder"
STUB = """#!/usr/bin/env bash
echo "$@" >> "$CALLS"
if [ "$1" = grade ]; then (cd "$2" && find . -type f | sort) >> "$CALLS"; fi
if [ "$1" = export ]; then
    [ -n "${EXPORT_FAILS:-}" ] && exit 2
    while [ "$1" != --out ]; do shift; done
    echo '{"score": 3.0, "tests": [{"name": "Exercise 1.1", "score": 3.0, "max_score": 3.0}]}' > "$2"
fi
"""


def _run(tmp_path: Path, files: dict[str, str], **env: str) -> tuple[dict, list[str]]:
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    (root / "submission").mkdir()
    (root / "source" / "notebook.txt").write_text("01_basic_tape\n")
    for name, text in files.items():
        (root / "submission" / name).write_text(text)
    stub = tmp_path / "tapelab"
    stub.write_text(STUB)
    stub.chmod(0o755)
    calls = tmp_path / "calls.txt"
    subprocess.run(["bash", str(RUNNER)], check=True, timeout=60, capture_output=True,
                   env={**os.environ, "AUTOGRADER_ROOT": str(root), "TAPELAB": str(stub), "CALLS": str(calls), **env})
    return json.loads((root / "results" / "results.json").read_text()), calls.read_text().splitlines()


def test_runner_grades_the_upload_as_the_assignment_notebook_then_exports_it(tmp_path):
    """Is any uploaded .ipynb graded as <notebook>.ipynb of one student, and its export the results?"""
    results, calls = _run(tmp_path, {"my work (2).ipynb": "{}", "notes.txt": "x"})
    course = tmp_path / "autograder" / "source" / "course"
    assert calls[0].startswith("grade ") and calls[0].endswith(f"--course {course} --jobs 1 --force")
    assert calls[1] == "./gradescope/01_basic_tape.ipynb" and len(calls) == 3
    assert calls[2] == (f"export gradescope --course {course} --student gradescope --notebook 01_basic_tape "
                        f"--out {tmp_path / 'autograder' / 'results' / 'results.json'}")
    assert results["score"] == 3.0
    jsonschema.validate(results, GRADESCOPE_SCHEMA)


def test_runner_writes_a_zero_that_says_why_when_nothing_can_be_exported(tmp_path):
    """With no notebook uploaded and no export, is results.json still valid, scoring 0 and naming the fix?"""
    results, _ = _run(tmp_path, {"answer.py": "print(1)"}, EXPORT_FAILS="1")
    jsonschema.validate(results, GRADESCOPE_SCHEMA)
    assert results["score"] == 0 and "upload 01_basic_tape.ipynb" in results["output"]
