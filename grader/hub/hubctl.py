"""`make hub`, `make hub-grade` and `make hub-stop`: the course on a JupyterHub, on this machine, as root.

start: refuse a checkout whose solutions/ or answers/ other users can reach; build the hub's environment
(grader/hub/build.py); make the demo users (an instructor and N students, each home a size-capped tmpfs,
marked as the hub's in their GECOS field); lay out the grading course from solutions/ in root's own
folder (GRADING), with per-student variants unless `--variants notebook` (each student's kernel takes its
numbers from JUPYTERHUB_USER; the grader from the folder the checked collect puts the submission in, which is
named for its owner), and hand the instructor a copy; put the exchange on a tmpfs of its own, its top folder
root's, with the course's folder and a sticky inbound/ made before the instructor releases every notebook
into it; start JupyterHub on 127.0.0.1 in the background (servers limited by grader/hub/limits.py) and
return once it answers; the accounts go to grader/hub/accounts.json.
grade: collect an assignment with the checked collect (grader/hub/collect.py) into root's grading course,
take the instructor's gradebook (as the instructor reads it, so manual grades are kept), grade with
`tapelab grade` (as root: the sandbox needs it; on a course and config only root can write), make every
notebook the instructor will see inert, hand the results to the instructor, and release the feedback as
the instructor, except for a tampered or doubtful submission.
stop: end the hub and every process of the demo users (a bounded loop that no process can outlast), then
always remove the users, their homes, the exchange, run/, the grading course and the accounts.
Run with the checkout's venv (tapelab lays out the course); nothing a user can write is run by root.
"""
from __future__ import annotations

import argparse
import json
import os
import pwd
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from build import ENV, ROOT, build
from collect import collect, held
from limits import end_user, processes_of, remove_groups
from users import (demo_users, fail, hand_over, home, make_user, mount_tmpfs, open_to_others, run, say,
                   take_from, unmount)

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RUN = ROOT / "run"
EXCHANGE = ROOT / "exchange"
GRADING = ROOT / "grading"  # root's alone: the course `tapelab grade` runs on, its config root's
ACCOUNTS_COPY = HERE / "accounts.json"
COURSE_ID = "tapelab"
INSTRUCTOR = "tl-instructor"
SECRET_PLACES = ("solutions", "answers", "grader/course")  # what students must not reach in the checkout
VARIANTS = ("per-student", "notebook")  # tapelab.release_variants' settings (imported late: stop needs no tapelab)
SIZES_MB = {"student": int(os.environ.get("HUB_HOME_MB", "512")),
            "instructor": int(os.environ.get("HUB_INSTRUCTOR_HOME_MB", "2048")),
            "exchange": int(os.environ.get("HUB_EXCHANGE_MB", "1024"))}
HUB_EXCHANGE_CONFIG = f'''
# The course hub's exchange, shared with the students (`make hub`, grader/hub/hubctl.py). Root owns its top
# folder, so no student can make a course there; groupshared spares nbgrader's demand that it be world-writable.
c.Exchange.root = "{EXCHANGE}"
c.CourseDirectory.groupshared = True
'''
# Run as the instructor in the hub's environment: release each named assignment into the exchange.
RELEASE = '''
import sys
from pathlib import Path
from nbgrader.coursedir import CourseDirectory
from nbgrader.exchange import ExchangeFactory
from tapelab.release import course_config
config = course_config(Path(sys.argv[1]))
config.ExchangeReleaseAssignment.force = True
for name in sys.argv[2:]:
    ExchangeFactory(config=config).ReleaseAssignment(
        coursedir=CourseDirectory(config=config, assignment_id=name), config=config).start()
'''


def accounts(students: int, port: int) -> dict:
    """The accounts of a running set-up, or new ones (a password each)."""
    saved = RUN / "accounts.json"
    if saved.is_file():
        return json.loads(saved.read_text())
    names = [INSTRUCTOR, *(f"tl-student{i}" for i in range(1, students + 1))]
    people = [{"name": name, "password": secrets.token_urlsafe(12)} for name in names]
    return {"url": f"http://127.0.0.1:{port}", "course": COURSE_ID, "instructor": people[0], "students": people[1:]}


def check_checkout() -> None:
    """Stop when another user can reach the checkout's solutions, answers or a course laid out in it."""
    open_places = [str(REPO / place) for place in SECRET_PLACES if open_to_others(REPO / place)]
    if open_places:
        fail(f"every user of this machine can read {', '.join(open_places)}: the hub's students would read the "
             f"answers and hidden tests. Close them (`chmod o-rwx {' '.join(open_places)}`, or `chmod 700 {REPO}`), "
             "then run `make hub` again")


def lay_out_course(instructor: str, variants: str) -> None:
    """Root's grading course (its config root's; `variants` a setting of tapelab.release_variants), then the
    instructor's copy of it (its variants.key included: the instructor's to back up) and formgrader settings."""
    from tapelab.paths import assignment_names
    from tapelab.release import CONFIG_FILE, prepare_course
    from tapelab.release_variants import KEY_FILE

    GRADING.mkdir(parents=True, exist_ok=True)
    os.chmod(GRADING, 0o700)
    course = GRADING / "course"
    if not (course / CONFIG_FILE).is_file():
        say(f"laying out the grading course in {course} from solutions/ ({variants} variants; nbgrader, a few "
            "seconds a notebook)")
        prepare_course(course, assignment_names(), exchange=False, variants=variants)
    with tempfile.TemporaryDirectory(dir=GRADING) as staging:
        given = Path(staging)
        shutil.copytree(course, given / "course", ignore=shutil.ignore_patterns("exchange", "submitted", "autograded",
                                                                              "feedback", "*.json", "*.csv", "*.log"))
        (given / "course" / CONFIG_FILE).write_text((course / CONFIG_FILE).read_text() + HUB_EXCHANGE_CONFIG)
        (given / ".jupyter").mkdir()
        (given / ".jupyter" / "nbgrader_config.py").write_text(  # formgrader's course, as nbgrader's hub guide has it
            f'c = get_config()\nc.CourseDirectory.root = "{home(instructor) / "course"}"\n'
            f'c.CourseDirectory.course_id = "{COURSE_ID}"\n{HUB_EXCHANGE_CONFIG}')
        answers = given / ".tapelab" / "answers" / "tapelab_answers"  # on the instructor's PYTHONPATH
        shutil.copytree(REPO / "answers" / "src" / "tapelab_answers", answers)
        hand_over(given, instructor, home(instructor))
    if (course / KEY_FILE).is_file():  # the instructor's tar gave it their umask: the secret is theirs alone
        run("chmod", "600", home(instructor) / "course" / KEY_FILE, user=instructor)


def set_up_exchange(instructor: str) -> None:
    """The exchange on a tmpfs of its own: its top folder root's (0755), the course's folder the instructor's,
    inbound/ sticky (no student renames or removes another's submission); then every notebook released."""
    from tapelab.paths import assignment_names

    mount_tmpfs(EXCHANGE, SIZES_MB["exchange"], 0o755)
    entry = pwd.getpwnam(instructor)
    course = EXCHANGE / COURSE_ID
    for folder, mode in ((course, 0o755), (course / "inbound", 0o3733), (course / "feedback", 0o711)):
        folder.mkdir(exist_ok=True)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
        os.chmod(folder, mode)
    say(f"releasing {len(assignment_names())} notebooks into the exchange {EXCHANGE}")
    course_home = home(instructor) / "course"
    run(ENV / "bin" / "python", "-P", "-c", RELEASE, course_home, *assignment_names(), user=instructor,
        cwd=course_home)


def hub_pid() -> int | None:
    try:
        pid = int((RUN / "jupyterhub.pid").read_text())
    except (OSError, ValueError):
        return None
    return pid if alive(pid) else None


def answers_at(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/hub/api", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def start_hub(port: int) -> float:
    """Start JupyterHub (it starts the proxy) in the background; return the seconds until it answered."""
    token = RUN / "proxy_token"
    if not token.exists():
        token.write_text(secrets.token_hex(32))
    os.chmod(token, 0o600)
    env = {"PATH": f"{ROOT / 'proxy' / 'node_modules' / '.bin'}:{ENV / 'bin'}:/usr/bin:/bin",
           "TAPELAB_HUB_ROOT": str(ROOT), "TAPELAB_HUB_PORT": str(port), "LANG": "C.UTF-8",
           **{f"TAPELAB_{name}": os.environ[name] for name in ("HUB_MEMORY_MB", "HUB_TASKS", "HUB_CPUS")
              if name in os.environ}}
    started = time.monotonic()
    with open(RUN / "jupyterhub.log", "ab") as log:
        process = subprocess.Popen([str(ENV / "bin" / "jupyterhub"), "-f", str(HERE / "jupyterhub_config.py")],
                                   cwd=RUN, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                   start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    while not answers_at(url):
        if process.poll() is not None or time.monotonic() - started > 90:
            process.kill()
            tail = (RUN / "jupyterhub.log").read_text(errors="replace")[-1500:]
            fail(f"JupyterHub did not answer at {url} (see {RUN / 'jupyterhub.log'}):\n{tail}")
        time.sleep(0.25)
    return time.monotonic() - started


def start(students: int, port: int, variants: str = VARIANTS[0]) -> None:
    if os.geteuid() != 0:
        fail("`make hub` makes Unix users and runs servers as them: run it as root (sudo make hub)")
    if not shutil.which("runuser") or not shutil.which("useradd"):
        fail("runuser and useradd are missing: install util-linux and passwd (apt-get install util-linux passwd)")
    check_checkout()
    build(REPO, EXCHANGE)
    RUN.mkdir(parents=True, exist_ok=True)
    os.chmod(RUN, 0o700)
    people = accounts(students, port)
    if hub_pid() and answers_at(people["url"]):
        say(f"already running at {people['url']} (`make hub-stop` ends it)")
        return show(people)
    instructor = people["instructor"]["name"]
    make_user(instructor, SIZES_MB["instructor"])
    for student in people["students"]:
        make_user(student["name"], SIZES_MB["student"])
    saved = RUN / "accounts.json"
    saved.write_text(json.dumps(people, indent=2))
    os.chmod(saved, 0o600)
    lay_out_course(instructor, variants)
    set_up_exchange(instructor)
    seconds = start_hub(int(people["url"].rsplit(":", 1)[1]))
    say(f"JupyterHub answered {seconds:.1f} s after it started")
    show(people)


def show(people: dict) -> None:
    ACCOUNTS_COPY.write_text(json.dumps(people, indent=2) + "\n")
    os.chmod(ACCOUNTS_COPY, 0o600)
    say(f"{people['url']}  course {people['course']}  (accounts in {ACCOUNTS_COPY})")
    for role, person in [("instructor", people["instructor"]), *(("student", s) for s in people["students"])]:
        print(f"  {role:<10} {person['name']:<14} {person['password']}")


def grade(assignment: str) -> None:
    """Checked collect, grading in root's course, inert results handed to the instructor, feedback released."""
    from tapelab.grading.handback.inert import inert_folder

    people = json.loads((RUN / "accounts.json").read_text()) if (RUN / "accounts.json").is_file() else None
    if people is None:
        fail("no hub is set up here: run `make hub` first")
    instructor = people["instructor"]["name"]
    course = GRADING / "course"
    students = {pwd.getpwnam(s["name"]).pw_uid: s["name"] for s in people["students"]}
    (course / "submitted").mkdir(exist_ok=True)
    rows = collect(EXCHANGE / COURSE_ID / "inbound", assignment, students, [assignment], course / "submitted")
    counts = {status: sum(row["status"] == status for row in rows) for status in {row["status"] for row in rows}}
    say(f"collected {assignment}: {counts or 'no submission'}; grading with tapelab")
    gradebook = take_from(instructor, home(instructor) / "course" / "gradebook.db")
    if gradebook:  # the instructor's manual grades and comments, as data: nothing in it is run
        (course / "gradebook.db").write_bytes(gradebook)
    status = subprocess.run([str(Path(sys.executable).parent / "tapelab"), "grade", str(course / "submitted"),
                             "--course", str(course)]).returncode
    with tempfile.TemporaryDirectory(dir=GRADING) as staging:
        given = Path(staging) / "course"
        given.mkdir()
        for name in ("autograded", "submitted", "feedback"):  # feedback pages are inert as tapelab writes them
            if (course / name).is_dir():
                shutil.copytree(course / name, given / name, symlinks=True)
                if name != "feedback":
                    inert_folder(given / name)
        for name in ("gradebook.db", "report.json", "grades.csv"):
            if (course / name).is_file():
                shutil.copy(course / name, given / name)
        (given / f"collect-{assignment}.json").write_text(json.dumps(rows, indent=2, ensure_ascii=False))
        withheld = hold_back(given, assignment, rows)
        hand_over(given, instructor, home(instructor) / "course")
    for student in withheld:  # an earlier round's page must not go out in its place
        run("rm", "-rf", home(instructor) / "course" / "feedback" / student / assignment, user=instructor)
    if status != 0:
        fail(f"`tapelab grade` exited {status}: see {home(instructor) / 'course' / 'report.json'}")
    run(ENV / "bin" / "nbgrader", "release_feedback", assignment, user=instructor, cwd=home(instructor) / "course")
    close_feedback(course, assignment)
    say(f"feedback on {assignment} released: students fetch it in their Assignments tab"
        + (f"; held back for review: {', '.join(sorted(withheld))}" if withheld else ""))


def hold_back(course: Path, assignment: str, rows: list[dict]) -> set[str]:
    """Remove the feedback of every student whose submission was tampered with or whose secret is doubtful
    (their pages would not be released); return those students."""
    report = json.loads((course / "report.json").read_text()) if (course / "report.json").is_file() else {}
    tampered = {entry["student"] for entry in report.get("submissions", [])
                if entry.get("status") == "tampered" and entry.get("assignment") == assignment}
    withheld = (tampered | held(rows)) & {p.name for p in (course / "feedback").glob("*")}
    for student in withheld:
        shutil.rmtree(course / "feedback" / student / assignment, ignore_errors=True)
    return withheld


def close_feedback(course: Path, assignment: str) -> None:
    """Make each released feedback page readable by its student's group alone (nbgrader leaves it 0644,
    hidden only by its name). The page is the instructor's: it is changed through a descriptor opened without
    following links, and only if it is a regular file."""
    from nbgrader.utils import notebook_hash

    released_to = EXCHANGE / COURSE_ID / "feedback"
    for page in course.glob(f"feedback/*/{assignment}/*.html"):
        student = page.parent.parent.name
        secret = (course / "submitted" / student / assignment / "submission_secret.txt").read_text()
        name = f"{notebook_hash(secret=secret, notebook_id=page.stem)}.html"
        try:
            fd = os.open(released_to / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
                os.fchown(fd, -1, pwd.getpwnam(student).pw_gid)
                os.fchmod(fd, 0o640)
        finally:
            os.close(fd)


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, whose parent has gone without reaping it, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def end(pid: int, grace: float = 15.0) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds."""
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        return
    deadline = time.monotonic() + grace
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(pid):
        os.kill(pid, signal.SIGKILL)


def stop() -> None:
    """End everything; whatever fails, remove the users, homes, exchange, run/, grading course and accounts."""
    if os.geteuid() != 0:
        fail("`make hub-stop` removes Unix users: run it as root (sudo make hub-stop)")
    users = demo_users()
    left: list[str] = []
    try:
        pid = hub_pid()
        if pid:
            end(pid)  # JupyterHub stops every user's server and the proxy it started
        try:
            end(int((RUN / "proxy.pid").read_text()))  # the proxy outlives a hub killed with SIGKILL
        except (OSError, ValueError):
            pass
    finally:
        for user in users:
            if not end_user(user.pw_uid, user.pw_gid):
                left.append(f"{user.pw_name} ({len(processes_of(user.pw_uid))} processes)")
            unmount(Path(user.pw_dir))
            subprocess.run(["userdel", "--force", "--remove", user.pw_name], capture_output=True)
            remove_groups(user.pw_name)
        unmount(EXCHANGE)
        for folder in (EXCHANGE, RUN, GRADING):
            shutil.rmtree(folder, ignore_errors=True)
        ACCOUNTS_COPY.unlink(missing_ok=True)
    gone = [u.pw_name for u in users if not _exists(u.pw_name)]
    say(f"stopped; removed {len(gone)} demo user(s) and their homes" + (f" ({', '.join(gone)})" if gone else ""))
    if left or len(gone) != len(users):
        fail(f"processes outlived every kill: {', '.join(left) or 'none'}; users left: "
             f"{', '.join(u.pw_name for u in users if u.pw_name not in gone) or 'none'}")


def _exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    up = sub.add_parser("start")
    up.add_argument("--students", type=int, default=3)
    up.add_argument("--port", type=int, default=8000)
    up.add_argument("--variants", choices=VARIANTS, default=VARIANTS[0],
                    help="each student their own numbers (the default), or the notebook's for everyone")
    sub.add_parser("grade").add_argument("assignment")
    sub.add_parser("stop")
    args = parser.parse_args()
    if args.verb == "start":
        start(args.students, args.port, args.variants)
    elif args.verb == "grade":
        grade(args.assignment)
    else:
        stop()


if __name__ == "__main__":
    main()
