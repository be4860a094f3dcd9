"""JupyterHub configuration of the tapelab course hub, as `make hub` runs it (grader/hub/hubctl.py).

Everything listens on 127.0.0.1. Each demo account has a password of its own (one shared password, as
SharedPasswordAuthenticator has, would let any student log in as another); each user's server runs as
that Unix user (LocalProcessSpawner) from the hub's environment, which has tapelab without the answers.
Students get binder/jupyter's settings (no formgrader, no Create Assignment) and the course's exchange;
the instructor gets formgrader and the answers. What a real deployment changes is in
docs/instructor-guide.md, "Running the course on a hub".
"""
import hmac
import importlib.util
import json
import os
from pathlib import Path

from jupyterhub.auth import Authenticator
from traitlets import Dict

ROOT = Path(os.environ.get("TAPELAB_HUB_ROOT", "/srv/tapelab-hub"))
RUN = ROOT / "run"  # root-only: accounts, hub database, cookie secret, proxy token, logs
ENV = ROOT / "env"
PORT = int(os.environ.get("TAPELAB_HUB_PORT", "8000"))
ACCOUNTS = json.loads((RUN / "accounts.json").read_text())
INSTRUCTOR = ACCOUNTS["instructor"]["name"]
MEMORY_BYTES = int(os.environ.get("TAPELAB_HUB_MEMORY_MB", "2048")) * 1024**2  # a student's; the instructor's twice
# grader/hub/limits.py (root's), loaded by its path: nothing else of grader/hub lands on the hub's sys.path.
_spec = importlib.util.spec_from_file_location("tapelab_hub_limits", Path(__file__).resolve().with_name("limits.py"))
limits = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(limits)


class DemoAuthenticator(Authenticator):
    """A password per account, compared in constant time."""

    passwords = Dict(config=True, help="user name -> password")

    async def authenticate(self, handler, data):
        expected = self.passwords.get(data.get("username", ""))
        given = data.get("password", "")
        if expected and hmac.compare_digest(expected.encode(), given.encode()):
            return data["username"]
        return None


def pre_spawn_hook(spawner):
    """The instructor's server gets the answers; a student's gets the students' Jupyter settings."""
    home = Path(f"~{spawner.user.name}").expanduser()
    extra = ({"PYTHONPATH": str(home / ".tapelab" / "answers")} if spawner.user.name == INSTRUCTOR
             else {"JUPYTER_CONFIG_PATH": str(ROOT / "student-config")})
    spawner.environment = {**spawner.environment, **extra}
    if spawner.user.name == INSTRUCTOR:  # formgrader and the whole course: more room than a student's
        spawner.memory_bytes = 2 * MEMORY_BYTES  # from the setting, not the last start's (hooks run every start)


c = get_config()  # noqa: F821 - provided by JupyterHub when it loads this file

c.JupyterHub.authenticator_class = DemoAuthenticator
c.DemoAuthenticator.passwords = {p["name"]: p["password"] for p in [ACCOUNTS["instructor"], *ACCOUNTS["students"]]}
c.Authenticator.allowed_users = set(c.DemoAuthenticator.passwords)

c.JupyterHub.bind_url = f"http://127.0.0.1:{PORT}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{PORT + 2}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{PORT + 1}"
c.ConfigurableHTTPProxy.command = [str(ROOT / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.auth_token = (RUN / "proxy_token").read_text().strip()
c.ConfigurableHTTPProxy.pid_file = str(RUN / "proxy.pid")
c.JupyterHub.pid_file = str(RUN / "jupyterhub.pid")
c.JupyterHub.db_url = f"sqlite:///{RUN / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(RUN / "jupyterhub_cookie_secret")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every user's server

# Each server in its user's cgroups (memory, tasks, CPU) with a private /tmp; all its user's processes end
# with it (grader/hub/limits.py). The sizes come from `make hub` (HUB_MEMORY_MB, HUB_TASKS, HUB_CPUS).
c.JupyterHub.spawner_class = limits.spawner_class()
c.LimitedSpawner.memory_bytes = MEMORY_BYTES
c.LimitedSpawner.tasks = int(os.environ.get("TAPELAB_HUB_TASKS", "512"))
c.LimitedSpawner.cpus = float(os.environ.get("TAPELAB_HUB_CPUS", "1"))
c.Spawner.cmd = [str(ENV / "bin" / "jupyterhub-singleuser")]
c.Spawner.ip = "127.0.0.1"
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.Spawner.environment = {
    "PATH": f"{ENV / 'bin'}:/usr/local/bin:/usr/bin:/bin",  # nbgrader runs alembic from there
    "TF_CPP_MIN_LOG_LEVEL": "2",
    "TF_ENABLE_ONEDNN_OPTS": "0",
}
c.Spawner.pre_spawn_hook = pre_spawn_hook
