"""`make hub`, `make hub-grade` and `make hub-stop`: the course on a JupyterHub, on this machine, as root.

start: build the hub's environment (grader/hub/build.py), make the demo users (an instructor and N
students, homes 0700, marked as the hub's in their GECOS field), lay out the instructor's course
folder from solutions/, release every notebook into nbgrader's exchange, start JupyterHub on
127.0.0.1 in the background and return once it answers; the accounts go to grader/hub/accounts.json.
grade: collect an assignment as the instructor, grade it with `tapelab grade` (as root: the sandbox
needs it), hand the course folder back to the instructor and release the feedback through the exchange.
stop: end the hub and every process of the demo users, remove the users, their homes and the exchange.
Run with the checkout's venv (tapelab lays out the course); nothing the hub runs lives in the checkout.
"""
from __future__ import annotations

import argparse
import json
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from build import ENV, ROOT, build

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RUN = ROOT / "run"
EXCHANGE = ROOT / "exchange"
ACCOUNTS_COPY = HERE / "accounts.json"
MARKER = "tapelab hub demo user"  # the GECOS field of every user the hub made: only these are removed
COURSE_ID = "tapelab"
INSTRUCTOR = "tl-instructor"
HUB_EXCHANGE_CONFIG = f'''
# The course hub's exchange, shared with the students (`make hub`, grader/hub/hubctl.py).
c.Exchange.root = "{EXCHANGE}"
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


def say(message: str) -> None:
    print(f"hub: {message}", flush=True)


def fail(message: str) -> None:
    print(f"hub: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(1)


def run(*args: str | Path, user: str | None = None, cwd: Path | None = None) -> None:
    command = [*(["runuser", "-u", user, "--"] if user else []), *map(str, args)]
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"`{' '.join(command)}` failed ({result.returncode}): {(result.stderr or result.stdout).strip()[-2000:]}")


def demo_users() -> list[pwd.struct_passwd]:
    return [entry for entry in pwd.getpwall() if entry.pw_gecos == MARKER]


def home(name: str) -> Path:
    return Path(pwd.getpwnam(name).pw_dir)


def accounts(students: int, port: int) -> dict:
    """The accounts of a running set-up, or new ones (a password each)."""
    saved = RUN / "accounts.json"
    if saved.is_file():
        return json.loads(saved.read_text())
    names = [INSTRUCTOR, *(f"tl-student{i}" for i in range(1, students + 1))]
    people = [{"name": name, "password": secrets.token_urlsafe(12)} for name in names]
    return {"url": f"http://127.0.0.1:{port}", "course": COURSE_ID, "instructor": people[0], "students": people[1:]}


def make_user(name: str) -> None:
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        run("useradd", "--create-home", "--shell", "/bin/bash", "--comment", MARKER, name)
        entry = pwd.getpwnam(name)
    if entry.pw_gecos != MARKER:
        fail(f"user {name} exists and is not one of the hub's demo users: remove or rename it, then run `make hub`")
    os.chmod(entry.pw_dir, 0o700)  # useradd makes 0755 homes: a student could read the instructor's solutions


def chown_tree(path: Path, name: str) -> None:
    run("chown", "-R", f"{name}:{name}", path)


def lay_out_course(instructor: str) -> Path:
    """The instructor's course folder (source, release, gradebook, config naming the shared exchange)."""
    from tapelab.paths import assignment_names
    from tapelab.release import CONFIG_FILE, prepare_course

    course = home(instructor) / "course"
    if not (course / CONFIG_FILE).is_file():
        say(f"laying out the course in {course} from solutions/ (nbgrader, a few seconds a notebook)")
        prepare_course(course, assignment_names(), exchange=False)
        with open(course / CONFIG_FILE, "a") as config:
            config.write(HUB_EXCHANGE_CONFIG)
    jupyter = home(instructor) / ".jupyter"
    jupyter.mkdir(exist_ok=True)
    (jupyter / "nbgrader_config.py").write_text(  # formgrader's course, as nbgrader documents it on a hub
        f'c = get_config()\nc.CourseDirectory.root = "{course}"\nc.CourseDirectory.course_id = "{COURSE_ID}"\n')
    answers = home(instructor) / ".tapelab" / "answers"  # on the instructor's PYTHONPATH (jupyterhub_config.py)
    shutil.rmtree(answers, ignore_errors=True)
    shutil.copytree(REPO / "answers" / "src" / "tapelab_answers", answers / "tapelab_answers")
    for path in (course, jupyter, answers.parent):
        chown_tree(path, instructor)
    return course


def set_up_exchange(course: Path, instructor: str) -> None:
    """The exchange root as nbgrader documents it (everyone may write), sticky so no one removes another's folder."""
    from tapelab.paths import assignment_names

    EXCHANGE.mkdir(parents=True, exist_ok=True)
    os.chmod(EXCHANGE, 0o1777)
    say(f"releasing {len(assignment_names())} notebooks into the exchange {EXCHANGE}")
    run(ENV / "bin" / "python", "-c", RELEASE, course, *assignment_names(), user=instructor, cwd=course)


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
           "TAPELAB_HUB_ROOT": str(ROOT), "TAPELAB_HUB_PORT": str(port), "LANG": "C.UTF-8"}
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


def start(students: int, port: int) -> None:
    if os.geteuid() != 0:
        fail("`make hub` makes Unix users and runs servers as them: run it as root (sudo make hub)")
    if not shutil.which("runuser") or not shutil.which("useradd"):
        fail("runuser and useradd are missing: install util-linux and passwd (apt-get install util-linux passwd)")
    build(REPO, EXCHANGE)
    RUN.mkdir(parents=True, exist_ok=True)
    os.chmod(RUN, 0o700)
    people = accounts(students, port)
    if hub_pid() and answers_at(people["url"]):
        say(f"already running at {people['url']} (`make hub-stop` ends it)")
        return show(people)
    instructor = people["instructor"]["name"]
    for person in [people["instructor"], *people["students"]]:
        make_user(person["name"])
    for student in people["students"]:  # so that `nbgrader collect` reads their closed submissions
        run("usermod", "--append", "--groups", student["name"], instructor)
    saved = RUN / "accounts.json"
    saved.write_text(json.dumps(people, indent=2))
    os.chmod(saved, 0o600)
    course = lay_out_course(instructor)
    set_up_exchange(course, instructor)
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
    """Collect, grade with tapelab (sandboxed, as root), give the folder back, release feedback."""
    people = json.loads((RUN / "accounts.json").read_text()) if (RUN / "accounts.json").is_file() else None
    if people is None:
        fail("no hub is set up here: run `make hub` first")
    instructor = people["instructor"]["name"]
    course = home(instructor) / "course"
    nbgrader = ENV / "bin" / "nbgrader"
    run(nbgrader, "collect", assignment, user=instructor, cwd=course)
    say(f"collected {assignment}; grading with tapelab")
    status = subprocess.run([str(Path(sys.executable).parent / "tapelab"), "grade", str(course / "submitted"),
                             "--course", str(course)]).returncode
    chown_tree(course, instructor)
    if status != 0:
        fail(f"`tapelab grade` exited {status}: see {course / 'report.json'}")
    run(nbgrader, "release_feedback", assignment, user=instructor, cwd=course)
    close_feedback(course, assignment)
    say(f"feedback on {assignment} released: students fetch it in their Assignments tab")


def close_feedback(course: Path, assignment: str) -> None:
    """Make each released feedback page readable by its student's group alone (nbgrader leaves it 0644,
    hidden only by its name, which derives from the submission's secret)."""
    from nbgrader.utils import notebook_hash

    for page in course.glob(f"feedback/*/{assignment}/*.html"):
        student = page.parent.parent.name
        secret = (page.parent / "submission_secret.txt").read_text()
        released = EXCHANGE / COURSE_ID / "feedback" / f"{notebook_hash(secret=secret, notebook_id=page.stem)}.html"
        if released.is_file():
            os.chown(released, -1, pwd.getpwnam(student).pw_gid)
            os.chmod(released, 0o640)


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


def processes_of(uids: set[int]) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid in uids:
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def stop() -> None:
    if os.geteuid() != 0:
        fail("`make hub-stop` removes Unix users: run it as root (sudo make hub-stop)")
    pid = hub_pid()
    if pid:
        end(pid)  # JupyterHub stops every user's server and the proxy it started
    try:
        end(int((RUN / "proxy.pid").read_text()))  # the proxy outlives a hub killed with SIGKILL
    except (OSError, ValueError):
        pass
    users = demo_users()
    for pid in processes_of({u.pw_uid for u in users}):
        end(pid, grace=3.0)
    for user in users:
        run("userdel", "--remove", user.pw_name)
    shutil.rmtree(EXCHANGE, ignore_errors=True)
    shutil.rmtree(RUN, ignore_errors=True)
    ACCOUNTS_COPY.unlink(missing_ok=True)
    say(f"stopped; removed {len(users)} demo user(s) and their homes"
        + (f" ({', '.join(u.pw_name for u in users)})" if users else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    up = sub.add_parser("start")
    up.add_argument("--students", type=int, default=3)
    up.add_argument("--port", type=int, default=8000)
    sub.add_parser("grade").add_argument("assignment")
    sub.add_parser("stop")
    args = parser.parse_args()
    if args.verb == "start":
        start(args.students, args.port)
    elif args.verb == "grade":
        grade(args.assignment)
    else:
        stop()


if __name__ == "__main__":
    main()
