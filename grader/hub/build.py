"""What the course hub runs, built outside the checkout (a clone may sit in a 0700 folder) and readable by all.

ROOT (TAPELAB_HUB_ROOT, default /srv/tapelab-hub):
  env/             one venv on Debian's /usr/bin/python3 (an interpreter under root's home cannot be run by
                   students): the course section of the lock, grader/hub/requirements.txt (JupyterHub),
                   tapelab installed as a copy WITHOUT the answers distribution, and grader/hub/exchange.py
                   as `tapelab_hub_exchange`. Every server runs from it; the instructor's adds the answers.
  student-config/  binder/jupyter's settings (no formgrader, no Create Assignment) and the students'
                   nbgrader_config.py (the exchange, the closing submit)
                   JupyterLab's defaults (LAB_DEFAULTS) go in its share/jupyter/lab/settings/overrides.json.
  proxy/           configurable-http-proxy from npm, as grader/hub/package-lock.json pins it
Each part is rebuilt only when what it is made from changed (a stamp holds a digest of its inputs).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(os.environ.get("TAPELAB_HUB_ROOT", "/srv/tapelab-hub"))
ENV = ROOT / "env"
BASE_PYTHON = "/usr/bin/python3"
HERE = Path(__file__).resolve().parent
STAMP = ".tapelab-hub-stamp"
# The lock's pins that Debian's Python 3.11.2 cannot use, and what the hub's environment takes instead.
DEBIAN_PINS = {"soupsieve": "soupsieve==2.8.3"}  # 3.x needs Python >= 3.11.5 (its `re` possessive quantifiers)

# JupyterLab defaults for every user of the hub: no calls home (news, update checks) from the page or the server.
LAB_DEFAULTS = {"@jupyterlab/apputils-extension:notification": {"checkForUpdates": False, "fetchNews": "false"}}


def digest(*paths: Path) -> str:
    """A digest of the files, and of every file under the folders, among `paths`: their names (a folder's files
    by their place in it) and contents, never where the checkout lies, so another clone of the same code finds
    the parts built and rebuilds nothing."""
    sha = hashlib.sha256()
    for path in paths:
        for file in sorted([path] if path.is_file() else (p for p in path.rglob("*") if p.is_file())):
            name = file.name if file == path else file.relative_to(path).as_posix()
            if "__pycache__" not in file.parts and ".egg-info" not in name:
                sha.update(name.encode() + b"\0" + file.read_bytes())
    return sha.hexdigest()


def fresh(folder: Path, stamp: str) -> bool:
    return (folder / STAMP).is_file() and (folder / STAMP).read_text() == stamp


def check(command: list[str], what: str, cwd: Path | None = None) -> None:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        print(f"hub: error: {what} failed: `{' '.join(command)}` exited {result.returncode}:\n"
              f"{(result.stderr or result.stdout)[-3000:]}", file=sys.stderr)
        raise SystemExit(1)


def course_requirements(repo: Path) -> str:
    """binder/requirements.txt (the lock's course section) with DEBIAN_PINS in place of the pins they name."""
    lines = []
    for line in (repo / "binder" / "requirements.txt").read_text().splitlines():
        name = line.split("==")[0].strip().lower()
        lines.append(DEBIAN_PINS.get(name, line))
    return "\n".join(lines) + "\n"


def build_env(repo: Path) -> None:
    """The venv every server runs from; tapelab is reinstalled alone when only its code changed."""
    deps = digest(repo / "binder" / "requirements.txt", HERE / "requirements.txt")
    code = digest(repo / "src", repo / "pyproject.toml", HERE / "exchange.py", Path(__file__))
    built = (ENV / STAMP).read_text().split("\n") if (ENV / STAMP).is_file() else []
    if built == [deps, code]:
        return
    # uv, which `make venv` puts beside the checkout's Python, installs the pins as pip would, from its own cache.
    uv = Path(sys.executable).with_name("uv")
    if not uv.is_file():
        print(f"hub: error: uv is missing beside {sys.executable}, and it installs the hub's environment: `make venv` "
              "installs it (a venv made before it did: remove .venv, then run `make hub` again)", file=sys.stderr)
        raise SystemExit(1)
    install = [str(uv), "pip", "install", "--python", str(ENV / "bin" / "python"), "-q", "--compile-bytecode"]
    if built[:1] != [deps]:
        print(f"hub: building the hub's environment in {ENV} (TensorFlow and all: about 20 s from uv's cache)",
              flush=True)
        shutil.rmtree(ENV, ignore_errors=True)
        check([BASE_PYTHON, "-m", "venv", str(ENV)], "making the venv")
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as requirements:
            requirements.write(course_requirements(repo))
            requirements.flush()
            check([*install, "-r", requirements.name, "-r", str(HERE / "requirements.txt")], "installing the course's packages")
    # A copy of tapelab (not editable: nothing may point into the checkout), and never the answers.
    with tempfile.TemporaryDirectory() as tmp:
        check([*install, "--no-deps", "--reinstall", "--no-cache", str(repo)], "installing tapelab", cwd=Path(tmp))
    site = Path(subprocess.run([str(ENV / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    shutil.copy(HERE / "exchange.py", site / "tapelab_hub_exchange.py")
    settings = ENV / "share" / "jupyter" / "lab" / "settings"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "overrides.json").write_text(json.dumps(LAB_DEFAULTS, indent=2))
    check(["chmod", "-R", "a+rX,go-w", str(ENV)], "opening the environment to every user")
    (ENV / STAMP).write_text(f"{deps}\n{code}")


def build_student_config(repo: Path, exchange: Path) -> None:
    """binder/jupyter plus the students' nbgrader_config.py, on every student's JUPYTER_CONFIG_PATH."""
    target = ROOT / "student-config"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(repo / "binder" / "jupyter", target)
    (target / "nbgrader_config.py").write_text(
        "# The students' nbgrader settings on the course hub (grader/hub/build.py writes this file).\n"
        "c = get_config()\n"
        f'c.Exchange.root = "{exchange}"\n'
        "# The exchange's top folder is root's (no student makes a course there): groupshared spares nbgrader's\n"
        "# demand that it be world-writable.\n"
        "c.CourseDirectory.groupshared = True\n"
        '# nbgrader\'s submit, then the submission closed to other students (grader/hub/exchange.py).\n'
        'c.ExchangeFactory.submit = "tapelab_hub_exchange.PrivateSubmit"\n')
    check(["chmod", "-R", "a+rX,go-w", str(target)], "opening the students' settings to every user")


def build_proxy() -> None:
    """configurable-http-proxy, installed by `npm ci` from grader/hub's package-lock.json."""
    proxy = ROOT / "proxy"
    stamp = digest(HERE / "package.json", HERE / "package-lock.json")
    if fresh(proxy, stamp):
        return
    if not shutil.which("npm"):
        print("hub: error: npm is missing, and JupyterHub's proxy comes from npm: apt-get install -y npm",
              file=sys.stderr)
        raise SystemExit(1)
    shutil.rmtree(proxy, ignore_errors=True)
    proxy.mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(HERE / name, proxy / name)
    check(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], "installing configurable-http-proxy", cwd=proxy)
    (proxy / STAMP).write_text(stamp)


def build(repo: Path, exchange: Path) -> None:
    ROOT.mkdir(parents=True, exist_ok=True)
    os.chmod(ROOT, 0o755)
    build_env(repo)
    build_student_config(repo, exchange)
    build_proxy()
