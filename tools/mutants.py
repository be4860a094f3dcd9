"""Mutation testing of every exercise checker: all mutants in-process, then nbgrader agreement.

    python tools/mutants.py [NOTEBOOK ...] [--per-exercise K] [--agreement all|one|none] [--jobs N]

For each exercise of each solution notebook (all by default), every mutant of the reference
answer (tests/mutation/mutants.py) is graded in-process through the exercise's whole test cell,
then every tier (one mutant per exercise in one submission, plus the reference) is autograded by
the real nbgrader and compared with the in-process verdicts. Prints a table per notebook and
every finding, then every catalogued mistake (tests/mistakes/) graded in-process: how many the
visible check rejects, name their cause and carry a cause code. Exit status: 0 all good, 1 findings
(a surviving non-equivalent mutant, a mutant or mistake that only the hidden tests reject, a checker
bug, a stale or wrong review, a notebook that cannot be judged, a disagreement), 2 usage error.
"""
from __future__ import annotations

import argparse
import ast
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.update(TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from mutation import harness  # noqa: E402  (needs tests/ on sys.path)
from answers import mistakes  # noqa: E402
from mutation.inprocess import grade  # noqa: E402

# "hidden only": killed by the hidden tests alone, so the student's own check() said Correct (should be 0).
_COLUMNS = ("exercise", "generated", "judged", "killed", "hidden only", "equivalent", "survived", "checker bugs",
            "named (tape kinds)")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    known = harness.notebooks()
    names = args.notebooks or known
    unknown = [n for n in names if n not in known]
    if unknown:
        _parser().error(f"unknown notebook(s) {', '.join(unknown)}; known: {', '.join(known) or 'none'}")
    equivalents = harness.load_equivalents()
    findings: list[str] = []
    judged: dict[str, dict[str, list[harness.Result]]] = {}
    generated: dict[tuple[str, str], list] = {}

    started = time.perf_counter()
    specs_by_nb, errors = harness.discover(names)
    findings += [f"{nb}: cannot be judged: {error}" for nb, error in errors.items()]
    for nb, specs in specs_by_nb.items():
        judged[nb] = {}
        for spec in specs:
            mutants = generated[(nb, spec.answer_id)] = harness.mutants_of(spec)
            if not mutants:
                findings.append(f"{nb} {spec.answer_id}: no mutant generated")
            problem = _reference_problem(spec, args.timeout)
            if problem:
                findings.append(f"{nb} {spec.answer_id}: {problem}; its mutants are not judged")
                continue
            chosen = harness.sample(mutants, args.per_exercise) if args.per_exercise else mutants
            judged[nb][spec.answer_id] = harness.judge(spec, chosen, equivalents, args.timeout)
            _progress(f"{nb} {spec.answer_id}: {len(chosen)} mutants graded in-process")
    in_process_seconds = time.perf_counter() - started
    findings += harness.stale_equivalents(equivalents, generated)

    started = time.perf_counter()
    disagreements, tiers = _agreement(args, specs_by_nb, judged)
    agreement_seconds = time.perf_counter() - started

    for nb in names:
        if nb in judged:
            _print_table(nb, generated, judged[nb], [t for t in tiers if t.submission.notebook == nb],
                         [d for d in disagreements if d.notebook == nb], args.agreement)
    findings += _print_mistakes(specs_by_nb, args.timeout)
    results = [r for by_ex in judged.values() for rs in by_ex.values() for r in rs]
    if args.verbose:
        print("\nEvery mutant:")
        for r in results:
            print(f"  {r.exercise.notebook} {r.exercise.answer_id} {r.mutant.name:28} {r.status:16} "
                  f"{r.verdict.outcome}/{r.verdict.part or '-'}: {r.verdict.message[:140]}")
    _print_equivalents(results)
    bad = [r for r in results if not r.ok]
    findings += [f"{r.exercise.notebook} {r.exercise.answer_id} {r.mutant.name}: check() says Correct, only the "
                 f"hidden tests fail it ({r.verdict.message[:140]})"
                 for r in results if r.status == "killed" and r.verdict.part == "hidden"]
    findings += [f"disagreement: {d}" for d in disagreements]
    print(f"\nTime: in-process {in_process_seconds:.0f} s ({len(results)} mutants), "
          f"nbgrader agreement {agreement_seconds:.0f} s ({len(tiers)} submissions).")
    if bad:
        print(f"\n{len(bad)} mutant(s) need attention (checker bugs to report to the notebook's owner):\n")
        print("\n\n".join(r.report() for r in bad))
    if findings:
        print(f"\n{len(findings)} other finding(s):")
        print("\n".join(f"  - {f}" for f in findings))
    if bad or findings:
        return 1
    agreed = "" if args.agreement == "none" else ", and nbgrader's grades agree with the instant checks"
    print(f"\nEvery non-equivalent mutant fails its test cell{agreed}.")
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tools/mutants.py", description=__doc__.split("\n\n")[0])
    p.add_argument("notebooks", nargs="*", help="notebook names such as 01_basic_tape (default: all)")
    p.add_argument("--per-exercise", type=int, default=0, metavar="K",
                   help="grade only a deterministic sample of K mutants per exercise (default: all)")
    p.add_argument("--agreement", choices=("all", "one", "none"), default="all",
                   help="nbgrader submissions: the reference and every mutant tier (all), one per notebook, or none")
    p.add_argument("--jobs", type=int, default=2, help="nbgrader autograde processes at a time (default 2)")
    p.add_argument("--timeout", type=float, default=120, help="seconds per in-process test cell (default 120, as grader/nbgrader_config.py)")
    p.add_argument("--keep-course", type=Path, metavar="DIR", help="build the nbgrader course in DIR and keep it")
    p.add_argument("-v", "--verbose", action="store_true", help="list every mutant with its verdict")
    return p


def _reference_problem(spec, timeout) -> str | None:
    for label, code in (("reference", spec.reference), ("unparsed reference", ast.unparse(ast.parse(spec.reference)))):
        verdict = grade(spec, code, label, timeout)
        if not verdict.passed:
            return f"the {label} fails in-process ({verdict.outcome}: {verdict.message[:300]})"
    return None


def _agreement(args, specs_by_nb, judged):
    if args.agreement == "none":
        return [], []
    tiers = []
    for nb, by_ex in judged.items():
        if args.agreement == "one":
            chosen = {a: rs[:1] for a, rs in by_ex.items()}
            tiers += harness.tier_submissions(specs_by_nb[nb], chosen, reference=False, student="mutants-sample")
        else:
            tiers += harness.tier_submissions(specs_by_nb[nb], by_ex, reference=True)
    if not tiers:
        return [], []
    _progress(f"autograding {len(tiers)} submissions with nbgrader, {args.jobs} at a time")
    if args.keep_course:
        return harness.grade_submissions(args.keep_course.resolve(), tiers, args.jobs), tiers
    with tempfile.TemporaryDirectory(prefix="tapelab-mutants-") as tmp:
        return harness.grade_submissions(Path(tmp), tiers, args.jobs), tiers


def _print_table(nb, generated, by_ex, tiers, disagreements, agreement_mode) -> None:
    rows, totals = [], [0] * 7
    named_total = [0, 0]
    for answer_id, results in by_ex.items():
        counts = [len(generated[(nb, answer_id)]), len(results)] + [
            sum(r.status == "killed" for r in results),
            sum(r.status == "killed" and r.verdict.part == "hidden" for r in results),
            sum(r.status == "equivalent" for r in results)] + [
            sum(r.status in ("survived", "false_equivalent") for r in results),
            sum(r.status == "checker_bug" for r in results)]
        named = [r.named for r in results if r.named is not None]
        totals = [t + c for t, c in zip(totals, counts)]
        named_total = [named_total[0] + sum(named), named_total[1] + len(named)]
        rows.append([answer_id, *map(str, counts), _share(sum(named), len(named))])
    rows.append(["total", *map(str, totals), _share(*named_total)])
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(_COLUMNS)]
    print(f"\n{nb}")
    for row in [list(_COLUMNS), *rows]:
        print("  " + "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))))
    if agreement_mode != "none":
        compared = sum(len(t.expected) for t in tiers)
        print(f"  nbgrader agreement: {len(tiers)} submissions, {compared} exercise grades compared, "
              f"{len(disagreements)} disagreements")


def _print_mistakes(specs_by_nb, timeout) -> list[str]:
    """Grade every catalogued mistake (tests/mistakes/) in-process; print per notebook how many the visible
    check rejects (check() agrees with the grade), how many messages name the cause (contain the words the
    catalogue asks for) and carry a cause code. A mistake that passes, or fails only in the hidden part, is
    a finding."""
    print("\nCatalogued mistakes (tests/mistakes/), graded in-process:")
    columns = ("notebook", "mistakes", "rejected by check()", "named", "cause code")
    rows, findings, totals = [], [], [0, 0, 0, 0]
    for nb, specs in specs_by_nb.items():
        catalogue = mistakes(nb)
        verdicts = [(spec, m, grade(spec, m.code, m.name, timeout))
                    for spec in specs for m in catalogue.get(spec.answer_id, [])]
        counts = [len(verdicts), sum(v.outcome == "incorrect" and v.part == "visible" for _, _, v in verdicts),
                  sum(m.says in v.message for _, m, v in verdicts), sum(v.cause is not None for _, _, v in verdicts)]
        totals = [t + c for t, c in zip(totals, counts)]
        rows.append([nb, str(counts[0]), *(_share(c, counts[0]) for c in counts[1:])])
        findings += [f"{nb} {spec.answer_id} mistake {m.name!r}: {v.outcome} in the {v.part or 'whole'} test cell"
                     for spec, m, v in verdicts if v.outcome != "incorrect" or v.part != "visible"]
    rows.append(["total", str(totals[0]), *(_share(c, totals[0]) for c in totals[1:])])
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    for row in [list(columns), *rows]:
        print("  " + "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))))
    return findings


def _share(named: int, total: int) -> str:
    return f"{named}/{total} ({100 * named / total:.0f}%)" if total else "-"


def _print_equivalents(results) -> None:
    reviewed = [r for r in results if r.equivalent is not None]
    if reviewed:
        print("\nReviewed equivalent mutants (tests/mutation/equivalent.toml):")
        for r in reviewed:
            print(f"  {r.exercise.notebook} {r.exercise.answer_id} {r.mutant.name}: {r.equivalent.reason}"
                  f"  [{r.mutant.diff}] -> {r.status}")


def _progress(text: str) -> None:
    print(f"... {text}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
