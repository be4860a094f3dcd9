"""The kernel guard on its own, in a fresh interpreter with an IPython shell (no kernel, no TensorFlow).

The guard's audit hook cannot be removed, so each test runs it in a subprocess: the script installs the
guard as the worker's prologue does, lets "student code" patch a module function and a class method
during a check, and prints what the checker would then see and what the next guard step reports.
"""
import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import json, sys, fractions, textwrap
    from IPython.core.interactiveshell import InteractiveShell
    from tapelab.grading.guard import REPORT_EXPRESSION, Session

    shell = InteractiveShell.instance()
    session = Session(imports=[], sys_path=list(sys.path))
    exec(session.prologue(), shell.user_ns)

    def report():
        exec(session.step(), shell.user_ns)
        text = repr(shell.user_ns[REPORT_EXPRESSION])
        return session.findings({"content": {"user_expressions": {"tapelab_guard": {"data": {"text/plain": text}}}}})

    real_eq, real_dedent = fractions.Fraction.__eq__, textwrap.dedent
    before = report()
    # What a student's function could do while a checker calls it: an ordinary class attribute write
    # (CPython raises no audit event for it) and a module attribute write.
    fractions.Fraction.__eq__ = lambda self, other: True
    textwrap.dedent = lambda text: "patched"
    sys.audit("tapelab.guard.check")  # what Exercise.run sends after each call of student code
    seen = {"class_restored": fractions.Fraction.__eq__ is real_eq,
            "module_restored": textwrap.dedent is real_dedent,
            "half_equals_one": fractions.Fraction(1, 2) == 1}
    print(json.dumps({"before": before, "seen": seen, "after": report()}))
''')


def _run() -> dict:
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_patch_made_during_a_check_is_undone_before_the_checker_compares_and_reported():
    """Are a class method and a module function that student code replaced during a check both restored
    when the check event fires (so the comparison after it sees the real ones), and named by the next step?"""
    outcome = _run()
    assert outcome["before"] == [], outcome
    assert outcome["seen"] == {"class_restored": True, "module_restored": True, "half_equals_one": False}, outcome
    after = " ".join(outcome["after"])
    assert "fractions.Fraction.__eq__ was changed" in after and "textwrap.dedent was replaced" in after, outcome
