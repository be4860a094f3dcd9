"""`tapelab lint`: the guide's GradientTape pitfalls in .py files and notebooks (docs/lint.md).

Imports `tapelab.lint` alone: no TensorFlow, no nbgrader, nothing of grading (tests/cli/test_startup.py).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tapelab.errors import UsageError

if TYPE_CHECKING:
    from tapelab.lint import Config, Finding
    from tapelab.lint.fixes import Fixed

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Report the guide's GradientTape pitfalls. Exit status: 0 clean, 1 findings, 2 usage error. "
                          "`--explain RULE` prints a rule's documentation instead.")
    parser.add_argument("paths", nargs="*", type=Path, metavar="PATH", help=".py files, notebooks or folders")
    parser.add_argument("--format", choices=("text", "json", "github", "sarif"), default="text",
                        help="text (default), json, GitHub workflow annotations, or SARIF 2.1.0")
    parser.add_argument("--config", type=Path, metavar="DIR",
                        help="where to look for pyproject.toml's [tool.tapelab.lint] (default: here and above)")
    for flag, help_text in (("--select", "run only these rules (replaces the configuration's `select`)"),
                            ("--extend-select", "run these rules too"), ("--ignore", "skip these rules")):
        parser.add_argument(flag, type=_names, default=None if flag == "--select" else [], metavar="RULES",
                            help=f"{help_text}: comma-separated numbers, codes or prefixes (TPL, TPL1, TPL20)")
    parser.add_argument("--jobs", type=int, default=None, help="processes (default: number of CPUs)")
    fixing = parser.add_mutually_exclusive_group()
    fixing.add_argument("--fix", action="store_true",
                        help="apply the safe fixes (findings marked [*]), write the files, then report what remains")
    fixing.add_argument("--diff", action="store_true",
                        help="print a unified diff of what --fix would change and write nothing (exit 1 if any)")
    parser.add_argument("--explain", metavar="RULE",
                        help="print the documentation of a rule, by number (TPL101) or code (not-watched), and exit")
    parser.set_defaults(parser=parser)


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def run(args: argparse.Namespace) -> int:
    from tapelab.lint import find_rule, lint_paths, load_config
    from tapelab.lint.output import render

    if args.explain is not None:
        if args.paths:
            raise UsageError("--explain prints one rule's documentation: pass it without paths")
        print(find_rule(args.explain).explanation(), end="")
        return 0
    if not args.paths:
        args.parser.error("the following arguments are required: PATH (or --explain RULE)")
    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        raise UsageError(f"{', '.join(missing)} does not exist: pass .py files, notebooks or folders")
    config = load_config(args.config or Path.cwd()).narrowed(args.select, args.extend_select, args.ignore)
    if args.diff:
        return _diff(args.paths, config)
    findings, warnings, _ = _fixed(args.paths, config) if args.fix else lint_paths(args.paths, config, jobs=args.jobs)
    _warn(warnings)
    text = render(findings, args.format)
    if text:
        print(text)
    return 1 if findings else 0


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        print(f"tapelab lint: warning: {warning}", file=sys.stderr)


def _fixes(paths: list[Path], config: Config, write: bool) -> list[Fixed]:
    """Every file's fixes (written back when `write`), with their count on stderr."""
    from tapelab.lint.fixes import fix_paths

    results = fix_paths(paths, config, write)
    fixed, changed = sum(r.fixed for r in results), sum(r.after != r.before for r in results)
    print(f"tapelab lint: {'fixed' if write else 'would fix'} {fixed} finding{'s' if fixed != 1 else ''} in "
          f"{changed} file{'s' if changed != 1 else ''}", file=sys.stderr)
    return results


def _fixed(paths: list[Path], config: Config) -> tuple[list[Finding], list[str], int]:
    """--fix: write the fixes; then, as `lint_paths` gives them, the findings that remain, warnings, files read."""
    results = _fixes(paths, config, write=True)
    return [f for r in results for f in r.findings], [w for r in results for w in r.warnings], len(results)


def _diff(paths: list[Path], config: Config) -> int:
    """--diff: print what --fix would change and write nothing; 1 if it would change anything, as Ruff exits."""
    results = _fixes(paths, config, write=False)
    _warn([w for r in results for w in r.warnings])
    print("".join(r.diff() for r in results), end="")
    return 1 if any(r.after != r.before for r in results) else 0
