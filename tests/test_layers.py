"""The package's layers, read from its source: who may import whom (docs/architecture.md draws them).

Every `import` and `from ... import` of every module under src/tapelab counts, at module level or inside a
function (a lazy import is still an arrow). A name taken from a package's lazy face (`tapelab.lazy.face`)
counts as an import of the module the face maps it to, so a face is no way around a rule.
"""
import ast
import functools
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# Units below tapelab.grading may import only the units listed (and themselves); "cli" may import anything
# and nothing imports it.
ALLOWED = {
    "causes": set(), "errors": set(), "explained": set(), "lazy": set(), "outside": set(), "paths": set(),
    "tf_log": set(),
    "quiet": {"tf_log"},
    "lint": {"causes", "errors"},
    "checker": {"causes", "errors", "explained", "lazy", "lint", "quiet", "tf_log"},
    "diagnose": {"causes", "explained", "quiet", "tf_log"},
    "guarded": {"diagnose"},
    "widgets": {"diagnose"},
    "exercises": {"causes", "checker", "diagnose", "lint", "quiet"},
    "release_answers": {"checker", "paths"},
    "release_expected": {"checker", "paths"},
    "release_variants": {"checker", "paths", "release_expected"},
    "release_predictions": set(),
    "release": {"checker", "errors", "paths", "release_answers", "release_expected", "release_predictions",
                "release_variants"},
    "tapelab": {"lazy", "checker"},
}
# What all of grading may import from outside it, and what each of its stages may import inside it.
GRADING_BELOW = {"tapelab", "causes", "checker", "errors", "lazy", "outside", "paths", "release", "release_variants"}  # tapelab: its __file__
COMMON = {"course", "gradebook", "records", "statuses", "hidden", "progress"}
COORDINATOR = {"run", "outcomes", "outputs", "report", "schedule"}
STAGES = {
    "intake": set(),
    "prepare": {"intake"},
    "integrity": set(),
    "execution": {"integrity"},
    "grades": {"intake"},
    "handback": {"intake", "grades"},
    "insight": {"grades"},
    "exports": {"grades"},
}
# Modules that run where tapelab is not imported: sent as source into the kernel, the zygote's own process, or
# what the zygote loads by its path (the kernel's view, also run as a script on the cold path; its streams).
STANDALONE = {"tapelab.grading.integrity.in_kernel", "tapelab.grading.execution.zygote",
              "tapelab.grading.execution.mountcalls", "tapelab.grading.execution.zygote_fresh"}
# Third-party packages a unit must never import (lint runs in pre-commit hooks and CI, without them); an import
# guarded by `except ImportError` with a fallback (lint's use of IPython where it is installed) is not one.
HEAVY = {"lint": {"tensorflow", "keras", "numpy", "nbgrader", "nbformat", "jsonschema", "sqlalchemy", "IPython"},
         "causes": {"tensorflow", "numpy"}, "explained": {"tensorflow", "keras", "numpy"}}


def read_sources() -> dict[str, str]:
    """Module name -> source of every module under src/tapelab."""
    found = {}
    for path in sorted((SRC / "tapelab").rglob("*.py")):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        found[name] = path.read_text()
    return found


@functools.lru_cache(maxsize=None)
def _tree(text: str) -> ast.Module:
    return ast.parse(text)


def _face(tree: ast.Module) -> dict[str, str]:
    """name -> module (relative) of a package's `face(__name__, {...})` call."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "face" and len(node.args) == 2:
            return {k.value: v.value for k, v in zip(node.args[1].keys, node.args[1].values)}
    return {}


def _optional(tree: ast.Module) -> set[int]:
    """ids of the `from X import Y` statements in the body of a `try` that catches ImportError: the module runs
    without X (it falls back), so X is an optional extra, not a dependency."""
    guarded = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(isinstance(h.type, ast.Name) and h.type.id in (
                "ImportError", "ModuleNotFoundError") for h in node.handlers):
            guarded |= {id(n) for stmt in node.body for n in ast.walk(stmt) if isinstance(n, ast.ImportFrom)}
    return guarded


def imports(sources: dict[str, str]) -> dict[str, set[str]]:
    """Module -> the tapelab modules it imports; other top-level packages as `third:NAME`."""
    trees = {name: _tree(text) for name, text in sources.items()}
    faces = {name: _face(tree) for name, tree in trees.items()}
    packages = {name for name in sources if (SRC / name.replace(".", "/") / "__init__.py").exists()}

    def resolve(module: str, name: str | None) -> str:
        if name is not None and f"{module}.{name}" in sources:
            return f"{module}.{name}"
        if name is not None and name in faces.get(module, {}):
            return f"{module}.{faces[module][name]}"
        return module

    edges = {}
    for name, tree in trees.items():
        found = set()
        optional = _optional(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and id(node) in optional and node.level == 0 and (
                    node.module or "").split(".")[0] != "tapelab":
                continue  # `try: from X import Y` / `except ImportError:` works without X: not a dependency
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    found.add(alias.name if top == "tapelab" else f"third:{top}")
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: from the module's own package
                    base = name if name in packages else name.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        base = base.rpartition(".")[0]
                    module = f"{base}.{node.module}" if node.module else base
                else:
                    module = node.module or ""
                if module.split(".")[0] != "tapelab":
                    found.add(f"third:{module.split('.')[0]}")
                    continue
                for alias in node.names:
                    found.add(resolve(module, alias.name))
        edges[name] = {e for e in found if e != name and e != "third:__future__"}
    return edges


def unit(module: str) -> str:
    """`tapelab.X...` -> X; inside grading: the stage, `common` or `coordinator`."""
    parts = module.split(".")
    if len(parts) == 1:
        return "tapelab"
    if parts[1] != "grading":
        return parts[1]
    if len(parts) == 2:
        return "grading.face"
    return "grading." + ("common" if parts[2] in COMMON else "coordinator" if parts[2] in COORDINATOR else parts[2])


def _allowed(source: str, target: str) -> bool:
    src, dst = unit(source), unit(target)
    if src == dst or src == "cli":
        return True
    if dst == "cli":
        return False
    if src.startswith("grading."):
        if not dst.startswith("grading."):
            return dst in GRADING_BELOW
        inner_src, inner_dst = src.split(".")[1], dst.split(".")[1]
        if inner_src in ("coordinator", "face"):
            return True
        if inner_dst == "common":
            return True
        return inner_src in STAGES and inner_dst in STAGES[inner_src]
    if dst.startswith("grading."):
        return False
    return dst in ALLOWED.get(src, set())


def violations(sources: dict[str, str]) -> list[str]:
    """Every import that breaks a layer rule, as `module -> imported (why)`."""
    found = []
    for module, targets in sorted(imports(sources).items()):
        for target in sorted(targets):
            if target.startswith("third:"):
                heavy = HEAVY.get(unit(module), set())
                if target[6:] in heavy:
                    found.append(f"{module} -> {target[6:]} ({unit(module)} must not import {target[6:]})")
            elif module in STANDALONE:
                found.append(f"{module} -> {target} (runs where tapelab is not imported)")
            elif not _allowed(module, target):
                found.append(f"{module} -> {target} ({unit(module)} may not import {unit(target)})")
    return found


def cycles(sources: dict[str, str]) -> list[list[str]]:
    """The import circles among tapelab's modules (strongly connected components of more than one)."""
    graph = {m: {t for t in targets if t in sources} for m, targets in imports(sources).items()}
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.fixture(scope="module")
def sources():
    return read_sources()


def test_every_import_follows_the_layers(sources):
    """Does every arrow point down: execution never to handback, the checker never to grading, lint never
    to TensorFlow or nbgrader, causes to nothing of tapelab, the kernel's guard to nothing at all?"""
    assert violations(sources) == []


def test_no_import_circle(sources):
    """Can every module be imported without another one that imports it back?"""
    assert cycles(sources) == []


@pytest.mark.parametrize("module, added, named", [
    ("tapelab.grading.execution.worker", "from tapelab.grading.handback import page", "execution may not import "
                                                                                       "grading.handback"),
    ("tapelab.checker.compare", "    from tapelab.grading import grade", "checker may not import grading.coordinator"),
    ("tapelab.lint.flow", "import tensorflow as tf", "lint must not import tensorflow"),
    ("tapelab.causes", "from tapelab.lint import Finding", "causes may not import lint"),
    ("tapelab.grading.intake.archive", "from tapelab.grading.prepare.sanitize import Invalid",
     "grading.intake may not import grading.prepare"),
    ("tapelab.grading.integrity.in_kernel", "import tapelab.causes", "runs where tapelab is not imported"),
    ("tapelab.widgets.render", "from tapelab.cli import main", "widgets may not import cli"),
])
def test_a_forbidden_import_is_caught(sources, module, added, named):
    """Does the rule check fail, naming the rule, when a forbidden import is added (at module level or in a
    function), or a face name that resolves to a forbidden module is imported?"""
    body = f"\ndef _added():\n{added}\n" if added.startswith(" ") else f"\n{added}\n"
    changed = {**sources, module: sources[module] + body}
    assert any(named in v for v in violations(changed)), violations(changed)


def test_a_circle_is_caught(sources):
    """Does the circle check find the circle the execution stage once had (sandbox -> worker -> sandbox)?"""
    changed = dict(sources)
    changed["tapelab.grading.execution.sandbox"] += "\ndef _back():\n    from tapelab.grading.execution.worker import execute\n"
    assert any({"tapelab.grading.execution.sandbox", "tapelab.grading.execution.worker"} <= set(c)
               for c in cycles(changed))
