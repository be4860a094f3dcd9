"""Stage 3 beside execution, integrity: the defences against gaming the checks instead of answering them.

`scan` flags suspicious student code statically (for review, never zeroed), in the coordinator;
`channel` is the executor's side of the guard, in the worker; `in_kernel` is the guard itself, sent as
source into the student's kernel before any cell runs (it is never imported, and imports nothing of
tapelab). Not to be confused with `tapelab.guarded`, the practitioners' gradient guard. Imports no stage.
"""
from tapelab.lazy import face

__all__ = ["Session"]

__getattr__, __dir__ = face(__name__, {
    "Session": "channel"})
