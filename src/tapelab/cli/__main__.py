"""`python -m tapelab.cli ...`, as the `tapelab` entry point."""
import sys

from tapelab.cli.main import main

sys.exit(main())
