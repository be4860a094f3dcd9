"""What is derived from the gradebook, refreshed together: the feedback pages, grades.csv and the class insight.

`tapelab grade` calls `refresh` at the end of every run, and `tapelab feedback` on its own after
manual grading in formgrader, so neither file can keep a score the gradebook no longer has.
"""
from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from tapelab.grading.grades import standings
from tapelab.grading.course import Course
from tapelab.grading.gradebook import redact
from tapelab.grading.records import WriteFailed

__all__ = ["GRADES_FILE", "Derived", "refresh"]

GRADES_FILE = "grades.csv"


@dataclass
class Derived:
    rows: list[standings.Standing] | None = None  # None: the gradebook could not be read
    feedback: object = None  # handback.refresh.Refreshed, None when the pages could not be refreshed
    written: dict[str, str] = field(default_factory=dict)  # what -> where (and how many), for the summary
    problems: list[str] = field(default_factory=list)  # for the instructor: what failed and what to do


def _what(error: BaseException) -> str:
    return f"{type(error).__name__}: {str(error)[:300]}"


def refresh(course: Course, statuses: dict[str, dict], force: bool = False,
            written_earlier: Collection[str] = ()) -> Derived:
    """Regenerate the feedback pages whose gradebook rows changed (all with `force`), then grades.csv.

    `statuses` maps student/assignment/notebook to tapelab's last record of it (status, reason).
    `written_earlier`: the pages this run already rendered (`tapelab grade` renders each as it is graded);
    the summary counts a page written when this run wrote it at any point, else unchanged.
    A failure of either is a problem in the result, never an exception: the caller still reports. A write
    that fails (a full disk) is one problem, and nothing more is tried.
    """
    from tapelab.grading.handback.refresh import HANDBACK, refresh_feedback

    out = Derived()
    try:
        out.feedback = refresh_feedback(course, force=force)
        pages = out.feedback
        pages.written = sorted(set(pages.written) | set(written_earlier))
        pages.unchanged = [key for key in pages.unchanged if key not in pages.written]
        out.written["feedback"] = (f"{course.root / 'feedback'}/ ({len(pages.written)} page(s) written, "
                                   f"{len(pages.unchanged)} unchanged, {len(pages.failed)} failed)")
        out.written["pages to upload"] = f"{course.root / HANDBACK}/ (the feedback pages alone, for your LMS)"
        out.problems += list(pages.notes)
        out.problems += [f"the feedback of {f.student}/{f.assignment}/{f.notebook} was not written: {f.reason}"
                         for f in pages.failed]
    except WriteFailed as error:
        out.problems.append(str(error))
        return out
    except Exception as error:
        out.problems.append(f"the feedback pages could not be refreshed ({_what(error)}): run `tapelab feedback "
                            f"--course {course.root}` once the gradebook {redact(course.db_url)} is readable")
    target = course.root / GRADES_FILE
    try:
        out.rows = standings.read(course.db_url, statuses)
        standings.write_grades_csv(target, out.rows)
        out.written[GRADES_FILE] = f"{target} ({len(out.rows)} rows: every student x notebook in the gradebook)"
    except WriteFailed as error:
        out.problems.append(str(error))
        return out
    except Exception as error:
        out.problems.append(f"{target} was not written: the gradebook {redact(course.db_url)} could not be read "
                            f"({_what(error)}); run `tapelab feedback --course {course.root}` once it is readable")
    if out.rows is not None:  # the class insight follows the same rows (tapelab.grading.insight.tables)
        from tapelab.grading.insight import tables as insight

        try:
            out.written.update(insight.write(course.root, course.db_url, out.rows))
        except WriteFailed as error:
            out.problems.append(str(error))
        except Exception as error:
            out.problems.append(f"the class insight was not written ({_what(error)}): run `tapelab insight "
                                f"--course {course.root}`")
    return out

