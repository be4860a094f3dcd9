"""The hub's demo users, their homes, and every file that crosses between root and a user (stdlib only).

Root never writes into, reads from or follows a path a user controls. What it hands a user goes as a tar
stream that the user's own `tar` unpacks (`hand_over`); what it takes from a user is what that user's
own `cat` prints (`take_from`). A planted link then reaches only what the user could reach anyway.

Each demo user's home is a tmpfs of its own with a size cap (`make_user`): a full home stops its owner
alone, never the hub's database, the exchange or another user.
"""
from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

MARKER = "tapelab hub demo user"  # the GECOS field of every user the hub made: only these are removed


def say(message: str) -> None:
    print(f"hub: {message}", flush=True)


def fail(message: str) -> None:
    print(f"hub: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(1)


def run(*args: str | Path, user: str | None = None, cwd: Path | None = None) -> bytes:
    """Run a command (as `user`, without privileges, when given); its output, or stop with its error."""
    command = [*(["runuser", "-u", user, "--"] if user else []), *map(str, args)]
    result = subprocess.run(command, cwd=cwd, capture_output=True)
    if result.returncode != 0:
        error = (result.stderr or result.stdout).decode(errors="replace").strip()[-2000:]
        fail(f"`{' '.join(command)}` failed ({result.returncode}): {error}")
    return result.stdout


def demo_users() -> list[pwd.struct_passwd]:
    return [entry for entry in pwd.getpwall() if entry.pw_gecos == MARKER]


def home(name: str) -> Path:
    return Path(pwd.getpwnam(name).pw_dir)


def mounted(path: Path) -> bool:
    target = str(path)
    with open("/proc/self/mounts") as mounts:
        return any(line.split()[1] == target for line in mounts)


def mount_tmpfs(path: Path, megabytes: int, mode: int, uid: int = 0, gid: int = 0) -> None:
    """A tmpfs of `megabytes` at `path` (made if missing), owned by uid:gid with `mode`; kept if mounted."""
    path.mkdir(parents=True, exist_ok=True)
    if not mounted(path):
        run("mount", "-t", "tmpfs", "-o", f"size={megabytes}m,mode={mode:o},uid={uid},gid={gid},nosuid,nodev",
            "tmpfs", path)


def unmount(path: Path) -> None:
    if mounted(path):
        subprocess.run(["umount", "--lazy", str(path)], capture_output=True)


def make_user(name: str, home_megabytes: int) -> pwd.struct_passwd:
    """The demo user `name` (made if missing; an existing user not made by the hub stops the set-up) whose
    home is a fresh tmpfs of `home_megabytes`, mode 0700."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        run("useradd", "--create-home", "--shell", "/bin/bash", "--comment", MARKER, name)
        entry = pwd.getpwnam(name)
    if entry.pw_gecos != MARKER:
        fail(f"user {name} exists and is not one of the hub's demo users: remove or rename it, then run `make hub`")
    mount_tmpfs(Path(entry.pw_dir), home_megabytes, 0o700, entry.pw_uid, entry.pw_gid)
    return entry


def hand_over(source: Path, user: str, target: Path) -> None:
    """Copy the contents of `source` (root's) into `target` as `user` does: a tar stream unpacked by the
    user's own tar, so the files are the user's and a link the user planted leads only where they can write."""
    run("mkdir", "-p", target, user=user)
    pack = subprocess.Popen(["tar", "-C", str(source), "-cf", "-", "."], stdout=subprocess.PIPE)
    unpack = subprocess.run(["runuser", "-u", user, "--", "tar", "-C", str(target), "-xf", "-", "--no-same-owner",
                             "--no-same-permissions"], stdin=pack.stdout, capture_output=True)
    pack.stdout.close()
    if pack.wait() != 0 or unpack.returncode != 0:
        fail(f"handing {source} to {user} in {target} failed: {unpack.stderr.decode(errors='replace').strip()[-2000:]}")


def take_from(user: str, path: Path) -> bytes | None:
    """The bytes of `path` as `user` reads it, or None when the user cannot read it."""
    result = subprocess.run(["runuser", "-u", user, "--", "cat", "--", str(path)], capture_output=True)
    return result.stdout if result.returncode == 0 else None


def open_to_others(path: Path) -> bool:
    """Whether a user who is neither the owner nor in the group can reach `path`'s contents: every folder
    above it searchable by others, and itself readable or searchable by others."""
    path = path.resolve()
    if not path.exists():
        return False
    return all(os.stat(folder).st_mode & 0o001 for folder in path.parents) and bool(os.stat(path).st_mode & 0o005)
