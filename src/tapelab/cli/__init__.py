"""The `tapelab` command: one module per verb, imported only when that verb is chosen.

`main` (in `main.py`) holds the table of verbs, their one-line help and the module of each; a verb
module has `add_arguments(parser)` and `run(args) -> exit status`, and imports what it needs inside
`run`, so `tapelab --help` and `tapelab lint FILE` never load TensorFlow, nbgrader or the grading stack.
Runs in the instructor's (or CI's) shell. It may import every package of tapelab; none imports it.
"""
from tapelab.cli.main import main

__all__ = ["main"]
