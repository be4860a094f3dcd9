"""Evidence of copying, as facts: what in a graded class's answers matches another student's.

Two findings, each saying what matched and where, never a verdict:
- **another student's variant**: in a course with per-student variants (tapelab.release_variants), a student's
  answer to an exercise that varies is, names and layout aside and numbers kept, the very answer with which
  another student passed their own, different variant; on the student's own variant it fails.
- **the same wrong answer**: students whose wrong answers to an exercise are the same code (names, comments
  and layout aside, numbers kept) and were rejected with the same cause. An answer left as the released stub
  is never one, and neither is a right answer (many students write the same right answer).
A test cell passed when the gradebook gives it its maximum score; answers and causes come from the autograded
notebooks (tapelab.grading.grades.attempts), which student code could forge: leads to read, never a grade.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from tapelab.grading.grades.attempts import exercise_label
from tapelab.grading.grades.cells import cell_grades
from tapelab.grading.insight.tables import read_attempts_of

__all__ = ["find", "render", "shape"]


class _Canonical(ast.NodeTransformer):
    """Every name the student chose (variables, parameters, functions, classes) by its order of appearance."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def _name(self, name: str) -> str:
        return self.names.setdefault(name, f"n{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self._name(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg, node.annotation = self._name(node.arg), None
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self._name(node.name)
        return self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.name = self._name(node.name)
        return self.generic_visit(node)

    def visit_Expr(self, node: ast.Expr) -> ast.AST | None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # a docstring or a bare string: words, not code
        return self.generic_visit(node)


def shape(source: str) -> str | None:
    """The code of an answer with the names its author chose renamed by order of appearance, comments, docstrings
    and layout gone, numbers and the library's names kept; None when it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    return ast.dump(_Canonical().visit(tree), annotate_fields=False)


def find(root: Path, db_url: str, rows: list, variants: dict | None = None) -> list[dict]:
    """Every finding of the class in `root`. `variants` maps (student, exercise number) to the values of the
    student's variant of each exercise that varies, in a course with per-student variants (None: no variants)."""
    _, grades = cell_grades(db_url)
    attempts = read_attempts_of(root, rows)
    by_cell: dict[tuple, list] = defaultdict(list)
    for (student, assignment, notebook, gid), attempt in attempts.items():
        score, top = grades.get((student, assignment, notebook, gid), (0.0, 0.0))
        by_cell[(assignment, notebook, gid)].append((student, attempt, top > 0 and score >= top))
    found = []
    for (assignment, notebook, gid), entries in sorted(by_cell.items()):
        where = {"assignment": assignment, "notebook": notebook, "exercise": exercise_label(gid)}
        shapes = {student: shape(attempt.answer) for student, attempt, _ in entries if attempt.attempted}
        found += _foreign(where, entries, shapes, variants or {})
        found += _same_wrong(where, entries, shapes, variants or {})
    return found


def _foreign(where: dict, entries: list, shapes: dict, variants: dict) -> list[dict]:
    number = where["exercise"]
    passed = defaultdict(list)  # shape -> the students who passed their own variant with it
    for student, _, ok in entries:
        if ok and shapes.get(student) and (student, number) in variants:
            passed[shapes[student]].append(student)
    out = []
    for student, attempt, ok in entries:
        mine = variants.get((student, number))
        if ok or mine is None or not shapes.get(student):
            continue
        owners = [o for o in passed.get(shapes[student], []) if variants[(o, number)] != mine]
        if owners:
            out.append({**where, "kind": "another student's variant", "students": [student, *sorted(owners)],
                        "fact": f"{student}'s answer is, names and layout aside, the answer with which "
                                f"{', '.join(sorted(owners))} passed their own variant; it fails {student}'s own "
                                f"variant{f' ({attempt.cause})' if attempt.cause else ''}."})
    return out


def _same_wrong(where: dict, entries: list, shapes: dict, variants: dict) -> list[dict]:
    groups = defaultdict(list)
    for student, attempt, ok in entries:
        if not ok and shapes.get(student) and attempt.outcome == "incorrect":
            groups[(shapes[student], attempt.cause)].append(student)
    out = []
    for (_, cause), who in sorted(groups.items(), key=lambda kv: sorted(kv[1])):
        if len(who) < 2:
            continue
        theirs = {tuple(sorted(variants.get((student, where["exercise"]), {}).items())) for student in who}
        numbers = ("their variants differ, the numbers in the code do not" if len(theirs) > 1 else
                   "the exercise gives them the same numbers, so short answers like these also arise apart")
        out.append({**where, "kind": "the same wrong answer", "students": sorted(who),
                    "fact": f"{', '.join(sorted(who))} hand in the same code (names and layout aside, numbers kept), "
                            f"rejected with {f'the cause {cause}' if cause else 'no named cause'}; {numbers}."})
    return out


def render(findings: list[dict]) -> str:
    """The findings as text an instructor reads in a minute: one line each, by notebook and exercise."""
    if not findings:
        return "No answer matches another student's: no finding.\n"
    lines = [f"{len(findings)} finding(s); each is a fact to read, not a verdict."]
    for f in findings:
        lines.append(f"- {f['notebook']}, Exercise {f['exercise']}, {f['kind']}: {f['fact']}")
    return "\n".join(lines) + "\n"
