"""The release empties every prediction: `q1_5.predict([2.0, None])` in solutions/ becomes `q1_5.predict(...)`.

The instructor notebook holds the model prediction, so that its run shows the reveal judging it (nbval checks
that it is Correct); the student's copy must hold none. A prediction call is a call of `.predict` on a name
like `q1_5` (tapelab.checker.predictions.Question) in a cell that is not an nbgrader cell; `model.predict(x)`
is no prediction. Only the call's arguments are replaced, so the comment that says what to predict stays.
"""
from __future__ import annotations

import ast
import re

__all__ = ["QUESTION_NAME", "empty_predictions", "prediction_calls"]

QUESTION_NAME = re.compile(r"^q\d+_\d+[a-z]?$")


def prediction_calls(source: str) -> list[ast.Call]:
    """The `qN_M.predict(...)` calls of a cell's source, in order; none when it is not Python."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return sorted((node for node in ast.walk(tree) if isinstance(node, ast.Call)
                   and isinstance(node.func, ast.Attribute) and node.func.attr == "predict"
                   and isinstance(node.func.value, ast.Name) and QUESTION_NAME.match(node.func.value.id)),
                  key=lambda node: (node.lineno, node.col_offset))


def _empty_cell(source: str) -> str:
    lines = source.splitlines(keepends=True)
    for call in reversed(prediction_calls(source)):  # from the end, so earlier positions stay valid
        if call.lineno != call.end_lineno:
            raise ValueError(f"a prediction must fit on one line: {ast.get_source_segment(source, call)!r}")
        line = lines[call.lineno - 1]
        start = len(line.encode()[:call.func.end_col_offset].decode())  # ast counts bytes, str slices count chars
        end = len(line.encode()[:call.end_col_offset].decode())
        lines[call.lineno - 1] = f"{line[:start]}(...){line[end:]}"
    return "".join(lines)


def empty_predictions(nb) -> int:
    """Empty the predictions of `nb` (an nbformat notebook) in place; return how many calls were emptied."""
    emptied = 0
    for cell in nb.cells:
        if cell.cell_type != "code" or cell.metadata.get("nbgrader"):
            continue
        calls = prediction_calls(cell.source)
        if calls:
            cell.source = _empty_cell(cell.source)
            emptied += len(calls)
    return emptied
