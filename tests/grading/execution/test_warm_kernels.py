"""Warm kernels (issue 21): forked from a zygote per worker process, isolated before any student code.

The kernels here run in this process's worker code (`worker.execute`), so they share one zygote, as the
kernels of one pool worker do; the equal-scores test grades the fixture class through `tapelab grade`
twice, warm (the default) and with TAPELAB_KERNELS=cold.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from grade_fixtures import BASIC, TINY, cell_scores, fill, load_report, make_course, reference, tiny, write
from course import round_trip_submissions
from tapelab.grading.course import open_course
from tapelab.grading.execution import warm, worker, zygote as zygote_module
from tapelab.grading.execution.kernels import kernel_env
from tapelab.grading.execution.sandbox import UID_BASE, UID_SLOTS, Sandbox, SandboxError, Slot, protections
from tapelab.paths import REPO
from tapelab.release import nbgrader_env

pytestmark = pytest.mark.heavy(105)  # seconds, about: scheduled first (tests/conftest.py)

SECRET = "tapelab-warm-test-secret"
WAIT = 6  # seconds each of two concurrent kernels watches for the other

PROBE = r'''
import json, os, resource, socket, sys
context = sys.modules.get("tensorflow.python.eager.context")
def attempt(action):
    try:
        return f"OPEN {action()!r:.40}"
    except Exception as error:
        return f"BLOCKED {type(error).__name__}"
def link(path):
    try:
        return os.readlink(path)
    except OSError:  # the folder listing's own descriptor, closed since
        return ""
facts = {
    "fresh_tf": None if context is None else context._context is None,
    "env": dict(os.environ), "path": sys.path, "argv": sys.argv, "cwd": os.getcwd(), "umask": os.umask(0o022),
    "ids": [os.getresuid(), os.getresgid(), os.getgroups()], "pid": os.getpid(), "ppid": os.getppid(),
    "session": [os.getpgid(0), os.getsid(0)], "procs": sorted(p for p in os.listdir("/proc") if p.isdigit()),
    "ns": {n: os.readlink(f"/proc/self/ns/{n}") for n in ("mnt", "net", "ipc", "pid", "uts")},
    "status": sorted(l.strip() for l in open("/proc/self/status")
                     if l.split(":")[0] in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs",
                                            "Seccomp", "Groups")),
    "limits": {n: resource.getrlimit(getattr(resource, f"RLIMIT_{n}")) for n in ("AS", "CPU", "FSIZE", "NPROC", "CORE")},
    "mounts": [(l.split()[4], l.split(" - ")[1].split()[0]) for l in open("/proc/self/mountinfo")],
    "stdin": os.readlink("/proc/self/fd/0").split(":")[0],
    "fds": sorted({link(f"/proc/self/fd/{fd}").split(":[")[0] for fd in os.listdir("/proc/self/fd")} - {""}),
    "hidden": attempt(lambda: os.listdir(HIDDEN)), "hidden_file": attempt(lambda: open(SECRET_FILE).read()),
    "tcp": attempt(lambda: socket.create_connection(("127.0.0.1", PORT), timeout=3)),
    "write_packages": attempt(lambda: open(os.path.join(sys.prefix, "tapelab-warm-evil"), "w")),
}
print("FACTS " + json.dumps(facts))
'''

TWIN = r'''
import json, os, random, sys, time
import numpy
context = sys.modules["tensorflow.python.eager.context"]
fresh = context._context is None
marked_before = hasattr(json, "tapelab_mark")
json.tapelab_mark = "{me}"
numbers = [random.random(), float(numpy.random.random())]
import gc
import tensorflow as tf
mine = tf.Variable({value}, name="{me}_variable")
for place in (os.getcwd(), "/tmp", "/dev/shm"):
    open(os.path.join(place, "tapelab-{me}"), "w").write("{me}")
start, seen, procs = time.time(), [], set()
while time.time() - start < {wait}:
    procs |= {{p for p in os.listdir("/proc") if p.isdigit()}}
    seen += [p for p in (os.getcwd(), "/tmp", "/dev/shm") if os.path.exists(os.path.join(p, "tapelab-{other}"))]
    time.sleep(0.3)
variables = [v.name for v in gc.get_objects() if isinstance(v, tf.Variable)]
scratches = sorted({{l.split()[4] for l in open("/proc/self/mountinfo") if "/tapelab-sandbox/" in l.split()[4]}})
print("TWIN " + json.dumps({{"fresh": fresh, "marked_before": marked_before, "numbers": numbers, "seen": seen,
                             "procs": sorted(procs), "variables": variables, "start": start, "end": time.time(),
                             "cwd": os.getcwd(), "mark": json.tapelab_mark, "scratches": scratches}}))
'''


def _notebook(*sources: str) -> str:
    return nbformat.writes(new_notebook(cells=[new_code_cell(s) for s in sources]))


def _printed(result: dict, tag: str) -> dict:
    nb = nbformat.reads(result["nb"], as_version=4)
    text = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    match = re.search(rf"^{tag} (.*)$", text, re.M)
    assert match, (result["facts"], text[-3000:])
    return json.loads(match.group(1))


def _settings(kernels: str, hide: tuple[str, ...] = (), cell_timeout: int = 60) -> worker.Settings:
    return worker.Settings(cell_timeout, 120, 10**7, Sandbox(isolate=True, rlimits=True, hide=hide, kernels=kernels))


@pytest.fixture(scope="module")
def zygote():
    """This process's zygote, started while the grader's environment holds a secret."""
    warm.stop()
    os.environ["TAPELAB_TEST_SECRET"] = SECRET
    try:
        yield warm.current()
    finally:
        del os.environ["TAPELAB_TEST_SECRET"]
        warm.stop()


@pytest.fixture(scope="module")
def probes(zygote, tmp_path_factory):
    """The same probe in a warm and a cold kernel, with a hidden folder holding a file."""
    (REPO / "test-output").mkdir(exist_ok=True)  # not in a temp folder: those are private to a kernel anyway
    hidden = Path(tempfile.mkdtemp(prefix="hidden-", dir=REPO / "test-output"))
    (hidden / "answers.txt").write_text("the instructor's")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    code = (PROBE.replace("SECRET_FILE", repr(str(hidden / "answers.txt"))).replace("HIDDEN", repr(str(hidden)))
            .replace("PORT", str(listener.getsockname()[1])))
    bystander = Slot(Sandbox(isolate=True, rlimits=True))  # another kernel's scratch tmpfs, on the host
    try:
        results = {kind: worker.execute(_notebook(code), _settings(kind, hide=(str(hidden),)))
                   for kind in ("warm", "cold")}
    finally:
        bystander.release()
        listener.close()
        shutil.rmtree(hidden)
    for kind, result in results.items():
        assert result["facts"].get("kernel") == kind, result["facts"]
    return {kind: _printed(result, "FACTS") for kind, result in results.items()}


def _same_shape(facts: dict) -> dict:
    """What must be equal between kernels: the kernel's own scratch folder and the slot's uids normalised
    (the mount tables hold no other kernel's scratch folder: see the twins)."""
    text = json.dumps(facts).replace(facts["cwd"], "SCRATCH")
    return {k: v for k, v in json.loads(text).items() if k not in ("ids", "ns", "fresh_tf")}


def test_a_warm_kernel_is_isolated_exactly_as_a_cold_one(probes):
    """Does a warm kernel see the same environment, paths, limits, capabilities, mounts, descriptors and
    hidden folders as a cold one, and is each in new mount, network, IPC and PID namespaces as the slot's
    uid, with no descriptor on the grader's terminal or files?"""
    assert _same_shape(probes["warm"]) == _same_shape(probes["cold"])
    for facts in probes.values():  # another kernel's scratch folder was mounted on the host meanwhile
        assert {p for p, _ in facts["mounts"] if "/tapelab-sandbox/" in p} == {facts["cwd"]}, facts["mounts"]
    here = {n: os.readlink(f"/proc/self/ns/{n}") for n in ("mnt", "net", "ipc", "pid", "uts")}
    for facts in probes.values():
        assert {n for n in here if facts["ns"][n] != here[n]} == {"mnt", "net", "ipc", "pid"}, facts["ns"]
        (uid, *_), (gid, *_), groups = facts["ids"]
        assert UID_BASE <= uid < UID_BASE + UID_SLOTS and facts["ids"] == [[uid] * 3, [uid] * 3, []]
        assert facts["pid"] == 1 and facts["procs"] == ["1"]
        assert facts["hidden"].startswith("BLOCKED") and facts["hidden_file"].startswith("BLOCKED")
        assert facts["tcp"].startswith("BLOCKED") and facts["write_packages"].startswith("BLOCKED")
        assert "TAPELAB_TEST_SECRET" not in facts["env"]
        # no descriptor on a file or terminal of the grader: fds 1 and 2 on /dev/null, not the worker's own
        assert "/dev/null" in facts["fds"] and set(facts["fds"]) <= {"/dev/null", "anon_inode", "pipe", "socket"}


def test_a_warm_kernel_starts_with_a_fresh_tensorflow_context(probes):
    """Is TensorFlow imported in a warm kernel before its first cell, yet its eager context not created
    (nothing ran an op in the zygote)?"""
    assert probes["warm"]["fresh_tf"] is True
    assert probes["cold"]["fresh_tf"] is None  # a cold kernel imports TensorFlow when the notebook does


@pytest.fixture(scope="module")
def twins(zygote):
    """Two kernels of one zygote at the same time, each marking its module globals, files and TensorFlow."""
    results = {}

    def run(me, other, value):
        code = TWIN.format(me=me, other=other, value=value, wait=WAIT)
        results[me] = worker.execute(_notebook(code), _settings("warm"))

    threads = [threading.Thread(target=run, args=args) for args in (("ann", "bob", 41.0), ("bob", "ann", 7.0))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for result in results.values():
        assert result["facts"].get("kernel") == "warm", result["facts"]
    return {me: _printed(result, "TWIN") for me, result in results.items()}


def test_two_children_of_one_zygote_cannot_see_each_others_state(twins):
    """While two warm kernels run at once, does either see the other's module global, files (its scratch
    folder, /tmp, /dev/shm), processes or TensorFlow variables, or hold the other's scratch tmpfs in its
    mount namespace (even covered), and does each start with a fresh eager context?"""
    ann, bob = twins["ann"], twins["bob"]
    assert ann["start"] < bob["end"] and bob["start"] < ann["end"], "the kernels did not overlap"
    assert ann["cwd"] != bob["cwd"]
    for me, facts in twins.items():
        assert facts["fresh"] and not facts["marked_before"] and facts["mark"] == me
        assert facts["seen"] == [] and facts["procs"] == ["1"]
        assert facts["variables"] == [f"{me}_variable:0"], facts["variables"]
        assert facts["scratches"] == [facts["cwd"]], facts["scratches"]


def test_each_child_draws_its_own_random_numbers(twins, zygote):
    """Do two children get different Python and NumPy random numbers, and neither the zygote's own next ones
    (which an unseeded fork would repeat)?"""
    ann, bob = twins["ann"]["numbers"], twins["bob"]["numbers"]
    assert ann[0] != bob[0] and ann[1] != bob[1]
    for numbers in (ann, bob):
        assert numbers[0] not in zygote.facts["next_random"] and numbers[1] not in zygote.facts["next_numpy"]


def test_the_zygote_holds_no_course_files_or_secrets(zygote):
    """Does the zygote hold only /dev/null and its control socket open, map no file outside the Python
    environment, run one thread, and keep an environment with none of the grader's variables?"""
    pid = zygote.process.pid
    opened = sorted(os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd"))
    assert opened[:3] == ["/dev/null"] * 3 and len(opened) == 4 and opened[3].startswith("socket:"), opened
    environ = dict(e.split("=", 1) for e in Path(f"/proc/{pid}/environ").read_text().split("\0") if e)
    assert set(environ) == set(kernel_env(Path(zygote.home), sys.executable)) | {"OPENBLAS_NUM_THREADS",
                                                                                          "MPLBACKEND"}
    assert SECRET not in Path(f"/proc/{pid}/environ").read_text()
    mapped = {line.split()[-1] for line in Path(f"/proc/{pid}/maps").read_text().splitlines() if "/" in line}
    roots = (sys.prefix, sys.base_prefix, os.path.realpath(sys.prefix), "/usr/lib", "/lib")
    assert [m for m in mapped if not m.startswith(roots)] == []
    assert len(os.listdir(f"/proc/{pid}/task")) == 1 and os.readlink(f"/proc/{pid}/cwd") == "/"


LIGHT_PROBE = """
import sys
preloaded = "tensorflow" in sys.modules
import tensorflow as tf
print("LIGHT " + __import__("json").dumps({"preloaded": preloaded, "sum": float(tf.constant(2.0) + 1.0)}))
"""


def test_a_notebook_without_tensorflow_forks_from_a_zygote_that_never_imported_it(zygote):
    """Does a notebook whose instructor's version imports no TensorFlow, Keras or tapelab get a warm kernel
    from a second, light zygote (NumPy and ipykernel preloaded, not TensorFlow), one that keeps every
    protection of the first (one thread, no open file) and in which the student can still import TensorFlow
    and run an op?"""
    light = worker.Settings(60, 120, 10**7, Sandbox(isolate=True, rlimits=True, kernels="warm"),
                            packages=frozenset({"time", "numpy"}))
    result = worker.execute(_notebook(LIGHT_PROBE), light)
    assert result["facts"]["kernel"] == "warm", result["facts"]
    assert _printed(result, "LIGHT") == {"preloaded": False, "sum": 3.0}
    second = warm.current(sys.executable, zygote_module.LIGHT)
    assert second is not zygote and second.facts["preload"] == list(zygote_module.LIGHT)
    assert second.facts["modules"] < zygote.facts["modules"] / 3, (second.facts["modules"], zygote.facts["modules"])
    pid = second.process.pid
    assert len(os.listdir(f"/proc/{pid}/task")) == 1 and len(os.listdir(f"/proc/{pid}/fd")) == 4
    assert "tensorflow" not in Path(f"/proc/{pid}/maps").read_text()


def test_what_a_zygote_preloads_follows_the_instructors_imports(tmp_path):
    """Does the zygote preload TensorFlow for a notebook whose instructor's version imports TensorFlow, Keras
    or tapelab (or whose imports are not known), and only NumPy and ipykernel otherwise, as read from the
    course's source notebooks (01 imports tapelab, 09_fixture only `time`)?"""
    course = open_course(make_course(tmp_path))
    try:
        packages = {name: course.imported_packages(name, name) for name in (BASIC, TINY)}
    finally:
        course.close()
    assert "tapelab" in packages[BASIC] and packages[TINY] == {"time"}
    assert zygote_module.preload_for(packages[BASIC]) == zygote_module.PRELOAD
    assert zygote_module.preload_for(packages[TINY]) == zygote_module.LIGHT
    assert zygote_module.preload_for(None) == zygote_module.PRELOAD
    assert zygote_module.preload_for(frozenset({"keras"})) == zygote_module.PRELOAD
    assert "tensorflow" not in zygote_module.LIGHT and set(zygote_module.LIGHT) < set(zygote_module.PRELOAD)


KERNEL_INIT = """
import importlib, json, sys
for module in sys.argv[1].split(","):
    importlib.import_module(module)
before = set(sys.modules)
from ipykernel.kernelapp import IPKernelApp
IPKernelApp.instance().initialize(["-f", sys.argv[2]])
print(json.dumps(sorted(set(sys.modules) - before)), file=sys.__stderr__)
"""


def test_the_zygote_preloads_what_a_kernels_start_imports(tmp_path):
    """After the light preload, does ipykernel's start (IPKernelApp.initialize, as a forked kernel runs it)
    import none of the debugger, history, pdb, pydoc or psutil packages, and far fewer modules than without?"""
    def new_modules(preload):
        run = subprocess.run([sys.executable, "-c", KERNEL_INIT, ",".join(preload), str(tmp_path / "k.json")],
                             capture_output=True, text=True, timeout=120, cwd=tmp_path)
        return set(json.loads(run.stderr.strip().splitlines()[-1]))
    bare, preloaded = new_modules(("numpy", "ipykernel.ipkernel")), new_modules(zygote_module.LIGHT)
    heavy = {"debugpy", "pydevd", "sqlite3", "pdb", "pydoc", "psutil"}
    assert heavy <= {m.split(".")[0] for m in bare}, sorted(bare)
    assert not heavy & {m.split(".")[0] for m in preloaded}, sorted(preloaded)
    assert len(preloaded) < len(bare) / 3, (len(preloaded), len(bare))


ORPHAN = """
import os, signal
from tapelab.grading.execution import warm
zygote = warm.current()
print(zygote.process.pid, zygote.home, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_zygote_ends_with_its_worker_and_removes_its_home():
    """When the worker process that started a zygote is killed (no clean-up of its own), does the zygote end
    and remove its home folder?"""
    killed = subprocess.run([sys.executable, "-c", ORPHAN], capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr[-2000:]
    pid, home = killed.stdout.split()
    for _ in range(100):
        if not _live(pid) and not Path(home).exists():
            break
        time.sleep(0.1)
    assert not _live(pid) and not Path(home).exists()


def test_the_second_thread_after_importing_tensorflow_is_openblas():
    """Is the thread beside the main one, after the zygote's imports, OpenBLAS's pool that NumPy's import
    starts (one per CPU), gone with OPENBLAS_NUM_THREADS=1 (as the zygote imports)?"""
    count = "import numpy, os; print(len(os.listdir('/proc/self/task')))"
    threads = {name: int(subprocess.run([sys.executable, "-c", count], env=env, capture_output=True, text=True,
                                        check=True).stdout) for name, env in
               (("default", {"PATH": "/usr/bin:/bin"}), ("one", {"PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1"}))}
    assert threads == {"default": min(len(os.sched_getaffinity(0)), 64), "one": 1}


def test_a_kernel_that_ignores_the_interrupt_is_killed_with_its_namespace(zygote):
    """Is a warm kernel that ignores the interrupt past its cell timeout killed (its whole process group, so
    its PID namespace), reaped by the zygote, and its uid left with no process?"""
    stall = "import os, signal, subprocess, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n" \
            "subprocess.Popen(['sleep', '600'])\nprint('NS', os.readlink('/proc/self/ns/pid'), flush=True)\n" \
            "time.sleep(600)"
    result = worker.execute(_notebook(stall), _settings("warm", cell_timeout=3))
    facts = result["facts"]
    assert facts["kernel"] == "warm" and facts["timed_out"] and any("ignored the interrupt" in f for f in facts["flags"])
    children = Path(f"/proc/{zygote.process.pid}/task/{zygote.process.pid}/children").read_text().split()
    assert children == []
    namespace = re.search(r"NS (\S+)", _text(result)).group(1)
    assert [p for p in filter(str.isdigit, os.listdir("/proc")) if _running_in(p) == namespace] == []


def _live(pid: str) -> bool:
    """Whether `pid` runs (a zombie has ended: it waits for init to reap it, cold or warm)."""
    try:
        return not re.search(r"^State:\s+Z", Path(f"/proc/{pid}/status").read_text(), re.M)
    except OSError:  # gone
        return False


def _running_in(pid: str) -> str:
    """The PID namespace of a live process, "" for one that ended."""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid") if _live(pid) else ""
    except OSError:  # it ended meanwhile
        return ""


def test_a_zygote_that_fails_leaves_the_kernel_to_start_cold(monkeypatch, capfd):
    """When the zygote cannot fork a kernel, does that notebook run cold, with the same sandbox, and say so
    (in its facts and on stderr)?"""
    def refuse(*args):
        raise warm.ZygoteError("the zygote refused to fork: it runs 2 OS threads")

    monkeypatch.setattr(warm, "current", refuse)
    result = worker.execute(_notebook("import os\nprint('UID', os.getuid(), os.getpid())"), _settings("warm"))
    assert result["facts"]["kernel"] == "cold" and "refused to fork" in result["facts"]["warm_failed"]
    assert result["facts"]["attempts"] == 2
    uid, pid = re.search(r"UID (\d+) (\d+)", _text(result)).groups()
    assert UID_BASE <= int(uid) < UID_BASE + UID_SLOTS and pid == "1"
    assert "a warm kernel did not start (the zygote refused to fork" in capfd.readouterr().err


def _text(result: dict) -> str:
    return "".join(o.get("text", "") for c in nbformat.reads(result["nb"], as_version=4).cells for o in c.outputs)


def test_the_report_says_which_path_starts_the_kernels(monkeypatch):
    """Does `protections` name the warm path only when it is asked for, possible here and every protection is
    on, and the reason for the cold path otherwise; is a bad TAPELAB_KERNELS refused?"""
    able = {"namespaces": "", "user": "", "rlimits": "", "warm": ""}
    start = lambda sandbox, why=able: protections(sandbox, why)["kernel start"]  # noqa: E731
    assert start(Sandbox(True, True, kernels="warm"))["path"] == "warm"
    assert "TAPELAB_KERNELS=cold" in start(Sandbox(True, True, kernels="cold"))["how"]
    assert start(Sandbox(False, True, kernels="warm"))["path"] == "cold"
    assert "no pidfd" in start(Sandbox(True, True, kernels="warm"), {**able, "warm": "no pidfd_open"})["how"]
    monkeypatch.setenv("TAPELAB_KERNELS", "tepid")
    with pytest.raises(SandboxError, match="TAPELAB_KERNELS='tepid'"):
        Sandbox(True, True)
    monkeypatch.setenv("TAPELAB_KERNELS", "cold")
    assert Sandbox(True, True).warm is False


def test_both_paths_take_the_rlimits_from_one_table():
    """Does the cold command line carry exactly the limits the warm kernel sets (Limits.rlimits)?"""
    slot = Slot(Sandbox(True, True))
    try:
        argv = slot.argv(sys.executable)
    finally:
        slot.release()
    start = argv.index("prlimit") + 1
    assert argv[start:argv.index("--", start)] == [f"--{n.lower()}={v}" for n, v in Sandbox(True, True).limits.rlimits().items()]


# -- equal scores on the fixture class ---------------------------------------------------------------------
def _strip_log_settings(nb) -> None:
    setup = next(c for c in nb.cells if c.get("id") == "setup")
    setup.source = "\n".join(line for line in setup.source.splitlines() if "os.environ[" not in line)


@pytest.fixture(scope="module")
def both_ways(tmp_path_factory):
    """The fixture class (the round-trip set of 01_basic_tape, a kernel that dies mid-run, 09_fixture right and
    wrong) graded by `tapelab grade` warm and cold, each in its own copy of one course."""
    root = tmp_path_factory.mktemp("warm-cold")
    course = make_course(root)
    inbox = root / "inbox"
    for sub in round_trip_submissions(BASIC):
        edit = _strip_log_settings if sub.strip_log_settings else None
        write(fill(course, BASIC, sub.answers, edit=edit), inbox / sub.student / f"{BASIC}.ipynb")
    write(fill(course, BASIC, {**reference(), "ex1_3_answer": "import os\nos._exit(1)"}), inbox / "dies" / f"{BASIC}.ipynb")
    write(fill(course, TINY, tiny()), inbox / "reference" / f"{TINY}.ipynb")
    write(fill(course, TINY, tiny("41")), inbox / "wrong" / f"{TINY}.ipynb")
    graded = {}
    for kind in ("warm", "cold"):
        target = Path(shutil.copytree(course, root / kind))
        env = {**nbgrader_env(), "TAPELAB_KERNELS": kind}
        result = subprocess.run([sys.executable, "-m", "tapelab.cli", "grade", str(inbox), "--course", str(target),
                                 "--jobs", "2", "--timeout", "120"], env=env, capture_output=True, text=True,
                                timeout=900)
        assert result.returncode == 0, result.stderr[-3000:]
        graded[kind] = (target, load_report(target / "report.json"), result.stderr)
    return graded


def test_scores_warm_equal_cold_on_every_graded_cell(both_ways):
    """Does every graded cell of the fixture class score the same warm as cold, with the same statuses, and
    does each report say which path ran, in its protections and in every executed submission's entry?"""
    (warm_course, warm_report, warm_err), (cold_course, cold_report, _) = both_ways["warm"], both_ways["cold"]
    assert warm_report["protections"]["kernel start"]["path"] == "warm", warm_report["protections"]
    assert cold_report["protections"]["kernel start"]["path"] == "cold"
    assert "a warm kernel did not start" not in warm_err
    for kind, (_, report, _) in both_ways.items():  # and each executed submission's entry, which ran it
        executed = [e for e in report["submissions"] if e["worker"] is not None and e["status"] != "infra_error"]
        assert executed and {e["kernel"] for e in executed} == {kind}, executed
    statuses = {kind: sorted((e["student"], e["notebook"], e["status"], e["score"]) for e in report["submissions"])
                for kind, (_, report, _) in both_ways.items()}
    assert statuses["warm"] == statuses["cold"]
    compared = 0
    for student, notebook, status, _ in statuses["warm"]:
        if status == "missing_notebook":
            continue
        warm_cells, cold_cells = cell_scores(warm_course, student, notebook), cell_scores(cold_course, student, notebook)
        assert warm_cells == cold_cells, (student, notebook)
        compared += len(warm_cells)
    assert compared >= 20 and any(s[2] == "kernel_died" for s in statuses["warm"])
