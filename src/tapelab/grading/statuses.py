"""The named outcome of every input file: what it means and what the instructor should do."""
from __future__ import annotations

__all__ = ["STATUSES", "FINAL", "GRADED_STATUSES", "worst"]

# status -> (meaning, what to do). Order is the order of the summary table.
STATUSES: dict[str, tuple[str, str]] = {
    "graded": ("executed and scored", "nothing"),
    "tampered": (
        "locked or graded cells were changed, deleted or duplicated; they were restored from the "
        "gradebook and the notebook was graded", "review the flags in formgrader before releasing feedback"),
    "timed_out": (
        "a cell or the whole notebook ran past its time limit; cells not run score 0",
        "look for an endless loop; regrade with a larger --timeout if the code is merely slow"),
    "kernel_died": (
        "the kernel exited (os._exit, a crash, the memory limit); cells not run score 0",
        "read the last outputs in autograded/; regrade with --force if it was the machine's fault"),
    "output_limit": (
        "the notebook sent more than the output limit (bytes of any kind, including widget state, or "
        "more than 10,000 messages), or stored attachments and metadata past it (stripped); the kernel was "
        "stopped, cells not run score 0", "ask the student to remove the large prints, pasted images or saved widget state"),
    "invalid_notebook": (
        "not JSON, not a notebook, or not nbformat 4; scored 0 with this reason in the gradebook, unless it "
        "holds a grade of an earlier submission, which is kept", "ask the student to resubmit"),
    "unknown_notebook": (
        "the file name does not name a notebook released in this course",
        "rename it to <student>_<notebook>.ipynb or <student>/<notebook>.ipynb, or release the notebook"),
    "missing_notebook": (
        "the student submitted other notebooks of this run but never this one (no earlier run graded it), "
        "or the student's folder (or its assignment folder) holds no notebook; scored 0",
        "nothing, unless the student says it was uploaded elsewhere; the reason names the folder or zip read"),
    "superseded": (
        "an older file of the same student and notebook: a newer one was graded (by nbgrader's timestamp.txt, "
        "else the time in an LMS file name, else the file's time; the reason gives both), or the file "
        "given with --prefer; not graded, no score",
        "nothing; to grade this file instead, rerun with --prefer and its name as the reason shows it"),
    "duplicate": (
        "a second file for the same student and notebook with the same submission time (student ids "
        "compared ignoring case and Unicode normalization, so `Bob` and `bob` are one student); the first "
        "in name order was graded", "delete the stale copy and rerun, or pick one with --prefer"),
    "bad_name": (
        "the file's name cannot be used: bytes that are not UTF-8 (shown as \\xNN), control or invisible "
        "characters, longer than file systems allow, or no usable student id; not read",
        "rename the file to <student>_<notebook>.ipynb in printable characters and rerun"),
    "unsafe_path": (
        "a symbolic link, a special file (device, fifo, socket), or a zip entry with an absolute path, "
        "`..`, or a folder that is also a file in the zip; not read",
        "ask for a clean download, or replace the link by the file itself, and rerun"),
    "too_large": (
        "the file or zip entry is bigger than the bound for one notebook, or the zip's bound on bytes read "
        "in all was reached (the reason gives the sizes); not read",
        "ask the student to clear large outputs and resubmit; for a big zip, unzip it and pass the folder"),
    "unreadable": (
        "a zip entry or folder that could not be read: a bad CRC, corrupt or unsupported compression, "
        "encryption, truncated data, or no permission; not graded",
        "download the archive again (or ask the student to resubmit the file) and rerun"),
    "infra_error": (
        "the grader failed, not the student: the kernel did not start after bounded retries, a "
        "worker could not apply the run's protections or was lost, or saving failed; not scored",
        "rerun `tapelab grade`: it regrades only these"),
}

# Outcomes that a rerun skips when the file is unchanged (infra_error is retried).
FINAL = frozenset(s for s in STATUSES if s != "infra_error")
# Outcomes whose score comes from the gradebook.
GRADED_STATUSES = frozenset({"graded", "tampered", "timed_out", "kernel_died", "output_limit"})

_SEVERITY = ["graded", "tampered", "timed_out", "kernel_died", "output_limit"]


def worst(*statuses: str) -> str:
    """The most severe of the execution outcomes (output_limit > kernel_died > timed_out > tampered)."""
    return max(statuses, key=_SEVERITY.index)
