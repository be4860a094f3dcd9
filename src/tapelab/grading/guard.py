"""Defences against students who game the checks, rather than answer them.

`restore_code` is run by the executor before every graded test cell, as a separate execution
that is not stored in the notebook. It undoes what a student can do from a cell: re-imports the
tapelab checker modules fresh from disk and rebinds the notebook's exercise names (`ex1_1`),
restores IPython's traceback display and tapelab's exception handler, and removes input/AST
transformers, event callbacks, import hooks and trace functions the student registered.

`scan` is a static check of the student's cells that flags (never zeroes) code that touches the
grading machinery, for the instructor to review.
"""
from __future__ import annotations

import ast
import re

__all__ = ["restore_code", "scan"]

_RESTORE = r'''
def _tapelab_restore(imports, path, allowed):
    import importlib, sys
    from IPython.core.interactiveshell import InteractiveShell
    sys.settrace(None); sys.setprofile(None)
    sys.path[:] = path
    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__module__ != "__main__"]
    sys.path_hooks[:] = [h for h in sys.path_hooks if getattr(h, "__module__", "") != "__main__"]
    sys.path_importer_cache.clear()
    shell = InteractiveShell._instance
    for name in ("showtraceback", "showsyntaxerror", "_showtraceback", "run_cell", "run_cell_async",
                 "run_ast_nodes", "run_code", "transform_cell", "transform_ast", "ex", "ev",
                 "set_custom_exc", "user_expressions"):
        shell.__dict__.pop(name, None)
    kernel = getattr(shell, "kernel", None)
    if kernel is not None:
        for name in ("do_execute", "execute_request", "send_response"):
            kernel.__dict__.pop(name, None)
    shell.custom_exceptions = ()
    shell.CustomTB = None
    ok = lambda f: (getattr(f, "__module__", None) or "").startswith(allowed)
    shell.input_transformers_cleanup[:] = [t for t in shell.input_transformers_cleanup if ok(t)]
    shell.input_transformers_post[:] = [t for t in shell.input_transformers_post if ok(t)]
    shell.ast_transformers[:] = [t for t in shell.ast_transformers if ok(t)]
    for event, callbacks in shell.events.callbacks.items():
        callbacks[:] = [c for c in callbacks if ok(c)]
    for name in [m for m in sys.modules if m == "tapelab" or m.startswith("tapelab.")]:
        del sys.modules[name]
    importlib.invalidate_caches()
    for statement in imports:
        exec(statement, shell.user_ns)

_tapelab_restore({imports!r}, {path!r}, {allowed!r})
del _tapelab_restore
'''

_ALLOWED_MODULES = ("IPython", "ipykernel", "matplotlib", "matplotlib_inline", "ipywidgets", "comm",
                    "traitlets", "jupyter_client", "tapelab")


def restore_code(imports: list[str], sys_path: list[str]) -> str:
    """The restore step for a notebook whose trusted tapelab imports are `imports`."""
    return _RESTORE.format(imports=list(imports), path=list(sys_path), allowed=_ALLOWED_MODULES)


_EXERCISE = re.compile(r"^ex\d+_\d+$")
_MACHINERY_ATTRS = {
    "showtraceback", "showsyntaxerror", "_showtraceback", "run_cell", "run_cell_async", "run_ast_nodes",
    "run_code", "do_execute", "execute_request", "custom_exceptions", "CustomTB", "input_transformers_post",
    "input_transformers_cleanup", "ast_transformers", "excepthook", "displayhook", "check", "check_case",
    "mismatch", "__eq__", "__ne__", "__class__", "__code__", "__globals__", "__dict__", "__module__",
    "__builtins__", "meta_path", "path_hooks",
}
_CALLS = {
    "setattr": "setattr()", "delattr": "delattr()", "exec": "exec()", "eval": "eval()", "compile": "compile()",
    "__import__": "__import__()", "set_custom_exc": "set_custom_exc()", "_exit": "os._exit()",
    "settrace": "sys.settrace()", "setprofile": "sys.setprofile()", "_getframe": "sys._getframe()",
    "currentframe": "inspect.currentframe()", "get_referrers": "gc.get_referrers()",
    "get_objects": "gc.get_objects()", "reload": "importlib.reload()", "kill": "os.kill()",
    "killpg": "os.killpg()", "fork": "os.fork()", "register": "events.register()",
}
_MODULES = {"ctypes", "gc", "importlib", "builtins", "subprocess", "socket", "signal", "multiprocessing"}
_NAMES = {"__builtins__": "__builtins__", "get_ipython": "get_ipython()"}


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.value if not isinstance(node, ast.Call) else node.func
    return node.id if isinstance(node, ast.Name) else None


def _dotted(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # pragma: no cover - unparse handles every parsed node
        return "?"


class _Scanner(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: list[tuple[int, str]] = []
        self.tapelab_aliases = {"tapelab"}

    def _hit(self, node: ast.AST, what: str) -> None:
        self.found.append((getattr(node, "lineno", 0), what))

    def _target(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._target(elt, node)
        elif isinstance(target, (ast.Attribute, ast.Subscript)):
            root = _root_name(target)
            attr = target.attr if isinstance(target, ast.Attribute) else None
            if root and (_EXERCISE.match(root) or root in self.tapelab_aliases):
                self._hit(node, f"assigns `{_dotted(target)}`")
            elif attr in _MACHINERY_ATTRS:
                self._hit(node, f"assigns `{_dotted(target)}`")
            elif root in ("sys", "builtins", "__builtins__"):
                self._hit(node, f"assigns `{_dotted(target)}`")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._target(target, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._target(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._target(target, node)
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            top = alias.name.split(".")[0]
            if top in _MODULES:
                self._hit(node, f"imports `{alias.name}`")
            if top == "tapelab":
                self.tapelab_aliases.add(alias.asname or top)
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        top = (node.module or "").split(".")[0]
        if top in _MODULES:
            self._hit(node, f"imports from `{node.module}`")
        if top == "tapelab":
            for alias in node.names:
                if not _EXERCISE.match(alias.asname or alias.name):
                    self.tapelab_aliases.add(alias.asname or alias.name)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name in _CALLS and not (name == "register" and "events" not in _dotted(func)) and not (
                name == "compile" and isinstance(func, ast.Attribute)):
            self._hit(node, f"calls {_CALLS[name]}")
        if isinstance(func, ast.Attribute) and func.attr in ("append", "insert", "extend") and (
                "transformers" in _dotted(func.value)):
            self._hit(node, f"registers `{_dotted(func.value)}`")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in _NAMES:
            self._hit(node, f"uses {_NAMES[node.id]}")

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name in ("__eq__", "__ne__", "__bool__", "__float__", "__array__"):
            self._hit(node, f"defines `{node.name}`")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef


def _parseable(source: str) -> str:
    """Cell source with IPython magics and shell escapes replaced by `pass`."""
    lines = []
    for line in source.splitlines():
        stripped = line.lstrip()
        lines.append(line[: len(line) - len(stripped)] + "pass" if stripped.startswith(("%", "!")) else line)
    return "\n".join(lines)


def scan(cells: list[tuple[str, str]]) -> list[str]:
    """Flags for (label, source) student cells that reach for the grading machinery."""
    scanner = _Scanner()
    flags: list[str] = []
    for label, source in cells:
        try:
            tree = ast.parse(_parseable(source))
        except SyntaxError:
            continue
        scanner.found = []
        scanner.visit(tree)
        for line, what in scanner.found:
            flag = f"suspicious: {what} (cell {label}, line {line})"
            if flag not in flags:
                flags.append(flag)
    return flags
