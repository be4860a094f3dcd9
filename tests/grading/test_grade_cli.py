"""`tapelab grade` usage, and the grading pieces that need no kernel: names, zips, scans, feedback."""
import io
import re
import subprocess
import sys

import nbformat
import pytest

from grade_fixtures import TINY_HIDDEN, tiny_solution
from tapelab.grading.integrity import channel as guard
from tapelab.grading.handback import page as handback
from tapelab.grading.intake.discover import discover, split_flat_name
from tapelab.grading.progress import Progress
from tapelab.release import nbgrader_env

KNOWN = {"01_basic_tape": "01_basic_tape", "02_watching_tensors": "02_watching_tensors"}


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "tapelab.cli", "grade", *map(str, args)], env=nbgrader_env(),
                          capture_output=True, text=True, timeout=120)


def test_help_documents_the_accepted_names():
    out = _cli("--help").stdout
    for words in ("submitted/<student>/<assignment>/<notebook>.ipynb", "<student>/<notebook>.ipynb",
                  "<student>_<notebook>.ipynb", "jo_ann", "--jobs", "--timeout", "--force", "--report",
                  "--scheduler", "--db", "dask worker", "--roster", "--prefer", "superseded", "tapelab feedback"):
        assert words in out, words


@pytest.mark.parametrize("make,args,words", [
    (lambda tmp: None, ["{tmp}/nowhere"], ["nowhere", "does not exist", "folder of submissions or the LMS zip"]),
    (lambda tmp: (tmp / "in").mkdir(), ["{tmp}/in", "--jobs", "0"], ["--jobs", "at least 1"]),
    (lambda tmp: ((tmp / "in").mkdir(), (tmp / "c").write_text("x")), ["{tmp}/in", "--course", "{tmp}/c"],
     ["is a file", "pass a folder"]),
    (lambda tmp: ((tmp / "in").mkdir(), (tmp / "c").mkdir(), (tmp / "c" / "notes.txt").write_text("x")),
     ["{tmp}/in", "--course", "{tmp}/c"], ["not an nbgrader course", "empty"]),
])
def test_bad_usage_exits_2_naming_input_and_fix(tmp_path, make, args, words):
    make(tmp_path)
    result = _cli(*[a.format(tmp=tmp_path) for a in args])
    assert result.returncode == 2, result
    for word in words:
        assert word in result.stderr, result.stderr


def test_a_bad_roster_or_feedback_course_exits_2_naming_it(tmp_path):
    """Is a roster without an `id` column, or `tapelab feedback` on a folder that is no course, refused (exit 2)
    before anything is touched, naming the file and the fix?"""
    (tmp_path / "in").mkdir()
    (tmp_path / "roster.csv").write_text("name,email\nAna,ana@example.org\n")
    result = _cli(tmp_path / "in", "--course", tmp_path / "course", "--roster", tmp_path / "roster.csv")
    assert result.returncode == 2 and "roster.csv" in result.stderr and "id" in result.stderr, result.stderr
    assert not (tmp_path / "course").exists()
    feedback = subprocess.run([sys.executable, "-m", "tapelab.cli", "feedback", "--course", str(tmp_path / "in")],
                              env=nbgrader_env(), capture_output=True, text=True, timeout=120)
    assert feedback.returncode == 2 and "not a course folder" in feedback.stderr, feedback.stderr


@pytest.mark.parametrize("args,words", [
    (["--scheduler", "localhost:8786"], ["localhost:8786", "not a scheduler address", "tcp://HOST:PORT"]),
    (["--scheduler", "tcp://127.0.0.1:1"], ["cannot reach the Dask scheduler at tcp://127.0.0.1:1", "dask scheduler"]),
    (["--scheduler", "tcp://127.0.0.1:1", "--jobs", "2"], ["--jobs", "--nthreads"]),
    (["--db", "gradebook.db"], ["gradebook.db", "not a database URL", "postgresql+psycopg://"]),
    (["--db", "mysql+pymysql://u:hunter2pw@127.0.0.1/x"], ["needs the Python driver `pymysql`"]),
    (["--db", "postgresql+psycopg://u:hunter2pw@127.0.0.1:1/x"], ["cannot open the gradebook", "u:***@127.0.0.1:1/x",
                                                                  "database server runs"]),
])
def test_scheduler_and_gradebook_errors_name_the_input_and_the_fix(tmp_path, args, words):
    """A bad --scheduler or --db stops before any work, exit 2, naming it and the fix, never the password."""
    (tmp_path / "in").mkdir()
    result = _cli(tmp_path / "in", "--course", tmp_path / "course", *args)
    assert result.returncode == 2, result
    for word in words:
        assert word in result.stderr, result.stderr
    assert "hunter2pw" not in result.stderr + result.stdout
    course = tmp_path / "course"  # untouched: never set up, at most the lock file of the refused run
    assert not course.exists() or [p.name for p in course.iterdir()] == [".tapelab-grade.lock"]


def test_one_run_at_a_time_in_a_course_folder(tmp_path):
    """A second `tapelab grade` in a folder where one is running stops at once and says what to do."""
    import fcntl

    (tmp_path / "in").mkdir()
    (tmp_path / "course").mkdir()
    with open(tmp_path / "course" / ".tapelab-grade.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        result = _cli(tmp_path / "in", "--course", tmp_path / "course")
    assert result.returncode == 2
    assert "another `tapelab grade` is running" in result.stderr and "--db" in result.stderr


def test_missing_path_argument_is_a_usage_error():
    result = _cli()
    assert result.returncode == 2 and "PATH" in result.stderr


@pytest.mark.parametrize("stem,expected", [
    ("alice_01_basic_tape", ("alice", "01_basic_tape")),
    ("jo_ann_01_basic_tape", ("jo_ann", "01_basic_tape")),
    ("st_02_x_02_watching_tensors", ("st_02_x", "02_watching_tensors")),
    ("alice_123_456_01_basic_tape", ("alice_123_456", "01_basic_tape")),
    ("alice_03_unknown", None), ("01_basic_tape", None),
])
def test_flat_names(stem, expected):
    assert split_flat_name(stem, KNOWN) == expected


def test_discover_layouts(tmp_path):
    for rel in ("submitted/a/01_basic_tape/01_basic_tape.ipynb", "b/01_basic_tape.ipynb", "c_01_basic_tape.ipynb",
                "d/02_watching_tensors/01_basic_tape.ipynb", "01_basic_tape.ipynb", "notes.txt",
                ".ipynb_checkpoints/x_01_basic_tape.ipynb", "__MACOSX/y_01_basic_tape.ipynb"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    found = {c.source: c for c in discover(tmp_path, KNOWN, tmp_path / "x")}
    assert set(found) == {"submitted/a/01_basic_tape/01_basic_tape.ipynb", "b/01_basic_tape.ipynb",
                          "c_01_basic_tape.ipynb", "d/02_watching_tensors/01_basic_tape.ipynb", "01_basic_tape.ipynb"}
    assert [(found[s].student, found[s].status) for s in sorted(found)] == [
        (None, "unknown_notebook"), ("b", None), ("c", None), ("d", "unknown_notebook"), ("a", None)]
    assert "no student" in found["01_basic_tape.ipynb"].reason


@pytest.mark.parametrize("code,words", [
    ("ex1_1.check = lambda *a: None", "assigns `ex1_1.check`"),
    ("import tapelab.checker.compare as c\nc.mismatch = None", "assigns `c.mismatch`"),
    ("get_ipython().showtraceback = print", "showtraceback"),
    ("get_ipython().set_custom_exc((Exception,), f)", "set_custom_exc()"),
    ("get_ipython().input_transformers_post.append(f)", "input_transformers_post"),
    ("import sys\nsys.modules['tapelab'] = None", "sys.modules"),
    ("import builtins\nbuiltins.isinstance = f", "builtins"),
    ("import os\nos._exit(0)", "os._exit()"),
    ("import ctypes", "ctypes"),
    ("class A:\n    def __eq__(self, o):\n        return True", "__eq__"),
    ("%timeit f()\nexec('x')", "exec()"),
])
def test_scan_flags_machinery(code, words):
    flags = " ".join(guard.scan([("c1", code)]))
    assert words in flags, flags


def test_scan_leaves_honest_answers_alone():
    honest = "def f(x):\n    with tf.GradientTape() as tape:\n        y = x * x\n    return tape.gradient(y, x)\n"
    assert guard.scan([("c1", honest), ("c2", "def broken(:")]) == []


def test_strip_hidden_removes_regions_and_quoting_outputs():
    nb = tiny_solution()
    test = nb.cells[-1]
    test.outputs = [nbformat.from_dict({"output_type": "error", "ename": "AssertionError", "evalue": "x",
                                        "traceback": ["\x1b[0;32m----> 4\x1b[0m " + TINY_HIDDEN, "AssertionError"]})]
    handback.strip_hidden(nb)
    assert "HIDDEN" not in test.source and TINY_HIDDEN not in test.source and "answer() == 42" in test.source
    assert TINY_HIDDEN not in "".join(test.outputs[0].traceback)


def test_progress_is_a_bar_on_a_terminal_and_lines_elsewhere():
    """Is progress a redrawn bar (count, rate, ETA) on a terminal, one plain line per notebook in a log, and
    is a step said as its own line in both, with no control character from a student id?"""
    class Tty(io.StringIO):
        def isatty(self):
            return True
    stream = Tty()
    bar = Progress(4, stream)
    bar.advance("alice")
    assert "1/4" in stream.getvalue() and "ETA" in stream.getvalue() and "/min" in stream.getvalue()
    bar.say("refreshing")
    assert stream.getvalue().endswith("\ntapelab grade: refreshing\n")
    plain = io.StringIO()
    log = Progress(4, plain)
    log.say("opening")
    log.advance("x\x1b[2J: graded")
    assert plain.getvalue() == "tapelab grade: opening\n[1/4] x\\x1b[2J: graded\n"


def test_local_grading_never_imports_dask():
    """Without --scheduler, Dask is not needed: the CLI, the coordinator and the local pool never import it."""
    code = ("import sys\nimport tapelab.cli, tapelab.grading.run\nfrom tapelab.grading.execution.pools import LocalPool\n"
            "LocalPool(1).close()\nprint(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))")
    result = subprocess.run([sys.executable, "-c", code], env=nbgrader_env(), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_workers_unlike_the_coordinator_are_named_with_the_fix():
    """Does the pre-run check refuse workers with other code, other pins or only some protections, naming each?"""
    from tapelab.grading.execution.cluster import ClusterError, check, describe

    here = describe()
    same = {**here, "host": "grader2"}
    assert check({"tcp://10.0.0.2:40000": same}, here) == here["probe"]
    other_code = {**here, "host": "grader3", "tapelab": "0" * 16}
    other_pin = {**here, "host": "grader4", "versions": {**here["versions"], "keras": "3.0.0"}}
    no_root = {**here, "host": "grader5", "probe": {**here["probe"], "namespaces": "not running as root"}}
    with pytest.raises(ClusterError) as raised:
        check({"tcp://10.0.0.2:1": same, "tcp://10.0.0.3:1": other_code, "tcp://10.0.0.4:1": other_pin,
               "tcp://10.0.0.5:1": no_root}, here)
    message = str(raised.value)
    assert "tcp://10.0.0.3:1 on grader3 runs other tapelab code" in message
    assert "tcp://10.0.0.4:1 on grader4 has keras 3.0.0 (here " in message and "make venv" in message
    assert "only some workers can apply `namespaces`" in message and "tcp://10.0.0.5:1" in message
    assert "grader2" not in message
    all_without = {a: {**here, "probe": {**here["probe"], "rlimits": "`prlimit` not found"}} for a in ("w1", "w2")}
    assert check(all_without, here)["rlimits"] == "`prlimit` not found"  # reported OFF, as a local run would


def test_a_worker_that_cannot_sandbox_refuses_to_execute(monkeypatch):
    """A machine lacking a protection the run asked for runs nothing and says which and why (infra_error)."""
    from tapelab.grading.execution import worker
    from tapelab.grading.execution.sandbox import Sandbox, unavailable

    assert unavailable(Sandbox(isolate=False, rlimits=False)) == []
    monkeypatch.setattr(worker, "unavailable", lambda sandbox: ["namespaces: not running as root"])
    result = worker.execute("not even a notebook", worker.Settings(10, 10, 100, Sandbox(isolate=True, rlimits=True)))
    assert result["nb"] is None
    reason = result["facts"]["infra_error"]
    assert f"worker {worker.worker_name()} cannot apply this run's protections (namespaces: not running as root)" \
        in reason and "as root" in reason


def test_every_status_is_in_the_guide_table_and_the_help():
    """Does the instructor guide's status table, and `tapelab grade --help`, list exactly the statuses the
    grader can give (so neither drifts from statuses.STATUSES)?"""
    from tapelab.grading.statuses import STATUSES
    from tapelab.paths import REPO

    guide = (REPO / "docs" / "instructor-guide.md").read_text()
    table = guide[guide.index("### Statuses and what to do"):guide.index("### Untrusted code")]
    assert re.findall(r"^\| `([a-z_]+)` \|", table, re.M) == list(STATUSES)
    listed = re.search(r"statuses: (.*?) \(see", _cli("--help").stdout, re.S).group(1)
    assert [s.strip() for s in listed.replace("\n", " ").split(",")] == list(STATUSES)
