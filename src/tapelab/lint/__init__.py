"""`tapelab lint`: static checks of the guide's GradientTape pitfalls, for the course and any project's CI.

Python's own `ast` is enough: every rule follows names through assignments within one scope (a module,
a notebook's cells in order, or a function), which needs positions and node types, not the formatting
LibCST keeps or the inference astroid adds, and it keeps the linter free of new dependencies.

For an exercise checker: `lint_function(student_function)` gives the findings, each with the cause code
the feedback speaks (`finding.code`), on the function's own source. For flake8: `tapelab.lint.flake8`.
The rules, with examples and fixes, are in docs/lint.md (`tapelab lint --explain RULE` prints one).

Runs wherever it is called: the `tapelab lint` command, pre-commit, flake8, and the checker in a student's
kernel. Imports only `causes` and `errors` of tapelab and no third-party package: no TensorFlow, NumPy or
nbgrader (tests/test_layers.py).
"""
from __future__ import annotations

import os
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path

from tapelab.lint import (fit_rules, keras3_rules, keras_rules, path_rules, source_rules,  # noqa: F401
                          tape_rules)  # (registers the rules)
from tapelab.lint.files import Config, expand, lint_file, lint_source, lint_text, lint_tree, load_config
from tapelab.lint.model import RULES, Finding, Rule, find_rule

__all__ = ["Finding", "Rule", "RULES", "Config", "find_rule", "lint_tree", "lint_source", "lint_text",
           "lint_function", "lint_file", "lint_paths", "load_config"]


def lint_function(function: Callable) -> list[Finding]:
    """Findings in one function's source (empty when its source cannot be read, e.g. a builtin)."""
    import inspect  # here: `tapelab lint` never needs it

    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return []
    try:
        return lint_source(source, getattr(function, "__qualname__", "<function>"))
    except SyntaxError:
        return []


def _one(job: tuple[Path, Config]) -> tuple[list[Finding], list[str]]:
    return lint_file(*job)


def lint_paths(paths: Iterable[Path], config: Config = Config(),
               jobs: int | None = None) -> tuple[list[Finding], list[str], int]:
    """Findings and warnings over every file under `paths`, and how many files were read; parallel over cores."""
    files = list(expand(paths, config))
    jobs = jobs or os.cpu_count() or 1
    if jobs == 1 or len(files) < 16:
        results = [lint_file(f, config) for f in files]
    else:
        from concurrent.futures import ProcessPoolExecutor  # here: a few files need no pool

        with ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(_one, [(f, config) for f in files], chunksize=32))
    findings = [f for found, _ in results for f in found]
    warnings = [w for _, said in results for w in said]
    return findings, warnings, len(files)
