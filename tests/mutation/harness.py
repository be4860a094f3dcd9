"""Judge every exercise's checker against its generated mutants, in-process and through nbgrader.

A non-equivalent mutant must fail its exercise's test cell with a tapelab Feedback. What else can
happen is a finding: a surviving mutant, a raw exception escaping the checker (the student would
see a traceback), a cell that writes to stderr (nbgrader scores it zero), a mutant reviewed as
equivalent that fails after all, or an in-process verdict that nbgrader's grade contradicts.
Used by test_mutants.py (a bounded sample) and tools/mutants.py (everything).
"""
from __future__ import annotations

import re
import tomllib
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from course import Submission, autograde, results, write_submission
from tapelab.paths import assignment_names
from tapelab.release import prepare_course

from .inprocess import TIMEOUT, Exercise, HarnessError, Verdict, exercises, grade
from .mutants import TAPE_KINDS, Mutant, base_kind, generate

__all__ = [
    "EQUIVALENT_FILE", "KEYWORDS", "Result", "Disagreement", "Equivalent", "HarnessError", "Exercise",
    "notebooks", "discover", "exercises", "mutants_of", "load_equivalents", "stale_equivalents", "judge", "sample",
    "Tier", "tier_submissions", "grade_submissions", "disagreements",
]

EQUIVALENT_FILE = Path(__file__).with_name("equivalent.toml")

# Words the visible message must contain to name each tape-specific mistake (case-insensitive;
# the student's own exception, echoed as "raised `...`", does not count).
KEYWORDS = {
    "drop_watch": ("watch",),
    "outside_with": ("inside the `with",),
    "wrong_target": ("target",),
    "wrong_source": ("source", "swapped"),
    "drop_persistent": ("persistent", "gradient` twice"),
    "numpy_in_tape": ("numpy",),
    "asarray_in_tape": ("numpy",),
    "rebind_assign": ("assign",),
    "swap_apply_gradients": ("apply_gradients", "zip("),
    "drop_training": ("training",),
    "drop_del_tape": ("del tape",),
}
assert set(KEYWORDS) == set(TAPE_KINDS)
_ECHOED_ERROR = re.compile(r"raised `[^`]*`")


def notebooks() -> list[str]:
    """Every solution notebook, discovered at run time."""
    return assignment_names()


def mutants_of(exercise: Exercise) -> list[Mutant]:
    return generate(exercise.reference, set(exercise.region))


def discover(names: list[str] | None = None) -> tuple[dict[str, list[Exercise]], dict[str, str]]:
    """Exercises by notebook (all notebooks by default), and why a notebook cannot be judged.

    A notebook that cannot be read, lacks a setup or test cell, or whose reference does not parse
    is reported in the second dict, never skipped silently.
    """
    specs, errors = {}, {}
    for nb in notebooks() if names is None else names:
        try:
            specs[nb] = exercises(nb)
            for spec in specs[nb]:
                mutants_of(spec)
        except Exception as error:  # a half-written notebook: judged "cannot be judged", not a crash
            errors[nb] = f"{type(error).__name__}: {error}"
            specs.pop(nb, None)
    return specs, errors


@dataclass(frozen=True)
class Equivalent:
    """A reviewed mutant that behaves like the reference, why, and the diff it was reviewed on."""

    reason: str
    diff: str


def load_equivalents(path: Path = EQUIVALENT_FILE) -> dict[tuple[str, str, str], Equivalent]:
    """(notebook, answer_id, mutant name) -> its review, from equivalent.toml."""
    data = tomllib.loads(path.read_text()) if path.exists() else {}
    return {(nb, answer_id, name): Equivalent(entry["reason"], entry["diff"])
            for nb, by_answer in data.items() for answer_id, entries in by_answer.items()
            for name, entry in entries.items()}


def stale_equivalents(equivalents: dict, generated: dict[tuple[str, str], list[Mutant]]) -> list[str]:
    """Reviews that no longer match a generated mutant: gone, or a different change under that name.

    `generated` maps (notebook, answer_id) to its mutants for the notebooks this run covers;
    reviews of other existing notebooks are not judged, reviews of missing notebooks are stale.
    """
    covered, existing = {nb for nb, _ in generated}, set(notebooks())
    problems = []
    for (nb, answer_id, name), entry in sorted(equivalents.items()):
        if nb in existing and nb not in covered:
            continue
        diff = next((m.diff for m in generated.get((nb, answer_id), []) if m.name == name), None)
        if diff is None:
            problems.append(f"{nb} {answer_id} {name}: reviewed as equivalent, but no such mutant is generated")
        elif diff != entry.diff:
            problems.append(f"{nb} {answer_id} {name}: reviewed diff `{entry.diff}` is now `{diff}`: review again")
    return problems


@dataclass
class Result:
    """One mutant of one exercise, graded in-process."""

    exercise: Exercise
    mutant: Mutant
    verdict: Verdict
    equivalent: Equivalent | None = None

    @property
    def status(self) -> str:
        """killed | equivalent | survived | checker_bug | false_equivalent."""
        if self.verdict.outcome in ("raw_exception", "stderr"):
            return "checker_bug"
        if self.equivalent is not None:
            return "equivalent" if self.verdict.passed else "false_equivalent"
        return "survived" if self.verdict.passed else "killed"

    @property
    def ok(self) -> bool:
        return self.status in ("killed", "equivalent")

    @property
    def named(self) -> bool | None:
        """For a non-equivalent tape-specific mutant: does the visible message name the mistake? Else None."""
        kind = base_kind(self.mutant.kind)
        if kind not in KEYWORDS or self.equivalent is not None:
            return None
        said = _ECHOED_ERROR.sub("", self.verdict.visible_message).lower()
        return any(word.lower() in said for word in KEYWORDS[kind])

    def report(self) -> str:
        """A paragraph for a human: what went wrong, the mutant's diff, verdict and code."""
        v = self.verdict
        lines = [f"{self.exercise.notebook} {self.exercise.answer_id} {self.mutant.name}: {self.status.upper()}",
                 f"  change: {self.mutant.diff}",
                 f"  test cell: {v.outcome}{f' in the {v.part} part' if v.part else ''}"
                 f"{f': {v.message}' if v.message else ''}"]
        if v.answer_error:
            lines.append(f"  answer cell raised: {v.answer_error}")
        if self.equivalent:
            lines.append(f"  reviewed as equivalent: {self.equivalent.reason}")
        lines += ["  code:"] + [f"    {l}" for l in self.mutant.code.rstrip().splitlines()]
        return "\n".join(lines)


def judge(exercise: Exercise, mutants: list[Mutant], equivalents: dict, timeout: float | None = TIMEOUT) -> list[Result]:
    """Grade each mutant in-process and attach its review, if any."""
    return [Result(exercise, m, grade(exercise, m.code, m.name, timeout),
                   equivalents.get((exercise.notebook, exercise.answer_id, m.name))) for m in mutants]


def sample(mutants: list[Mutant], k: int) -> list[Mutant]:
    """Up to `k` mutants, deterministically: one of each kind in turn (tape kinds first, then the
    others by name), each kind's in source order; returned in that order of picking."""
    by_kind: dict[str, list[Mutant]] = defaultdict(list)
    for m in mutants:
        by_kind[base_kind(m.kind)].append(m)
    kinds = sorted(by_kind, key=lambda k: (TAPE_KINDS.index(k) if k in TAPE_KINDS else len(TAPE_KINDS), k))
    rounds = max((len(ms) for ms in by_kind.values()), default=0)
    picked = [by_kind[kind][depth] for depth in range(rounds) for kind in kinds if depth < len(by_kind[kind])]
    return picked[:k]


# ---- agreement with nbgrader --------------------------------------------------------------------

@dataclass
class Tier:
    """One nbgrader submission: a notebook with one mutant (or the reference) in each answer cell."""

    submission: Submission
    expected: dict[str, bool]  # test cell grade_id -> in-process verdict passed?
    mutants: dict[str, str] = field(default_factory=dict)  # test cell grade_id -> mutant name ("" = reference)


@dataclass(frozen=True)
class Disagreement:
    notebook: str
    student: str
    test_id: str
    mutant: str
    in_process: str
    nbgrader: str

    def __str__(self) -> str:
        return (f"{self.notebook} {self.student} {self.test_id} ({self.mutant or 'reference'}): "
                f"in-process {self.in_process}, nbgrader {self.nbgrader}")


def tier_submissions(specs: list[Exercise], chosen: dict[str, list[Result]], reference: bool,
                     student: str = "mutants") -> list[Tier]:
    """Submissions for one notebook whose exercises are `specs`: the reference if asked, then
    submission k with the k-th of `chosen[answer_id]` in each answer cell (the reference where an
    exercise has fewer), as tests/course.py combines catalogued mistakes."""
    notebook = specs[0].notebook
    tiers = []
    for k in range(-1 if reference else 0, max((len(rs) for rs in chosen.values()), default=0)):
        answers = {e.answer_id: e.reference for e in specs}
        expected = {e.test_id: True for e in specs}
        names = {e.test_id: "" for e in specs}
        for e in specs:
            picked = chosen.get(e.answer_id, [])
            if 0 <= k < len(picked):
                answers[e.answer_id] = picked[k].mutant.code
                expected[e.test_id] = picked[k].verdict.passed
                names[e.test_id] = picked[k].mutant.name
        name = f"{student}-ref" if k < 0 else f"{student}{k + 1:02d}"
        tiers.append(Tier(Submission(name, notebook, answers), expected, names))
    return tiers


def grade_submissions(root: Path, tiers: list[Tier], jobs: int = 2) -> list[Disagreement]:
    """Autograde every tier with the real nbgrader; list where a grade contradicts the in-process
    verdict (a pass must get full marks, a failure zero).

    Each notebook gets its own course in `root/<notebook>` (its own gradebook), so notebooks are
    released and graded in parallel, `jobs` nbgrader processes at a time.
    """
    by_notebook: dict[str, list[Tier]] = defaultdict(list)
    for tier in tiers:
        by_notebook[tier.submission.notebook].append(tier)

    def release(notebook: str) -> None:
        prepare_course(root / notebook, [notebook])
        for tier in by_notebook[notebook]:
            write_submission(root / notebook, tier.submission)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(release, by_notebook))
        list(pool.map(lambda t: autograde(root / t.submission.notebook, [t.submission], jobs=1), tiers))
    return [d for tier in tiers for d in disagreements(root / tier.submission.notebook, tier)]


def disagreements(course: Path, tier: Tier) -> list[Disagreement]:
    """Where the grade of `tier`'s submission in `course` contradicts the in-process verdict."""
    graded = results(course, tier.submission)
    found = []
    for test_id, passed in tier.expected.items():
        cell = graded.get(test_id)
        got = "missing" if cell is None else "full" if cell.score == cell.max_score else \
            "zero" if cell.score == 0 else f"{cell.score}/{cell.max_score}"
        if got != ("full" if passed else "zero"):
            said = cell.message.strip()[:300] if cell is not None else ""
            found.append(Disagreement(tier.submission.notebook, tier.submission.student, test_id,
                                      tier.mutants.get(test_id, ""), "pass" if passed else "fail",
                                      f"{got} ({said})" if said else got))
    return found
