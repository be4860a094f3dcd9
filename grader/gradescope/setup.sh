#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image (as root, on Ubuntu). The autograder
# zip holds setup.sh, run_autograder, notebook.txt and tapelab/ (this repository, without .venv).
set -euo pipefail
SOURCE="${AUTOGRADER_ROOT:-/autograder}/source"
apt-get install -y make python3-venv util-linux  # util-linux: unshare, setpriv, prlimit (the sandbox)
cd "$SOURCE/tapelab"
make venv
NOTEBOOK="$(tr -d '[:space:]' < "$SOURCE/notebook.txt")"
.venv/bin/python -c "import sys; from pathlib import Path; from tapelab.release import prepare_course; \
prepare_course(Path(sys.argv[1]), [sys.argv[2]])" "$SOURCE/course" "$NOTEBOOK"
