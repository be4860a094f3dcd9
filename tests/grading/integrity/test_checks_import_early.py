"""Under `tapelab grade` the guard re-imports tapelab before each check, so a check runs tapelab's code as it is
on disk, whatever the student's code did to the modules before. A module a check imports only while it runs
(an import inside a function) escapes that: student code called earlier in the same check could have put a
module of its own under that name in `sys.modules`. So the code a check runs imports tapelab at module level."""
import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src" / "tapelab"
# What a check runs in the student's kernel: the feedback engine, the exercises' checkers, and what they import.
CHECK_CODE = ["checker", "exercises", "lint", "causes.py", "explained.py", "quiet.py", "tf_log.py", "errors.py"]


def _late_tapelab_imports(path: Path) -> list[str]:
    late = []
    for function in ast.walk(ast.parse(path.read_text())):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        for node in ast.walk(function):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                names = ["(relative)"]
            late += [f"{path.relative_to(SRC)}:{node.lineno} imports {n}" for n in names
                     if n == "(relative)" or n == "tapelab" or n.startswith("tapelab.")]
    return late


def test_the_code_a_check_runs_imports_tapelab_at_module_level():
    files = [f for entry in CHECK_CODE for f in ((SRC / entry).rglob("*.py") if (SRC / entry).is_dir()
                                                   else [SRC / entry])]
    assert len(files) > 40
    late = sorted({line for f in files for line in _late_tapelab_imports(f)})
    assert not late, late
