"""The `tapelab` command: instructor tasks as subcommands. Usage errors exit with status 2."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tapelab.paths import NOTEBOOKS

__all__ = ["main"]


def _release(args: argparse.Namespace) -> int:
    from tapelab.release import ReleaseError, release

    try:
        for path in release(args.names or None, out=args.out):
            print(f"released {path}")
    except ReleaseError as error:
        print(f"tapelab release: {error}", file=sys.stderr)
        return 2
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tapelab", description="Instructor tools for the tapelab course.")
    commands = parser.add_subparsers(dest="command", required=True)
    release = commands.add_parser("release", help="generate student notebooks from solutions/ (nbgrader)")
    release.add_argument("names", nargs="*", help="notebooks to release, e.g. 01_basic_tape (default: all)")
    release.add_argument("--out", type=Path, default=NOTEBOOKS, help="folder for student notebooks")
    release.set_defaults(run=_release)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
