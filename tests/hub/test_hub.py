"""The course on a JupyterHub, walked end to end in headless Chromium (issue 35), then attacked by its own
students (issue 48, tests/hub/hub_attacks.py), then stopped against a resisting process.

`make hub` starts the hub (an instructor and four students, each their own numbers; the checkout's answers closed
to other users for its life); student 1 logs in, fetches 01_basic_tape in the Assignments tab, answers Exercise 1.1
right for its own variant and 1.2 with a known mistake, validates and submits; student 2 submits nothing; student
4, without a browser, answers one exercise with student 1's right answer and the others right for its own numbers,
and submits (tests/hub/hub_variants.py); `make hub-grade` collects, grades with tapelab and releases feedback;
student 1 fetches it and the page names the mistake and shows its own numbers, other than student 4's; each is
graded against its own variant. As student 2's Unix user, none of student 1's files, the instructor's course
folder, the hub's secrets or the proxy's token can be read; formgrader answers the instructor and no student; every
listening socket is on the loopback address; the students' environment has no answers (graded mode). The answers
are written into the fetched notebook as the student's Unix user (what typing them would save); Validate and Submit
are clicked in the page. The attack tests follow on the same hub. `make hub-stop` runs even when the walk fails,
and must leave no process and no demo user. The timings go to test-output/hub-timings.json; screenshots go to the
test's tmp_path.
"""
from __future__ import annotations

import json
import os
import pwd
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest
from nbgrader.utils import notebook_hash

pytest.register_assert_rewrite("hub_variants")
import hub_variants  # noqa: E402
from browser.labserver import CHROMIUM, CHROMIUM_ARGS
from hubkit import (  # noqa: E402
    ACCOUNTS, EXCHANGE, NOTEBOOK, REPO, RUN, TIMEOUT, as_user, build, log_in, make, write_answers)

pytestmark = [pytest.mark.browser, pytest.mark.heavy(600)]


def free_base_port() -> int:
    """A port P with P, P+1 and P+2 free (the proxy, its API, the hub)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        if base + 2 < 65536 and all(_free(base + i) for i in (1, 2)):
            return base
    raise RuntimeError("no three free ports in a row on 127.0.0.1")


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


LOOPBACK = {"0100007F", "00000000000000000000000001000000"}  # 127.0.0.1 and ::1 as /proc/net/tcp{,6} write them


def listening_addresses(pids: list[int]) -> set[str]:
    """The local addresses of every listening TCP socket the processes `pids` hold."""
    inodes = set()
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    addresses = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                addresses.add(fields[1])
    return addresses


def hub_processes(uids: set[int]) -> list[int]:
    """The hub, its proxy, and every process of the demo users (their servers and kernels)."""
    pids = [int((RUN / name).read_text()) for name in ("jupyterhub.pid", "proxy.pid")]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _owned(entry, uids):
            pids.append(int(entry.name))
    return pids


@pytest.fixture(scope="module")
def closed_checkout():
    """The checkout's answers closed to other users for the hub's life, as `make hub` demands (a clone may sit
    in a folder every user can enter); their modes are given back afterwards."""
    places = [REPO / "solutions", REPO / "answers"]
    modes = {place: place.stat().st_mode & 0o7777 for place in places}
    for place in places:
        place.chmod(modes[place] & ~0o007)
    yield
    for place, mode in modes.items():
        place.chmod(mode)


@pytest.fixture(scope="module")
def hub(closed_checkout):
    """A hub from `make hub`, stopped by `make hub-stop` whatever happens."""
    if os.geteuid() != 0:
        pytest.fail("the hub test makes Unix users: run it as root (as CI does)", pytrace=False)
    if (RUN / "jupyterhub.pid").exists():
        pytest.fail(f"a course hub is already set up in {build.ROOT}: run `make hub-stop` first", pytrace=False)
    started = time.monotonic()
    up = make("hub", f"HUB_PORT={free_base_port()}", "HUB_STUDENTS=4")  # the default: per-student variants
    seconds = time.monotonic() - started
    try:
        assert up.returncode == 0, f"make hub failed:\n{up.stdout}\n{up.stderr}"
        again = make("hub")  # a second run finds it running and says so
        assert again.returncode == 0 and "already running" in again.stdout, again.stdout + again.stderr
        yield {"accounts": json.loads(ACCOUNTS.read_text()), "make_hub_seconds": seconds, "output": up.stdout}
    finally:
        down = make("hub-stop")
        assert down.returncode == 0, f"make hub-stop failed:\n{down.stdout}\n{down.stderr}"


def open_assignments(page) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
    page.locator(".lm-Menu-itemLabel", has_text="Assignment List").click()
    page.wait_for_selector("#released_assignments_list", timeout=TIMEOUT)


def test_a_student_submits_and_reads_the_feedback_that_names_the_mistake(hub, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    people = hub["accounts"]
    url = people["url"]
    s1, s2 = (person["name"] for person in people["students"][:2])
    instructor = people["instructor"]["name"]
    home1 = Path(pwd.getpwnam(s1).pw_dir)
    answered = re.search(r"JupyterHub answered ([\d.]+) s", hub["output"])
    assert answered, hub["output"]
    timings = {"make_hub_s": round(hub["make_hub_seconds"], 1), "hub_start_s": float(answered.group(1))}
    assert url.startswith("http://127.0.0.1:") and people["course"] == "tapelab"
    salt = hub_variants.course_salt()
    answers, mistake = hub_variants.first_student(salt, s1)  # 1.2's mistake: names `tape.watch(w)`
    walk = time.monotonic()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 1000})
        try:
            spawn = time.monotonic()
            page = log_in(context, url, people["students"][0])
            page.wait_for_url(f"**/user/{s1}/lab**", timeout=TIMEOUT)
            page.wait_for_selector(".lm-MenuBar-itemLabel >> text=Nbgrader", timeout=TIMEOUT)
            timings["student_server_spawn_s"] = round(time.monotonic() - spawn, 1)

            open_assignments(page)
            released = page.locator("#released_assignments_list .list_item")
            expect(released).to_have_count(6, timeout=TIMEOUT)
            released.filter(has_text=NOTEBOOK).get_by_role("button", name="Fetch").click()
            fetched = page.locator("#fetched_assignments_list .list_item", has_text=NOTEBOOK).first
            expect(fetched).to_be_visible(timeout=TIMEOUT)
            write_answers(s1, home1 / NOTEBOOK / f"{NOTEBOOK}.ipynb", answers)
            hub_variants.hub_names_the_student(s1)  # its validation below checks its own numbers

            page.locator("#fetched_assignments_list a.assignment-notebooks-link", has_text=NOTEBOOK).click()  # unfold
            validate = page.locator("#fetched_assignments_list").get_by_role("button", name="Validate")
            validate.first.click()
            dialog = page.locator(".jp-Dialog")
            expect(dialog).to_contain_text("Validation Results", timeout=TIMEOUT)
            expect(dialog).to_contain_text("Incorrect: exercise 1.2", timeout=1000)  # 1.1 passes: not listed
            expect(dialog).not_to_contain_text("exercise 1.1", timeout=1000)
            page.screenshot(path=str(tmp_path / "validate.png"))
            dialog.get_by_role("button").last.click()
            page.locator("#fetched_assignments_list").get_by_role("button", name="Submit").first.click()
            expect(page.locator("#submitted_assignments_list")).to_contain_text(NOTEBOOK, timeout=TIMEOUT)
            page.screenshot(path=str(tmp_path / "assignments.png"), full_page=True)
            assert page.get_by_text("notified about official Jupyter news").count() == 0  # no calls home

            formgrader = context.request.get(f"{url}/user/{s1}/formgrader")
            assert formgrader.status == 404, "a student's own server must not serve formgrader"

            spawn = time.monotonic()
            teacher = log_in(context.browser.new_context(), url, people["instructor"])  # its own cookies
            teacher.wait_for_url(f"**/user/{instructor}/lab**", timeout=TIMEOUT)
            teacher.goto(f"{url}/user/{instructor}/formgrader")
            expect(teacher.locator("body")).to_contain_text("Manage Assignments", timeout=TIMEOUT)
            expect(teacher.locator("body")).to_contain_text(NOTEBOOK)
            timings["instructor_spawn_and_formgrader_s"] = round(time.monotonic() - spawn, 1)
            other = context.request.get(f"{url}/user/{instructor}/formgrader")  # the instructor's, running
            assert other.status == 403 and "Manage Assignments" not in other.text(), (other.status, other.url)

            second = time.monotonic()
            handed_in = hub_variants.second_student_hands_in(salt, s1)
            timings["second_student_s"] = round(time.monotonic() - second, 1)

            grading = time.monotonic()
            graded = make("hub-grade", f"A={NOTEBOOK}")
            assert graded.returncode == 0, graded.stdout + graded.stderr
            timings["hub_grade_s"] = round(time.monotonic() - grading, 1)
            hub_variants.assert_graded_against_their_own(salt, s1, handed_in)

            page.locator("#refresh_assignments_list").click()
            submitted = page.locator("#submitted_assignments_list")
            submitted.get_by_role("button", name="Fetch Feedback").first.click(timeout=TIMEOUT)
            feedback_files = list((home1 / NOTEBOOK / "feedback").glob(f"*/{NOTEBOOK}.html"))
            for _ in range(100):
                feedback_files = list((home1 / NOTEBOOK / "feedback").glob(f"*/{NOTEBOOK}.html"))
                if feedback_files:
                    break
                time.sleep(0.2)
            assert len(feedback_files) == 1, "the student's fetched feedback"
            relative = feedback_files[0].relative_to(home1)
            page.goto(f"{url}/user/{s1}/files/{relative}")
            expect(page.locator("body")).to_contain_text(mistake.says, timeout=TIMEOUT)
            hub_variants.assert_each_sees_their_own(salt, s1, page.locator("body").inner_text(), handed_in)
            page.screenshot(path=str(tmp_path / "feedback.png"), full_page=True)
            timings["walk_s"] = round(time.monotonic() - walk, 1)
        finally:
            context.close()
            browser.close()

    # Every socket the hub, the proxy, the servers and their kernels listen on is on the loopback address.
    uids = {pwd.getpwnam(name).pw_uid for name in (instructor, s1, s2)}
    addresses = listening_addresses(hub_processes(uids))
    assert len(addresses) >= 5, addresses  # proxy, its API, the hub, two servers at least
    assert {address.split(":")[0] for address in addresses} <= LOOPBACK, addresses

    # Student 2, as its own Unix user, knowing every path, reads nothing of student 1's or the instructor's.
    inbound = EXCHANGE / "tapelab" / "inbound"
    submission = next(inbound.glob(f"{s1}+{NOTEBOOK}+*"))
    secret = (submission / "submission_secret.txt").read_text()  # student 1's page, named as nbgrader names it
    released_feedback = EXCHANGE / "tapelab" / "feedback" / f"{notebook_hash(secret=secret, notebook_id=NOTEBOOK)}.html"
    secrets = [home1 / NOTEBOOK / f"{NOTEBOOK}.ipynb", submission / f"{NOTEBOOK}.ipynb",
               submission / "submission_secret.txt", released_feedback,
               Path(pwd.getpwnam(instructor).pw_dir) / "course" / "source" / NOTEBOOK / f"{NOTEBOOK}.ipynb",
               RUN / "jupyterhub_cookie_secret", RUN / "proxy_token", RUN / "accounts.json"]
    proxy_pid = (RUN / "proxy.pid").read_text().strip()
    secrets.append(Path(f"/proc/{proxy_pid}/environ"))  # CONFIGPROXY_AUTH_TOKEN
    for path in secrets:
        assert path.exists(), path
        read = as_user(s2, "cat", str(path))
        assert read.returncode != 0 and "Permission denied" in read.stderr, f"{s2} could read {path}"
    assert as_user(s2, "ls", str(inbound)).returncode != 0
    assert as_user(s1, "cat", str(released_feedback)).returncode == 0  # its owner reads it
    assert not list(inbound.glob(f"{s2}+*")), "student 2 submitted nothing"

    # Graded mode: the students' environment has tapelab without the answers.
    graded_mode = as_user(s2, str(build.ENV / "bin" / "python"), "-c",
                          "import importlib.util\n"
                          "assert importlib.util.find_spec('tapelab_answers') is None\n"
                          "from tapelab.exercises.basic_tape import ex1_1\n"
                          "ex1_1.solution()\n")
    assert graded_mode.returncode == 0 and "is locked for this course" in graded_mode.stdout, graded_mode
    report = json.loads(as_user(instructor, "cat", str(Path(pwd.getpwnam(instructor).pw_dir) / "course"
                                                         / "report.json")).stdout)
    assert report, "tapelab grade wrote its report into the instructor's course folder"
    (REPO / "test-output").mkdir(exist_ok=True)
    (REPO / "test-output" / "hub-timings.json").write_text(json.dumps(timings, indent=2))


# Issue 48's attacks, on this hub, after the walk (they use its submission and grading round) and before it stops.
pytest.register_assert_rewrite("hub_attacks")
from hub_attacks import (  # noqa: E402,F401  (collected here, in this order)
    attack_round, test_class_1_student_script_never_runs_in_formgrader_and_root_never_runs_instructor_code,
    test_class_2_collect_trusts_only_what_students_cannot_set,
    test_class_3_one_students_folders_never_stop_grading_for_the_class,
    test_class_4_students_cannot_reach_answers_hidden_values_or_the_grading_course,
    test_class_5_a_student_is_held_to_their_own_share, test_class_5_a_stopped_server_leaves_no_process_of_its_user)

RESISTER = """
import os, signal, sys, time
def on_term(*_):
    if os.fork() == 0:
        time.sleep(600)
signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
if os.fork() == 0:
    os.kill(os.getpid(), signal.SIGSTOP)
sys.stdout.write("resisting\\n"); sys.stdout.flush()
while True:
    time.sleep(1)
"""


def test_hub_stop_leaves_no_process_and_no_demo_user(hub) -> None:
    """(Runs last, in the same hub: this stops it, then looks.) A student's process that forks on SIGTERM,
    ignores SIGHUP and keeps a stopped child ends with the rest (issue 48, class 6)."""
    names = [hub["accounts"]["instructor"]["name"], *(s["name"] for s in hub["accounts"]["students"])]
    uids = {pwd.getpwnam(name).pw_uid for name in names}
    hub_pid = int((RUN / "jupyterhub.pid").read_text())
    proxy_pid = int((RUN / "proxy.pid").read_text())
    resister = subprocess.Popen(["runuser", "-u", names[2], "--", "setsid", str(build.ENV / "bin" / "python"), "-c",
                                 RESISTER], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert resister.stdout.readline() == b"resisting\n"  # forks on SIGTERM, ignores SIGHUP, a child stopped
    down = make("hub-stop")
    resister.wait(timeout=60)
    assert down.returncode == 0, down.stdout + down.stderr
    left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _owned(p, uids) and not _zombie(p)]
    assert not left, f"processes of the demo users are left: {left}"
    for pid in (hub_pid, proxy_pid):
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    for name in names:
        with pytest.raises(KeyError):
            pwd.getpwnam(name)
        assert not Path("/home", name).exists()
    assert not EXCHANGE.exists() and not RUN.exists() and not ACCOUNTS.exists()


def _zombie(path: Path) -> bool:
    """Whether the process has ended and only waits to be reaped (an orphan's parent here may never reap it)."""
    try:
        return (path / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _owned(path: Path, uids: set[int]) -> bool:
    try:
        return path.stat().st_uid in uids
    except OSError:
        return False
