"""A static look at the student's cells: code that reaches for the grading machinery is flagged
(never zeroed) for the instructor to review. The guard in the kernel (`channel` and `in_kernel`) is what keeps
verdicts right; this scan says who tried.
"""
from __future__ import annotations

import ast
import re

__all__ = ["scan"]

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
    "getattr": "getattr()", "vars": "vars()", "globals": "globals()", "locals": "locals()",
    "addaudithook": "sys.addaudithook()", "audit": "sys.audit()", "stack": "inspect.stack()",
    "start_new_thread": "_thread.start_new_thread()", "Thread": "threading.Thread()",
}
_MODULES = {"ctypes", "gc", "importlib", "builtins", "subprocess", "socket", "signal", "multiprocessing",
            "inspect", "threading", "_thread", "linecache", "marshal", "pickle", "types"}
_NAMES = {"__builtins__": "__builtins__", "get_ipython": "get_ipython()", "In": "the input history `In`",
          "_ih": "the input history `_ih`", "Out": "the output history `Out`", "_oh": "the output history `_oh`"}
# Builtins that reach the machinery by name, flagged wherever they are used (called or passed on).
_REFERENCED = {"setattr", "delattr", "getattr", "vars", "globals", "exec", "eval", "compile", "__import__"}
# Attributes that open the interpreter's internals (frames, namespaces, code, class graphs): reading
# them is enough to be flagged.
_INTROSPECTION = {
    "__dict__", "__globals__", "__code__", "__closure__", "__self__", "__func__", "__subclasses__", "__mro__",
    "__bases__", "__base__", "__setattr__", "__delattr__", "__getattribute__", "__builtins__", "__loader__",
    "__spec__", "f_back", "f_locals", "f_globals", "f_builtins", "tb_frame", "tb_next", "gi_frame", "cr_frame",
    "ag_frame", "modules", "_parent_header", "session", "iopub_socket", "history_manager",
}


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
        self.imported: set[str] = set()  # names bound by import statements: modules and their members

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
            elif isinstance(target, ast.Attribute) and root in self.imported:
                self._hit(node, f"assigns `{_dotted(target)}`, an attribute of an imported module")

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
            self.imported.add(alias.asname or top)
            if top in _MODULES:
                self._hit(node, f"imports `{alias.name}`")
            if top == "tapelab":
                self.tapelab_aliases.add(alias.asname or top)
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        top = (node.module or "").split(".")[0]
        self.imported.update(alias.asname or alias.name for alias in node.names)
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
        if isinstance(func, ast.Name) and func.id in _CALLS:  # flagged once, as the call
            for child in [*node.args, *node.keywords]:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in _NAMES:
            self._hit(node, f"uses {_NAMES[node.id]}")
        elif node.id in _REFERENCED and isinstance(node.ctx, ast.Load):
            self._hit(node, f"uses `{node.id}`")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _INTROSPECTION:
            self._hit(node, f"reads `{_dotted(node)}`")
        self.generic_visit(node)

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
