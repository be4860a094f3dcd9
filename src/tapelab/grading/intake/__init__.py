"""Stage 1, intake: find the submissions in a folder or an LMS zip and choose which file of each counts.

`discover` walks the input (nbgrader's layout, one folder per student, flat LMS names) into candidates,
`archive` reads a zip safely, `lms` parses Blackboard, Canvas and Moodle download names, `resubmissions`
picks the newest file of each student's notebook (or the one `--prefer` names), `roster` reads the
student list, `stored` writes the files nbgrader keeps beside a stored submission. Runs in the
coordinator; imports the shared grading modules only, no later stage.
"""
from tapelab.lazy import face

__all__ = ["Candidate", "InputError", "RosterError", "ensure_submission_files", "read_roster"]

__getattr__, __dir__ = face(__name__, {
    "Candidate": "discover", "InputError": "discover", "read_roster": "roster", "RosterError": "roster",
    "ensure_submission_files": "stored"})
