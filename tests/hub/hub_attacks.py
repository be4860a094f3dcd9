"""The course hub attacked by its own students, one test per class of issue 48, on the hub of test_hub.py.

`attack_round` plants every attack as the students' Unix users (what code in their notebooks can do) and
as the instructor's, then runs one real `make hub-grade`; the tests read what it left. tl-student2 hands in
a notebook whose code displays script and whose folder carries evil.html; tl-student3 submits as another
student, links its notebook to the instructor's source and its folder to a classmate's, and leaves a 2 GB
file, a fifo, a dangling link, a link to /dev/zero and a name with control characters; tl-student1
resubmits after the walk's grading round; the instructor's config carries code that would prove it ran as
root. The test functions are collected in test_hub.py, after the walk and before the hub stops.
"""
from __future__ import annotations

import json
import pwd
import time
from datetime import datetime
from pathlib import Path

import nbformat
import pytest

from hubkit import (EXCHANGE, GRADING, NOTEBOOK, PYTHON, REPO, STUDENT_ENV, TIMEOUT, as_user, build, in_server,
                    log_in, make, nbgrader)

PAYLOAD = "window.__pwned=1;document.title='PWNED'"
ROOT_PROOF = build.ROOT / "config-ran-as-root"
INBOUND = EXCHANGE / "tapelab" / "inbound"
S1, S2, S3, INSTRUCTOR = "tl-student1", "tl-student2", "tl-student3", "tl-instructor"
HOSTILE_CODE = ("from IPython.display import HTML, Javascript, display\n"
                f"display(HTML(\"<script>{PAYLOAD}</script><img src=x onerror=\\\"{PAYLOAD}\\\">\"))\n"
                f"display(Javascript(\"{PAYLOAD}\"))\n")


def home(user: str) -> Path:
    return Path(pwd.getpwnam(user).pw_dir)


def edit(user: str, path: Path, answer_cell: str, code: str, markdown: str | None = None) -> None:
    """Put `code` into the answer cell `answer_cell` of the user's notebook (and a markdown cell), as the user."""
    script = ("import json, sys, nbformat\n"
              "path, grade_id, code, markdown = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])\n"
              "nb = nbformat.read(path, as_version=4)\n"
              "for cell in nb.cells:\n"
              "    if cell.metadata.get('nbgrader', {}).get('grade_id') == grade_id:\n"
              "        cell.source = code\n"
              "if markdown:\n"
              "    nb.cells.insert(1, nbformat.v4.new_markdown_cell(markdown))\n"
              "nbformat.write(nb, path)\n")
    result = as_user(user, PYTHON, "-c", script, str(path), answer_cell, code, json.dumps(markdown))
    assert result.returncode == 0, result.stderr


def plant_folder(user: str, name: str, notebook_link: str | None = None) -> Path:
    """A folder in inbound/ made by `user` by hand, with a plain notebook unless `notebook_link` names a target."""
    folder = INBOUND / name
    make_it = ("import os, sys, shutil\n"
               "folder, link, src = sys.argv[1], sys.argv[2], sys.argv[3]\n"
               "os.mkdir(folder)\n"
               "target = os.path.join(folder, sys.argv[4] + '.ipynb')\n"
               "os.symlink(link, target) if link else shutil.copy(src, target)\n"
               "open(os.path.join(folder, 'submission_secret.txt'), 'w').write(os.urandom(8).hex())\n")
    source = home(user) / NOTEBOOK / f"{NOTEBOOK}.ipynb"
    result = as_user(user, PYTHON, "-c", make_it, str(folder), notebook_link or "", str(source), NOTEBOOK)
    assert result.returncode == 0, result.stderr
    return folder


@pytest.fixture(scope="module")
def attack_round(hub):
    """Every attack planted, then one `make hub-grade`; what the tests need to look at."""
    submitted_at = {}
    # Class 1: the instructor's own config carries code (what a script in the instructor's page would append).
    proof = f"\nimport os\nif os.geteuid() == 0:\n    open({str(ROOT_PROOF)!r}, 'w').write('root ran me')\n"
    for config in (home(INSTRUCTOR) / "course" / "nbgrader_config.py",
                   home(INSTRUCTOR) / ".jupyter" / "nbgrader_config.py"):
        result = as_user(INSTRUCTOR, PYTHON, "-c", f"open({str(config)!r}, 'a').write({proof!r})")
        assert result.returncode == 0, result.stderr
    # Class 1: tl-student2's notebook displays script, and its folder carries evil.html.
    nbgrader(S2, "fetch_assignment", NOTEBOOK)
    work = home(S2) / NOTEBOOK
    edit(S2, work / f"{NOTEBOOK}.ipynb", "ex1_1_answer", HOSTILE_CODE,
         markdown=f"<script>{PAYLOAD}</script><img src=x onerror=\"{PAYLOAD}\"> my notes")
    edit(S2, work / f"{NOTEBOOK}.ipynb", "ex1_2_test", "pass  # the locked test, rewritten: tampered\n")
    assert as_user(S2, "sh", "-c", f"echo '<script>{PAYLOAD}</script>' > '{work / 'evil.html'}'").returncode == 0
    nbgrader(S2, "submit", NOTEBOOK)
    # Class 2: tl-student1 resubmits after the walk's round.
    edit(S1, home(S1) / NOTEBOOK / f"{NOTEBOOK}.ipynb", "ex1_2_answer", "# resubmitted after grading\n")
    submitted_at["s1_resubmitted"] = time.time()
    nbgrader(S1, "submit", NOTEBOOK)
    # Class 2 and 3: tl-student3's folders.
    nbgrader(S3, "fetch_assignment", NOTEBOOK)
    source = home(INSTRUCTOR) / "course" / "source" / NOTEBOOK / f"{NOTEBOOK}.ipynb"
    plant_folder(S3, f"{S3}+{NOTEBOOK}+2026-01-01 00:00:00.000000 UTC+link", notebook_link=str(source))
    plant_folder(S3, f"{S3}+{NOTEBOOK}+x+zero", notebook_link="/dev/zero")
    plant_folder(S3, f"{S3}+{NOTEBOOK}+x+dangling", notebook_link="/nowhere")
    s1_folder = next(INBOUND.glob(f"{S1}+{NOTEBOOK}+*"))
    assert as_user(S3, "ln", "-s", str(s1_folder), str(INBOUND / f"{S3}+{NOTEBOOK}+x+folderlink")).returncode == 0
    fifo = INBOUND / f"{S3}+{NOTEBOOK}+x+fifo"
    assert as_user(S3, "sh", "-c", f"mkdir '{fifo}' && mkfifo '{fifo}/{NOTEBOOK}.ipynb'").returncode == 0
    odd = INBOUND / f"{S3}\n\x1b[2J+{NOTEBOOK}+x+odd"
    assert as_user(S3, "mkdir", str(odd)).returncode == 0
    time.sleep(1.1)  # the impersonation is tl-student3's newest folder by a clear margin
    nbgrader(S3, "submit", NOTEBOOK, "--student", S1)  # names tl-student1: must count as tl-student3's
    impersonation = max(INBOUND.glob(f"{S1}+{NOTEBOOK}+*"), key=lambda p: p.lstat().st_ctime)
    big = ("import os, sys\nwith open(os.path.join(sys.argv[1], 'huge.bin'), 'wb') as f:\n    f.truncate(2 * 1024**3)\n"
           "os.symlink('/usr', os.path.join(sys.argv[1], 'linked-folder'))\n")
    assert as_user(S3, PYTHON, "-c", big, str(impersonation)).returncode == 0
    started = time.monotonic()
    graded = make("hub-grade", f"A={NOTEBOOK}")
    seconds = time.monotonic() - started
    rows = json.loads(as_user(INSTRUCTOR, "cat", str(home(INSTRUCTOR) / "course" / f"collect-{NOTEBOOK}.json")).stdout)
    return {"graded": graded, "seconds": seconds, "rows": rows, "impersonation": impersonation.name,
            "submitted_at": submitted_at}


def _row(rows: list[dict], folder: str) -> dict:
    return next(row for row in rows if row["folder"] == folder)


def test_class_1_student_script_never_runs_in_formgrader_and_root_never_runs_instructor_code(hub, attack_round,
                                                                                             tmp_path: Path) -> None:
    """The instructor opens tl-student2's submission in formgrader (Chromium): no script of the student's runs,
    evil.html is not served. The control proves the check sees script: the raw notebook, put where the
    inert one was, does run. The config line that would prove root ran it never did, and `tapelab grade` as
    root refuses the instructor's course outright."""
    from playwright.sync_api import expect, sync_playwright

    from browser.labserver import CHROMIUM, CHROMIUM_ARGS

    assert attack_round["graded"].returncode == 0, attack_round["graded"].stdout + attack_round["graded"].stderr
    assert not ROOT_PROOF.exists(), "the instructor's config ran as root"
    course = home(INSTRUCTOR) / "course"
    refused = as_user("root", str(REPO / ".venv" / "bin" / "tapelab"), "grade", str(course / "submitted"),
                      "--course", str(course))
    assert refused.returncode == 2 and "not to you" in refused.stderr, refused.stdout + refused.stderr
    assert not ROOT_PROOF.exists()
    url, people = hub["accounts"]["url"], hub["accounts"]
    base = f"{url}/user/{INSTRUCTOR}"
    autograded = home(INSTRUCTOR) / "course" / "autograded" / S2 / NOTEBOOK
    listed = as_user(INSTRUCTOR, "ls", str(autograded)).stdout.split()
    assert f"{NOTEBOOK}.ipynb" in listed and "evil.html" not in listed, listed
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            teacher = log_in(browser.new_context(), url, people["instructor"])
            teacher.wait_for_url(f"**/user/{INSTRUCTOR}/lab**", timeout=TIMEOUT)
            teacher.goto(f"{base}/formgrader")
            expect(teacher.locator("body")).to_contain_text("Manage Assignments", timeout=TIMEOUT)
            listed = teacher.request.get(f"{base}/formgrader/api/student_notebook_submissions/{S2}/{NOTEBOOK}")
            assert listed.ok, listed.status
            [submission] = listed.json()
            page_url = f"{base}/formgrader/submissions/{submission['id']}/"

            def pwned() -> bool:
                teacher.goto(page_url)
                teacher.wait_for_load_state("load")
                teacher.wait_for_timeout(1500)
                return teacher.evaluate("window.__pwned === 1") or teacher.title() == "PWNED"

            assert not pwned(), "the student's script ran in the instructor's formgrader"
            expect(teacher.locator("body")).to_contain_text("my notes")
            teacher.screenshot(path=str(tmp_path / "formgrader-inert.png"), full_page=True)
            served = teacher.request.get(f"{page_url}evil.html")
            assert served.status == 404, served.status
            # The control: the student's own notebook, as it was handed in, where the inert one was.
            raw = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"<script>{PAYLOAD}</script>")])
            write = as_user(INSTRUCTOR, PYTHON, "-c", "import sys; open(sys.argv[1], 'w').write(sys.argv[2])",
                            str(autograded / f"{NOTEBOOK}.ipynb"), nbformat.writes(raw))
            assert write.returncode == 0, write.stderr
            assert pwned(), "the control page should have run its script: the check above proves nothing"
        finally:
            browser.close()


def test_class_2_collect_trusts_only_what_students_cannot_set(attack_round) -> None:
    """Owner over name, no link followed, times from ctimes, the resubmission collected; the tampered
    submission's feedback held back, in the instructor's course and in the exchange."""
    rows = attack_round["rows"]
    report = json.loads(as_user(INSTRUCTOR, "cat", str(home(INSTRUCTOR) / "course" / "report.json")).stdout)
    assert {(e["student"], e["status"]) for e in report["submissions"]} >= {(S2, "tampered")}
    assert "held back for review: tl-student2" in attack_round["graded"].stdout
    pages = as_user(INSTRUCTOR, "find", str(home(INSTRUCTOR) / "course" / "feedback"), "-name", "*.html").stdout
    assert f"/{S2}/" not in pages and f"/{S1}/" in pages, pages
    as_user(S2, str(build.ENV / "bin" / "nbgrader"), "fetch_feedback", NOTEBOOK, "--course", "tapelab", env=STUDENT_ENV)
    assert not list((home(S2) / NOTEBOOK / "feedback").glob("*/*.html")), "tampered feedback reached the student"
    impersonation = _row(rows, attack_round["impersonation"])
    assert impersonation["student"] == S3 and impersonation["status"] == "collected"
    assert any(f"named for '{S1}'" in flag for flag in impersonation["flags"])
    assert _row(rows, f"{S3}+{NOTEBOOK}+2026-01-01 00:00:00.000000 UTC+link")["status"] in ("no_notebook",
                                                                                             "superseded")
    assert _row(rows, f"{S3}+{NOTEBOOK}+x+folderlink")["status"] == "not_a_folder"
    resubmitted = [row for row in rows if row["student"] == S1 and row["status"] == "collected"]
    assert len(resubmitted) == 1
    when = datetime.fromisoformat(resubmitted[0]["submitted_at"]).timestamp()
    assert when >= attack_round["submitted_at"]["s1_resubmitted"] - 1  # the submit's own time, from its ctimes
    graded_s1 = (home(INSTRUCTOR) / "course" / "autograded" / S1 / NOTEBOOK / f"{NOTEBOOK}.ipynb")
    text = as_user(INSTRUCTOR, "cat", str(graded_s1)).stdout
    assert "resubmitted after grading" in text, "the resubmission after the walk's round was not graded"
    hidden = (GRADING / "course" / "source" / NOTEBOOK / f"{NOTEBOOK}.ipynb").read_text()
    assert "### BEGIN HIDDEN TESTS" in hidden
    for student in (S2, S3):
        for page in (home(INSTRUCTOR) / "course" / "feedback" / student).rglob("*.html"):
            assert "BEGIN HIDDEN TESTS" not in as_user(INSTRUCTOR, "cat", str(page)).stdout


def test_class_3_one_students_folders_never_stop_grading_for_the_class(attack_round) -> None:
    """A fifo, /dev/zero, a dangling link, a control-character name and a 2 GB file: each its own status,
    grading done for everyone."""
    graded = attack_round["graded"]
    assert graded.returncode == 0, graded.stdout + graded.stderr
    rows = attack_round["rows"]
    for suffix in ("zero", "dangling", "fifo"):
        assert _row(rows, f"{S3}+{NOTEBOOK}+x+{suffix}")["status"] == "no_notebook"
    assert any(row["folder"].startswith(f"{S3}\\n\\x1b[2J+") for row in rows)
    assert _row(rows, attack_round["impersonation"])["size"] >= 2 * 1024**3
    report = json.loads(as_user(INSTRUCTOR, "cat", str(home(INSTRUCTOR) / "course" / "report.json")).stdout)
    statuses = {entry["student"]: entry["status"] for entry in report["submissions"]}
    assert statuses.get(S1) in ("graded", "tampered") and statuses.get(S3) in ("graded", "tampered"), statuses


def test_class_4_students_cannot_reach_answers_hidden_values_or_the_grading_course(hub) -> None:
    for path in (REPO / "solutions" / f"{NOTEBOOK}.ipynb", REPO / "answers" / "pyproject.toml",
                 GRADING / "course" / "nbgrader_config.py", home(INSTRUCTOR) / "course" / "nbgrader_config.py"):
        read = as_user(S2, "cat", str(path))
        assert read.returncode != 0 and "Permission denied" in read.stderr, f"{S2} could read {path}"
    imported = as_user(S2, PYTHON, "-c", f"import sys; sys.path.insert(0, {str(REPO / 'answers' / 'src')!r}); "
                       "import tapelab_answers")
    assert imported.returncode != 0 and "No module named" in imported.stderr


def test_class_5_a_student_is_held_to_their_own_share(hub) -> None:
    """In tl-student1's server (its cgroups and mount namespace): the home fills at its cap, /tmp is private and
    capped, forks stop at the task limit, memory past the limit is refused; in the exchange, no one renames
    another's submission or makes a course."""
    fill = ("import os, sys\nchunk = b'x' * 2**20\nwritten = 0\ntry:\n"
            "    with open(sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser('~/fill.bin'), 'wb') as f:\n"
            "        while written < 4 * 2**30:\n            f.write(chunk); f.flush(); written += len(chunk)\n"
            "except OSError as error:\n    print(error.errno, written // 2**20)\n")
    home_fill = in_server(S1, fill)
    errno, megabytes = home_fill.stdout.split()
    assert int(errno) == 28 and int(megabytes) <= 512, home_fill  # ENOSPC at the home's cap
    in_server(S1, "import os; os.remove(os.path.expanduser('~/fill.bin'))")
    tmp_fill = in_server(S1, fill.replace("os.path.expanduser('~/fill.bin')", "'/tmp/fill.bin'"))
    errno, megabytes = tmp_fill.stdout.split()
    assert int(errno) == 28 and int(megabytes) <= 256, tmp_fill
    assert not Path("/tmp/fill.bin").exists(), "the server's /tmp is the machine's"
    in_server(S1, "import os; os.remove('/tmp/fill.bin')")
    forks = in_server(S1, "import os, signal\nchildren = []\ntry:\n    while len(children) < 2000:\n"
                          "        child = os.fork()\n        if child == 0:\n            signal.pause()\n"
                          "        children.append(child)\nexcept OSError:\n    pass\n"
                          "for child in children:\n    os.kill(child, 9); os.waitpid(child, 0)\nprint(len(children))\n",
                      timeout=120)
    assert 0 < int(forks.stdout.split()[-1]) < 600, forks
    memory = in_server(S1, "held = []\nfor n in range(1, 5 * 1024):\n    held.append(b'x' * 2**20)\n"
                           "    if n % 256 == 0: print(n, flush=True)\n", timeout=120)
    reached = int(memory.stdout.split()[-1]) if memory.stdout.split() else 0
    assert memory.returncode != 0 and reached <= 2048, (memory.returncode, reached)
    busy = in_server(S1, "import os, time\nstart = time.monotonic()\nfor _ in range(2):\n    if os.fork() == 0:\n"
                         "        while time.monotonic() - start < 3: pass\n        os._exit(0)\n"
                         "os.wait(); os.wait()\nt = os.times()\n"
                         "print(t.children_user + t.children_system, time.monotonic() - start)\n")
    cpu, wall = map(float, busy.stdout.split())
    assert cpu <= 1.3 * wall, (cpu, wall)  # two busy processes, one core's quota
    s1_folder = next(INBOUND.glob(f"{S1}+{NOTEBOOK}+*"))
    assert as_user(S2, "mv", str(s1_folder), str(INBOUND / "stolen")).returncode != 0
    assert as_user(S2, "mkdir", str(EXCHANGE / "another-course")).returncode != 0


def test_class_5_a_stopped_server_leaves_no_process_of_its_user(hub) -> None:
    """A process started from tl-student1's notebook in a session of its own outlives nothing: stopping the server
    in the hub's page ends every process of the user."""
    from playwright.sync_api import expect, sync_playwright

    from browser.labserver import CHROMIUM, CHROMIUM_ARGS
    from limits import processes_of

    started = in_server(S1, "import subprocess\nsubprocess.Popen(['sleep', '600'], start_new_session=True, "
                            "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n")
    assert started.returncode == 0, started.stderr
    uid = pwd.getpwnam(S1).pw_uid
    assert any(b"sleep" in Path(f"/proc/{pid}/cmdline").read_bytes() for pid in processes_of(uid))
    url = hub["accounts"]["url"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = log_in(browser.new_context(), url, hub["accounts"]["students"][0])
            page.wait_for_url(f"**/user/{S1}/lab**", timeout=TIMEOUT)
            page.goto(f"{url}/hub/home")
            page.click("#stop")
            expect(page.locator("#start")).to_be_visible(timeout=TIMEOUT)
        finally:
            browser.close()
    # The page shows Start once the hub answers the stop, which it does after 10 s while the stop is still under way
    # (JupyterHub's slow_stop_timeout): the spawner then interrupts, terminates and kills the server (LocalProcess-
    # Spawner waits up to 30 s after SIGINT, 30 s after SIGTERM, 5 s after SIGKILL) and only then ends every other
    # process of the user.
    deadline = time.monotonic() + 120
    while processes_of(uid) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = processes_of(uid)
    assert left == [], f"processes of the student outlived the server: {[_described(pid) for pid in left]}"


def _described(pid: int) -> str:
    """A process as the failure names it: pid, parent, state and command line (it may end while being read)."""
    try:
        status = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                      if ":\t" in line)
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return f"{pid} (ended)"
    return f"{pid} parent {status.get('PPid', '?').strip()} {status.get('State', '?').strip()}: {command[:200]}"
