"""Coordinator, before execution: read a submission, rebuild it on the release, run nbgrader's restores.

The student's copy of nbgrader metadata is never trusted (see `rebuild`): the released notebook
decides which cells are graded, their points and type, and nbgrader's OverwriteCells then puts
the gradebook's source (hidden tests included) into every locked cell, so each graded test runs
what the instructor wrote and an unanswered stub scores 0. Changes are flags (status `tampered`),
never `invalid_notebook`.

Bytes the submission stores that outputs do not account for (cell and notebook metadata, unknown
keys, attachments) count against the run's output limit. Only the metadata nbgrader and nbconvert
need is kept: the release's notebook `kernelspec` and `language_info` (nbgrader's
OverwriteKernelspec, nbconvert's highlighting) and the release's cell metadata (`nbgrader`,
`deletable`, `editable`, `tags`); student attachments are kept unless the stored bytes pass the limit.
"""
from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field

from nbformat import NotebookNode
from nbformat.warnings import DuplicateCellId, MissingIDFieldWarning

from tapelab.errors import InfraError, SubmissionError
from tapelab.grading.course import Course
from tapelab.grading.intake.archive import MAX_NOTEBOOK_BYTES
from tapelab.grading.prepare.rebuild import rebuild
from tapelab.grading.records import valid_notebook
from tapelab.release import variants_salt

__all__ = ["CourseMismatch", "Invalid", "Prepared", "read_notebook", "prepare", "stored_bytes"]

_CELL_CONTENT = {"cell_type", "id", "source", "outputs", "execution_count", "attachments"}
_NOTEBOOK_CONTENT = {"cells", "nbformat", "nbformat_minor"}


class Invalid(SubmissionError, ValueError):
    """The file is not a usable notebook; the message says why (for the report)."""


class CourseMismatch(InfraError, RuntimeError):
    """The course's release and gradebook disagree: the grader's fault, never the student's."""


@dataclass
class Prepared:
    """A sanitized submission, ready for a worker, and what was found on the way.

    `stripped` is empty, or says which stored bytes were dropped for the output limit.
    """

    nb: NotebookNode
    flags: list[str] = field(default_factory=list)
    tampered: bool = False
    stripped: str = ""
    originals: list[tuple[str, str]] = field(default_factory=list)  # (grade id, what the student had there)
    # (salt, student) in a course with per-student variants: the worker pins the checks to that student's variant
    # (worker.pinned) before the kernel starts; None: every check tests the notebook's numbers.
    variant: tuple[str, str] | None = None
    release: NotebookNode | None = None  # the released notebook it was rebuilt on (read once per submission)


def read_notebook(raw: bytes) -> NotebookNode:
    """Parse `raw` as an nbformat 4 notebook or raise Invalid naming the problem."""
    if len(raw) > MAX_NOTEBOOK_BYTES:
        raise Invalid(f"the file is {len(raw):,} bytes, more than {MAX_NOTEBOOK_BYTES:,}: ask for a resubmission "
                      "with outputs cleared and large pasted images removed")
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise Invalid(f"not JSON ({error})") from None
    except RecursionError:
        raise Invalid("JSON nested too deeply to be a notebook: open and save it in JupyterLab") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list) or "nbformat" not in data:
        raise Invalid("JSON but not a notebook (no `cells` list or `nbformat`)")
    if data.get("nbformat") != 4:
        raise Invalid(f"nbformat {data.get('nbformat')!r}, expected 4: open and save it in JupyterLab")
    try:
        with warnings.catch_warnings():  # repaired cell ids do not matter: `rebuild` assigns its own
            warnings.simplefilter("ignore", DuplicateCellId)
            warnings.simplefilter("ignore", MissingIDFieldWarning)
            nb = valid_notebook(json.dumps(data))
    except Exception as error:  # nbformat raises several types for malformed cells
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        first = first if len(first) <= 200 else first[:200] + "..."  # it can quote a huge student value
        raise Invalid(f"not a valid nbformat 4 notebook ({first}): open and save it in JupyterLab") from None
    return nb


def _size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str).encode())


def stored_bytes(nb: NotebookNode) -> tuple[int, int]:
    """(attachments, metadata) bytes stored in a submission besides sources and outputs; metadata
    includes unknown keys and cells of unknown types (all of which ClearOutput leaves in place)."""
    attachments = 0
    metadata = sum(_size(value) for key, value in nb.items() if key not in _NOTEBOOK_CONTENT)
    for cell in nb.cells:
        if cell.get("cell_type") not in ("code", "markdown", "raw"):
            metadata += _size(cell)
            continue
        attachments += _size(cell["attachments"]) if cell.get("attachments") else 0
        metadata += sum(_size(value) for key, value in cell.items() if key not in _CELL_CONTENT)
    return attachments, metadata


def _stripped(attachments: int, metadata: int, limit: int) -> str:
    parts = [f"{what} of {size:,} bytes" for what, size in (("attachments", attachments), ("metadata", metadata))
             if size]
    return (f"stored {' and '.join(parts)} stripped (limit {limit:,}): the answers were graded without them; "
            "ask the student to delete pasted images and saved widget state")


def prepare(course: Course, nb: NotebookNode, student: str, assignment: str, notebook: str, *,
            output_limit: int) -> Prepared:
    """Rebuild the submission on the release, then let nbgrader restore the gradebook's cells; in a course with
    per-student variants, say whose variant the checks test (`Prepared.variant`: the worker pins them, computing
    the expected values where the references do, so the coordinator never runs the references).

    `output_limit` is the run's output limit in bytes (stored bytes count against it).
    Raises CourseMismatch when the course's release and gradebook disagree (nothing the student sent
    can cause it: the notebook is rebuilt on the release).
    """
    from nbgrader.preprocessors import CheckCellMetadata, OverwriteCells, OverwriteKernelspec

    attachments, metadata = stored_bytes(nb)
    over = attachments + metadata > output_limit
    release = course.release_notebook(assignment, notebook)
    built = rebuild(nb, release, keep_attachments=not over)
    resources = {"nbgrader": {"student": student, "assignment": assignment, "notebook": notebook,
                              "db_url": course.db_url}, "unique_key": notebook}
    result = built.nb
    for cls in (OverwriteKernelspec, OverwriteCells, CheckCellMetadata):
        try:
            result, resources = cls(config=course.config)(result, resources)
        except Exception as error:  # nbgrader raises ValidationError/RuntimeError/KeyError/MissingEntry
            raise CourseMismatch(f"nbgrader could not restore the released cells ({cls.__name__}: {error}): release/"
                          f"{assignment} and the gradebook disagree; regenerate them (`nbgrader generate_assignment "
                          f"{assignment} --force` in the course folder) and grade again") from None
    salt = variants_salt(course.root)  # each check tests the variant of the student this submission's folder holds
    return Prepared(result, built.flags, built.tampered, _stripped(attachments, metadata, output_limit) if over else "",
                    built.originals, None if salt is None else (salt, student), release)
