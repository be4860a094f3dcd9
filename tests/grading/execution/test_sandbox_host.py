"""The sandbox leaves the host as it found it (issue 13, class 5), grading works from a checkout in a
folder only its owner may enter (class 10), and the local pool turns the failure of one execution
into `infra_error` for that submission alone (class 4, pool layer).

Grading runs use the TF-free 09_fixture notebook; the disk bounds are proved through the real worker
with small limits, so that filling them costs a few MB.
"""
import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from grade_fixtures import TINY, by_student, fill, load_report, make_course, outputs_text, run_grade, tiny, write
from tapelab.grading.execution.pools import LocalPool
from tapelab.grading.execution.sandbox import SCRATCH_ROOT, TEMP_DIRS, UID_BASE, UID_SLOTS, Limits, Sandbox, Slot
from tapelab.grading.execution.worker import Settings, execute
from tapelab.paths import REPO
from tapelab.release import nbgrader_env

pytestmark = pytest.mark.heavy(80)  # seconds, about: scheduled first (tests/conftest.py)

WAIT = 12  # seconds each kernel looks for the other's files


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return make_course(tmp_path_factory.mktemp("host"))


# -- nothing shared, nothing left ------------------------------------------------------------------------
SHARE = '''
import json, os, time
places = {places!r}
for place in places + [os.getcwd()]:
    try:
        open(os.path.join(place, "{tag}-{me}"), "w").write("{me}")
    except OSError:
        pass
start, seen = time.time(), []
while time.time() - start < {wait} and not seen:
    time.sleep(0.5)
    seen = [p for p in places if os.path.exists(os.path.join(p, "{tag}-{other}"))]
print("SHARE " + json.dumps({{"seen": seen, "start": start, "end": time.time(), "cwd": os.getcwd()}}))
'''


def _writable_by_all() -> list[str]:
    """The temp folders and every folder of the root file system that any user may write."""
    found = subprocess.run(["find", "/", "-xdev", "-type", "d", "-perm", "-0002"], capture_output=True, text=True)
    return sorted(set(TEMP_DIRS) | set(found.stdout.splitlines()))


@pytest.fixture(scope="module")
def shared(course, tmp_path_factory):
    """Two kernels graded at the same time, each writing to every folder others may write, and its scratch."""
    root = tmp_path_factory.mktemp("shared")
    graded = Path(shutil.copytree(course, root / "course"))
    tag = f"tapelab-share-{uuid.uuid4().hex[:8]}"
    places = _writable_by_all()
    for me, other in (("ann", "bob"), ("bob", "ann")):
        probe = SHARE.format(places=places, tag=tag, me=me, other=other, wait=WAIT)
        write(fill(graded, TINY, tiny(), extra=[probe]), root / "inbox" / f"{me}_{TINY}.ipynb")
    result = run_grade(root / "inbox", graded, "--jobs", "2", "--timeout", "120")
    assert result.returncode == 0, result.stderr[-3000:]
    report = load_report(graded / "report.json")
    seen = {}
    for me in ("ann", "bob"):
        found = re.search(r"SHARE (.*)", outputs_text(graded, me, TINY))
        assert found, outputs_text(graded, me, TINY)
        seen[me] = json.loads(found.group(1))
    return {"tag": tag, "report": report, "seen": seen, "places": places}


def test_concurrent_kernels_see_nothing_of_each_other_in_shared_folders(shared):
    """Does a kernel miss the files another kernel, running at the same time, wrote to /tmp, /var/tmp,
    /dev/shm and every other folder any user may write?"""
    ann, bob = shared["seen"]["ann"], shared["seen"]["bob"]
    assert ann["start"] < bob["end"] and bob["start"] < ann["end"], "the kernels did not overlap: nothing tested"
    assert (ann["seen"], bob["seen"]) == ([], []), shared["seen"]
    for me in ("ann", "bob"):
        entry = by_student(shared["report"], me, TINY)
        assert (entry["status"], entry["score"]) == ("graded", 1), entry


def test_nothing_a_kernel_wrote_is_left_on_the_host(shared):
    """After the run, are the kernels' temp files and scratch folders gone from the host, and unmounted?"""
    left = [str(Path(place, f"{shared['tag']}-{me}")) for place in shared["places"] for me in ("ann", "bob")
            if Path(place, f"{shared['tag']}-{me}").exists()]
    scratches = [seen["cwd"] for seen in shared["seen"].values()]
    assert all(s.startswith(SCRATCH_ROOT + "/") for s in scratches), scratches
    left += [s for s in scratches if os.path.lexists(s)]
    mounted = Path("/proc/self/mountinfo").read_text()
    assert not left and not any(f" {s} " in mounted for s in scratches), left


# -- bounded disk ----------------------------------------------------------------------------------------
SMALL = Limits(tmp_bytes=4 * 1024**2, tmp_inodes=300, scratch_bytes=4 * 1024**2, scratch_inodes=300)
FILL = '''
import errno, json, os, shutil
def fill_bytes(folder):
    written = 0
    for n in range(100_000):
        fd = os.open(os.path.join(folder, f"big{n}"), os.O_WRONLY | os.O_CREAT)
        try:
            for _ in range(16):
                written += os.write(fd, b"x" * 65536)
        except OSError as error:
            return written, error.errno
        finally:
            os.close(fd)
    return written, None
def fill_inodes(folder):
    for n in range(1_000_000):
        try:
            os.close(os.open(os.path.join(folder, f"empty{n}"), os.O_WRONLY | os.O_CREAT))
        except OSError as error:
            return n, error.errno
    return n, None
def measure(place):
    folder = os.path.join(place, "fill")
    os.mkdir(folder)
    full = fill_bytes(folder)
    shutil.rmtree(folder)
    os.mkdir(folder)
    files = fill_inodes(folder)
    shutil.rmtree(folder)
    fs = os.statvfs(place)
    return {"bytes": full, "files": files, "size": fs.f_blocks * fs.f_frsize, "dev": os.stat(place).st_dev}
print("DISK " + json.dumps({"scratch": measure(os.getcwd()), "tmp": measure("/tmp"), "cwd": os.getcwd(),
                            "devs": {p: os.stat(p).st_dev for p in ("/tmp", "/var/tmp", "/dev/shm")}}))
'''


@pytest.fixture(scope="module", params=["warm", "cold"])
def disk(request):
    """One kernel, run by the real worker with small disk limits, that fills its scratch and /tmp; started
    warm (forked from the worker's zygote) and cold."""
    nb = new_notebook(cells=[new_code_cell(FILL)])
    settings = Settings(cell_timeout=120, notebook_timeout=240, output_limit=1_000_000,
                        sandbox=Sandbox(isolate=True, rlimits=True, limits=SMALL, kernels=request.param))
    result = execute(nbformat.writes(nb), settings)
    assert result["nb"] is not None and result["facts"]["kernel"] == request.param, result["facts"]
    text = "".join(o.get("text", "") for o in nbformat.reads(result["nb"], as_version=4).cells[0].outputs)
    found = re.search(r"DISK (.*)", text)
    assert found, text
    return json.loads(found.group(1))


@pytest.mark.parametrize("place,size", [("scratch", SMALL.scratch_bytes), ("tmp", SMALL.tmp_bytes)])
def test_a_kernel_that_writes_until_full_hits_the_byte_bound(disk, place, size):
    """Does writing until the disk is full stop with ENOSPC at the total byte bound, on a file system of
    exactly that size?"""
    written, error = disk[place]["bytes"]
    assert error == errno.ENOSPC and size // 2 < written <= size, disk[place]
    assert disk[place]["size"] == size, disk[place]


@pytest.mark.parametrize("place,inodes", [("scratch", SMALL.scratch_inodes), ("tmp", SMALL.tmp_inodes)])
def test_a_kernel_that_creates_many_empty_files_hits_the_inode_bound(disk, place, inodes):
    """Does creating empty files stop with ENOSPC at the inode bound?"""
    created, error = disk[place]["files"]
    assert error == errno.ENOSPC and inodes // 2 < created <= inodes, disk[place]


def test_the_temp_folders_share_one_bound_and_no_host_file_system(disk):
    """Are /tmp, /var/tmp and /dev/shm one file system in the kernel (one bound for all), and did no write
    reach a file system of the host?"""
    assert set(disk["devs"].values()) == {disk["tmp"]["dev"]}, disk["devs"]
    host = {os.stat(p).st_dev for p in ("/", *TEMP_DIRS, SCRATCH_ROOT)}
    assert not host & {disk["scratch"]["dev"], disk["tmp"]["dev"]}, (host, disk)
    assert not os.path.lexists(disk["cwd"]), disk["cwd"]


# -- a checkout in a folder only its owner may enter -----------------------------------------------------
@pytest.fixture(scope="module")
def closed_checkout(course):
    """A clone of this repository in a fresh `mktemp -d` folder (mode 0700), with a light venv inside
    it: graded once, then once more after its venv is made unreadable to others (umask 077)."""
    top = Path(tempfile.mkdtemp(prefix="tapelab-0700-"))
    try:
        assert top.stat().st_mode & 0o777 == 0o700
        clone = top / "c"
        subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, capture_output=True)
        # This tree's code, committed or not, is what the clone runs.
        shutil.copytree(REPO / "src", clone / "src", dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        base = Path(sys.base_prefix, "bin", f"python{sys.version_info.major}.{sys.version_info.minor}")
        subprocess.run([str(base), "-m", "venv", "--without-pip", str(clone / ".venv")], check=True)
        site = next((clone / ".venv" / "lib").glob("python3*/site-packages"))
        (site / "tapelab-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        (site / "tapelab-src.pth").write_text(str(clone / "src") + "\n")
        (clone / ".venv" / "share").mkdir()  # nbconvert's templates, for the feedback
        (clone / ".venv" / "share" / "jupyter").symlink_to(Path(sys.prefix, "share", "jupyter"))
        graded_course = Path(shutil.copytree(course, top / "course"))
        write(fill(graded_course, TINY, tiny()), top / "inbox" / f"amy_{TINY}.ipynb")
        cmd = [str(clone / ".venv" / "bin" / "python"), "-m", "tapelab.cli", "grade", str(top / "inbox"),
               "--course", str(graded_course), "--jobs", "1", "--timeout", "120"]
        graded = subprocess.run(cmd, env=nbgrader_env(), capture_output=True, text=True, timeout=600, cwd=top)
        report = load_report(graded_course / "report.json") if graded.returncode == 0 else None
        starts = (graded_course / "grading.log.jsonl").read_text().count('"event": "start"')
        os.chmod(clone / ".venv", 0o700)
        refused = subprocess.run(cmd + ["--force"], env=nbgrader_env(), capture_output=True, text=True,
                                 timeout=600, cwd=top)
        yield {"clone": clone, "graded": graded, "report": report, "refused": refused, "starts": starts,
               "log": graded_course / "grading.log.jsonl"}
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_a_checkout_in_a_closed_folder_grades_with_every_protection(closed_checkout):
    """Does a clone inside a 0700 folder, with its venv and tapelab inside too, grade a submission with
    full marks and every protection on?"""
    graded = closed_checkout["graded"]
    assert graded.returncode == 0, graded.stderr[-3000:]
    report = closed_checkout["report"]
    entry = by_student(report, "amy", TINY)
    assert (entry["status"], entry["score"], entry["max_score"]) == ("graded", 1, 1), entry
    assert all(p["on"] for p in report["protections"].values()), report["protections"]


def test_an_environment_others_cannot_read_is_refused_before_grading(closed_checkout):
    """Is a venv other users cannot read refused before anything is graded, with a message that names
    the folder and the fix, and no traceback?"""
    refused, venv = closed_checkout["refused"], closed_checkout["clone"] / ".venv"
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert str(venv) in refused.stderr and f"chmod -R o+rX {venv}" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr, refused.stderr
    assert closed_checkout["log"].read_text().count('"event": "start"') == closed_checkout["starts"]


def test_a_dask_worker_whose_environment_others_cannot_read_is_refused():
    """Does the pre-run check of Dask workers stop the run when a worker's kernels could not read its
    Python environment, naming the worker and the fix?"""
    from tapelab.grading.execution.cluster import ClusterError, check, describe

    here = describe()
    problem = "the grading kernels run as an unprivileged user, who cannot read the Python environment /x/.venv"
    with pytest.raises(ClusterError, match=re.escape(f"worker tcp://10.0.0.9:8788 on w9: {problem}")):
        check({"tcp://10.0.0.9:8788": {**here, "host": "w9", "environment": problem}}, here)


# -- no process of a killed run survives -----------------------------------------------------------------
def _processes() -> dict[int, tuple[int, str, int]]:
    """pid -> (parent pid, command name, start time) of every process."""
    table = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # it ended meanwhile
            continue
        name, rest = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
        table[int(entry)] = (int(rest[1]), name, int(rest[19]))
    return table


def _uid(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:  # it ended meanwhile
        return -1
    return int(re.search(r"^Uid:\s+(\d+)", status, re.M).group(1))


def _descendants(root: int) -> dict[int, tuple[int, str, int]]:
    table, found, todo = _processes(), {}, [root]
    while todo:
        parent = todo.pop()
        for pid, info in table.items():
            if info[0] == parent and pid not in found:
                found[pid] = info
                todo.append(pid)
    return found


SLEEPER = 'import subprocess\nsubprocess.run(["sleep", "300"])'


def _as_from_a_terminal() -> None:
    """Ctrl-C's signal at its default, as a command typed in a terminal starts: a test run started in the
    background by a shell without job control inherits SIGINT ignored, and Python then keeps ignoring it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM", "SIGINT"])
def test_no_process_of_a_killed_run_survives(course, tmp_path, how):
    """When the coordinator of `tapelab grade` is killed (or stopped by SIGTERM or Ctrl-C) while a kernel
    sleeps in a cell, do its workers, the sandbox wrappers, the kernel and the kernel's child all end,
    and the kernel's scratch folder go, within a bounded wait?"""
    graded = Path(shutil.copytree(course, tmp_path / "course"))
    write(fill(graded, TINY, tiny(), extra=[SLEEPER]), tmp_path / "inbox" / f"kim_{TINY}.ipynb")
    cmd = [sys.executable, "-m", "tapelab.cli", "grade", str(tmp_path / "inbox"), "--course", str(graded),
           "--jobs", "1", "--timeout", "600"]
    err = tmp_path / "stderr.txt"
    with err.open("w") as stderr:  # a file, not a pipe: a surviving worker would hold a pipe open
        proc = subprocess.Popen(cmd, env=nbgrader_env(), stdout=subprocess.DEVNULL, stderr=stderr,
                                start_new_session=True, preexec_fn=_as_from_a_terminal)
    try:
        tree, sleeper = {}, None
        for _ in range(600):  # up to about 2 minutes for the kernel to reach the sleeping cell
            assert proc.poll() is None, err.read_text()[-3000:]
            tree = _descendants(proc.pid)
            sleeper = next((p for p, (_, name, _) in tree.items() if name == "sleep" and _uid(p) >= UID_BASE), None)
            if sleeper:
                break
            time.sleep(0.2)
        assert sleeper, "the kernel never reached the sleeping cell"
        uid = _uid(sleeper)
        assert UID_BASE <= uid < UID_BASE + UID_SLOTS
        scratch = [p for p in Path(SCRATCH_ROOT).glob("kernel-*") if p.stat().st_uid == uid]
        assert len(scratch) == 1 and os.path.ismount(scratch[0]), scratch
        if how == "SIGINT":
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the terminal's whole process group
        else:
            os.kill(proc.pid, getattr(signal, how))
        proc.wait(timeout=60)
        survivors = tree
        for _ in range(100):  # up to about 20 s
            now = _processes()
            survivors = {p: info for p, info in tree.items() if now.get(p, (0, "", None))[2] == info[2]}
            if not survivors and not scratch[0].exists():
                break
            time.sleep(0.2)
        assert not survivors, survivors
        assert not scratch[0].exists(), f"{scratch[0]} is left"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


STRANDED = """
import os, signal
from tapelab.grading.execution.sandbox import Sandbox, Slot
slot = Slot(Sandbox(isolate=True, rlimits=True))
print(slot.uid, slot.scratch, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_runs_scratch_is_unmounted_when_its_uid_is_next_used():
    """Is the scratch tmpfs of a worker killed before it could clean up unmounted and removed as soon as
    its sandbox uid is taken again?"""
    killed = subprocess.run([sys.executable, "-c", STRANDED], capture_output=True, text=True)
    uid, scratch = killed.stdout.split()
    assert killed.returncode == -signal.SIGKILL and os.path.ismount(scratch), killed
    slots = []
    try:
        while all(s.uid != int(uid) for s in slots) and len(slots) < UID_SLOTS:
            slots.append(Slot(Sandbox(isolate=True, rlimits=True)))  # the lowest free uids first
    except RuntimeError:  # all uids busy: another run took it, and cleaned up
        pass
    finally:
        for slot in slots:
            slot.release()
    assert not os.path.lexists(scratch) and f" {scratch} " not in Path("/proc/self/mountinfo").read_text()


# -- the local pool: one failure, one submission ---------------------------------------------------------
class _Unloadable:
    def __reduce__(self):
        return (_refuse, ())


def _refuse():
    raise RuntimeError("this result cannot be rebuilt")


def _task(nb_json: str, settings: Settings) -> dict:
    """A stand-in for worker.execute, run in the pool's worker processes (they import this module)."""
    if nb_json == "raises":
        raise ValueError("a fault only this submission meets")
    if nb_json == "unpicklable":
        return {"nb": lambda: None}
    if nb_json == "unloadable":
        return {"nb": _Unloadable()}
    if nb_json == "kills-its-worker":
        os._exit(3)
    return {"nb": nb_json, "facts": {}, "seconds": 0.0, "worker": str(os.getpid())}


@pytest.fixture(scope="module")
def pooled():
    """Every failure at once in a pool of two, among submissions that are fine."""
    pool = LocalPool(2, task=_task)
    settings = Settings(cell_timeout=1, notebook_timeout=1, output_limit=1, sandbox=Sandbox(False, False))
    names = ["fine-1", "raises", "unpicklable", "fine-2", "unloadable", "kills-its-worker", "fine-3"]
    results = {}
    try:
        for name in names:
            pool.submit(name, name, settings)
        while len(pool):
            results.update(pool.finished())
    finally:
        pool.close()
    return results


@pytest.mark.parametrize("name,words", [("raises", "ValueError: a fault only this submission meets"),
                                        ("unpicklable", "pickle"),
                                        ("unloadable", "RuntimeError: this result cannot be rebuilt"),
                                        ("kills-its-worker", "died each of the 2 times")])
def test_a_failing_execution_is_infra_error_for_that_submission(pooled, name, words):
    """Does an exception in the worker, a result that cannot cross back, or a worker that dies, end as
    infra_error naming it, for that submission only?"""
    result = pooled[name]
    assert result["nb"] is None and words in result["facts"]["infra_error"], result


def test_the_other_submissions_in_the_pool_are_executed(pooled):
    """Do the submissions that share the pool with the failing ones come back executed, each once?"""
    assert {n: r["nb"] for n, r in pooled.items() if n.startswith("fine")} == {
        "fine-1": "fine-1", "fine-2": "fine-2", "fine-3": "fine-3"}
