"""The kernel guard on its own, in a fresh interpreter with an IPython shell (no kernel, no TensorFlow).

The guard's audit hook cannot be removed, so each test runs it in a subprocess: the script installs the
guard as the worker's prologue does, lets "student code" patch module functions and class methods
during checks, and prints what the checker would then see and what the next guard step reports. Each
runs three ways: as a cold kernel's prologue (the guard snapshots everything), after a zygote's snapshot
was handed over on `sys` (a warm kernel's), and on a Python whose dicts have no version tag to read (the
guard's reader then finds none: every scan compares every namespace).
"""
import json
import subprocess
import sys
import textwrap

import pytest

SETUP = textwrap.dedent('''
    import json, sys, fractions, textwrap
    from IPython.core.interactiveshell import InteractiveShell
    from tapelab.grading.integrity import channel
    from tapelab.grading.integrity.channel import REPORT_EXPRESSION, Session
    WAY

    shell = InteractiveShell.instance()
    session = Session(imports=[], sys_path=list(sys.path))
    exec(session.prologue(), shell.user_ns)

    def report(fresh=True):
        exec(session.step(fresh), shell.user_ns)
        text = repr(shell.user_ns[REPORT_EXPRESSION])
        return session.findings({"content": {"user_expressions": {"tapelab_guard": {"data": {"text/plain": text}}}}})
''')

PATCHES = SETUP + textwrap.dedent('''
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

# A class whose data changed (which the guard leaves alone) is still watched: a method replaced after that,
# or a method deleted while another is added (the class keeps its number of names), is found.
SEQUENCE = SETUP + textwrap.dedent('''
    real_eq, real_limit = fractions.Fraction.__eq__, fractions.Fraction.limit_denominator
    seen = {"start": report()}
    fractions.Fraction.tapelab_data = 1
    sys.audit("tapelab.guard.check")
    seen["data"] = [report(), fractions.Fraction.tapelab_data]
    fractions.Fraction.__eq__ = lambda self, other: True
    sys.audit("tapelab.guard.check")
    seen["patch"] = [fractions.Fraction.__eq__ is real_eq, report()]
    del fractions.Fraction.limit_denominator
    fractions.Fraction.cheat = lambda self: 0
    sys.audit("tapelab.guard.check")
    seen["swap"] = [fractions.Fraction.limit_denominator is real_limit, hasattr(fractions.Fraction, "cheat"), report()]
    print(json.dumps(seen))
''')

# The same for a module: its data may change (the next scans then compare against it), its functions may not.
MODULE_SEQUENCE = SETUP + textwrap.dedent('''
    real_dedent, real_indent = textwrap.dedent, textwrap.indent
    seen = {"start": report()}
    textwrap.tapelab_data = 1
    sys.audit("tapelab.guard.check")
    seen["data"] = [report(), textwrap.tapelab_data]
    textwrap.dedent = lambda text: "patched"
    sys.audit("tapelab.guard.check")
    seen["patch"] = [textwrap.dedent is real_dedent, report()]
    del textwrap.indent
    textwrap.cheat = lambda text: text
    sys.audit("tapelab.guard.check")
    seen["swap"] = [textwrap.indent is real_indent, report()]
    print(json.dumps(seen))
''')

# A step that no check follows (fresh=False) restores tapelab's own names and reports them, without the
# re-import a step before a check makes; a request whose mode was changed is refused.
MODES = SETUP + textwrap.dedent('''
    import tapelab.grading.integrity.scan as scan_module
    real_scan = scan_module.scan
    scan_module.scan = lambda *args: []
    seen = {"restore": report(fresh=False)}
    seen["kept"] = sys.modules[scan_module.__name__] is scan_module and scan_module.scan is real_scan
    seen["fresh"] = report()
    import tapelab.grading.integrity.scan as scan_again  # no trusted imports here: the next import reads the disk
    seen["reimported"] = scan_again is not scan_module and scan_again.scan is not real_scan
    forged = session.step(True).replace("'fresh')", "'restore')")
    exec(forged, shell.user_ns)
    text = repr(shell.user_ns[REPORT_EXPRESSION])
    seen["forged"] = session.findings({"content": {"user_expressions": {"tapelab_guard": {"data": {"text/plain": text}}}}})
    print(json.dumps(seen))
''')


# What each way does before the shell starts and the prologue runs (a zygote snapshots before ipykernel starts).
WAYS = {
    "cold": "",
    "handed over": "from tapelab.grading.integrity import in_kernel\n"
                   "vars(sys)[in_kernel.HANDOVER] = in_kernel.snapshot()",
    "no version tags": "channel._SOURCE = channel._SOURCE.replace('VERSION_AT = 24', 'VERSION_AT = 8')",  # a type
}

HANDOVER = SETUP + textwrap.dedent('''
    real_dedent = textwrap.dedent
    seen = {"on sys": hasattr(sys, "_tapelab_guard_snapshot"), "start": report()}
    textwrap.dedent = lambda text: "patched"
    sys.audit("tapelab.guard.check")
    seen["patch"] = [textwrap.dedent is real_dedent, report()]
    print(json.dumps(seen))
''')

ways = pytest.mark.parametrize("way", list(WAYS))


def _run(script: str, way: str = "cold") -> dict:
    script = script.replace("WAY", WAYS[way], 1)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@ways
def test_a_patch_made_during_a_check_is_undone_before_the_checker_compares_and_reported(way):
    """Are a class method and a module function that student code replaced during a check both restored
    when the check event fires (so the comparison after it sees the real ones), and named by the next step?"""
    outcome = _run(PATCHES, way)
    assert outcome["before"] == [], outcome
    assert outcome["seen"] == {"class_restored": True, "module_restored": True, "half_equals_one": False}, outcome
    after = " ".join(outcome["after"])
    assert "fractions.Fraction.__eq__ was changed" in after and "textwrap.dedent was replaced" in after, outcome


@ways
def test_a_class_whose_data_changed_is_still_watched_for_patches(way):
    """Is a data attribute written on a class left alone and unreported, and are a method replaced on that
    class afterwards, and a method deleted while another is added, still undone and named?"""
    seen = _run(SEQUENCE, way)
    assert seen["start"] == [] and seen["data"] == [[], 1], seen
    assert seen["patch"] == [True, ["fractions.Fraction.__eq__ was changed"]], seen
    restored, cheat, found = seen["swap"]
    assert restored and not cheat, seen
    assert sorted(found) == ["fractions.Fraction.cheat was added", "fractions.Fraction.limit_denominator was changed"]


@ways
def test_a_module_whose_data_changed_is_still_watched_for_patches(way):
    """Is a data attribute written on a module left alone and unreported, and are a function replaced in that
    module afterwards, and a function deleted while another name is added (the module keeps its number of
    names), still undone and named?"""
    seen = _run(MODULE_SEQUENCE, way)
    assert seen["start"] == [] and seen["data"] == [[], 1], seen
    assert seen["patch"] == [True, ["textwrap.dedent was replaced"]], seen
    assert seen["swap"] == [True, ["textwrap.indent was deleted"]], seen


@ways
def test_a_step_no_check_follows_restores_tapelab_without_reimporting_it(way):
    """Does a restore-only step undo and name a patch of tapelab's own function while keeping its modules,
    does the next step (before a check) import them afresh, and is a request whose mode was changed refused?"""
    from tapelab.grading.integrity.channel import _MISSING

    seen = _run(MODES, way)
    assert seen["restore"] == ["tapelab.grading.integrity.scan.scan was replaced"], seen
    assert seen["kept"] and seen["fresh"] == [] and seen["reimported"], seen
    assert seen["forged"] == [_MISSING], seen


def test_a_kernel_takes_the_zygotes_snapshot_off_sys_and_watches_what_it_holds():
    """After the prologue, is the snapshot a zygote handed over gone from `sys` (where the notebook could reach
    it), and is a patch of a module that snapshot holds (textwrap, loaded before it) still undone and named?"""
    seen = _run(HANDOVER, "handed over")
    assert seen["on sys"] is False and seen["start"] == [], seen
    assert seen["patch"] == [True, ["textwrap.dedent was replaced"]], seen


def test_the_reader_of_version_tags_reads_them_and_without_them_never_reads_the_same_twice():
    """Does the guard's reader give a dict a new version at each write and the same one without, and where it finds
    no tag (a wrong place to read), does it fall back to values that differ at every read?"""
    from tapelab.grading.integrity import channel

    for offset, tags in ((24, True), (8, False)):
        namespace: dict = {}
        exec(channel._SOURCE.replace("VERSION_AT = 24", f"VERSION_AT = {offset}"), namespace)
        read, probe = namespace["namespace_versions"](), {"x": 1}
        first, second = read(id(probe)), read(id(probe))
        probe["x"] = 2
        assert (first == second and read(id(probe)) != second) if tags else len({first, second, read(id(probe))}) == 3
