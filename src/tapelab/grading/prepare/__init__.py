"""Stage 2, prepare: a submission rebuilt on its release before anything of it runs.

`sanitize` reads the notebook (bounded, validated) and `rebuild` keeps the student's answer cells only,
everything else taken from the release, so a tampered test or metadata never reaches a kernel. Runs in
the coordinator; may import the shared modules and `intake`.
"""
from tapelab.lazy import face

__all__ = ["Invalid", "prepare", "read_notebook"]

__getattr__, __dir__ = face(__name__, {
    "prepare": "sanitize", "read_notebook": "sanitize", "Invalid": "sanitize"})
