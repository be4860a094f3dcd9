"""The zygote: a process per worker, or one per local pool, that imported TensorFlow once, and forks
each kernel from itself.

`warm.Zygote` starts it as a fresh interpreter: minimal environment (the
kernel's, with no grader secrets), cwd /, standard streams on /dev/null, one control socket, and for
a pool's zygote a listening socket in its home folder (0700, root's) where each worker connects. It loads
this file by its path (importing the tapelab package would import the grader), imports what its
kernels need (`preload_for`: TensorFlow's set for a notebook that uses it, else `LIGHT`), runs no
TensorFlow op, then answers one JSON line per request:
- {"op": "spawn", ...}: fork a kernel for one sandbox slot; answer {"pid": P} (the middle process,
  see `_middle`) once the kernel is isolated and about to start ipykernel, or {"error": why};
- {"op": "judge"}: fork the grader's judge (tapelab.grading.execution.judge), a process no student code
  reaches, which then imports what it needs without a second TensorFlow import; answer {"pid": P, "path": its socket};
- {"op": "reap", "pid": P}: wait for that child; answer {"status": its exit code}.
Requests come on the control socket and on each connection (whose peer must be this process's user), and
are answered one at a time on the socket that asked, so several workers take turns. End of file on a
connection (its worker is gone) kills the kernels and the judge forked for it; on the control socket (its starter, the
worker or the pool's coordinator, is gone) it ends the zygote, its home folder removed; its children die
with it (parent-death signals).

Before each fork it checks what makes forking safe (`_fork_problem`) and refuses otherwise: one OS
thread (importing NumPy starts OpenBLAS's thread pool, the second thread TensorFlow's import seems to
leave: the zygote imports with OPENBLAS_NUM_THREADS=1 and each kernel restores OpenBLAS's default),
no TensorFlow eager context, no open file but the standard streams and the sockets.

A kernel then ends up as a cold one would: same namespaces, mount plan (`mountcalls`, which this file
loads by its path), rlimits, uid, cwd, environment, sys.path, sys.argv and standard streams; the
references the imports took to the zygote's stdout and stderr (logging handlers, default arguments) are
pointed at ipykernel's streams, as if the imports had run in the kernel, and the environment variables
that the imports of ipykernel's start (`KERNEL_START`) set are set again. What stays shared is only what cannot change after an
interpreter starts: its hash seed (random per zygote, the same for the kernels of one worker or pool). One difference
is on purpose: what the zygote imported is frozen out of the garbage collector's generations before each fork
(`gc.freeze`, `gc.get_freeze_count()` > 0 in a warm kernel), so a kernel's full collections never walk those
350,000 or so objects, which live as long as the kernel anyway (a full collection: about 0.07 s instead of 0.4 s).
And the kernel guard's snapshot of all it imported is taken here, once (integrity/in_kernel.py `snapshot`), and
left on `sys` for a guarded kernel's prologue, which takes it off before any notebook code runs and snapshots only
what changed since; in a kernel run without the guard it stays there (it holds modules, classes and their
functions: nothing the notebook cannot reach anyway).
"""
from __future__ import annotations

import atexit
import contextlib
import ctypes
import gc
import importlib
import importlib.util
import json
import os
import random
import resource
import select
import shutil
import signal
import socket
import struct
import sys
import time
import traceback
import types

BEFORE_STREAMS = "ipykernel.kernelapp"  # what a cold kernel imports before ipykernel replaces sys.stdout/stderr
# What IPKernelApp.initialize imports in every kernel (its debugger's debugpy, the history's sqlite3, ...):
# imported once here, a kernel's start skips them (none starts a thread or opens a file on import).
KERNEL_START = ("ipykernel.ipkernel", "ipykernel.debugger", "debugpy", "IPython.core.history", "sqlite3", "pdb",
                "pydoc", "psutil")
PRELOAD = ("numpy", "tensorflow", "keras", "matplotlib.pyplot", *KERNEL_START)
LIGHT = ("numpy", *KERNEL_START)  # for a notebook that imports none of USES_TENSORFLOW
USES_TENSORFLOW = frozenset({"tensorflow", "keras", "tapelab"})  # tapelab's exercises import TensorFlow
SETUP_SECONDS = 60  # for a child to isolate itself
CONTEXT_MODULE = "tensorflow.python.eager.context"
JUDGE = "tapelab.grading.execution.judge"  # imported in the judge's process only, after its fork
_CLONE = {"mount": 0x00020000, "ipc": 0x08000000, "net": 0x40000000, "pid": 0x20000000}
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS = 1, 4, 38
_state: dict = {}  # set once by `_prepare`: the socket, the stream bindings, the home folders, ...


def _sibling(path: str) -> types.ModuleType:
    """A module of tapelab's grading package by its path from this folder (this process does not import tapelab)."""
    spec = importlib.util.spec_from_file_location(f"tapelab_{os.path.basename(path)}",
                                                  os.path.join(os.path.dirname(__file__), f"{path}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_calls = _sibling("mountcalls")  # the kernel's view, and the libc calls this process makes
_fresh = _sibling("zygote_fresh")  # a forked kernel's process state made fresh: streams, seeds, threads


def preload_for(packages: frozenset[str] | None) -> tuple[str, ...]:
    """What the zygote of a notebook whose instructor's version imports the top-level `packages` preloads
    (None: not known, so all of PRELOAD). A kernel that imports more imports it itself, as a cold one would."""
    return PRELOAD if packages is None or packages & USES_TENSORFLOW else LIGHT


def _prctl(option: int, value: int) -> None:
    _calls.check(_calls.libc.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0),
                                   ctypes.c_ulong(0)), f"prctl({option})")


def _open_fds() -> set[int]:
    fds = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            os.readlink(f"/proc/self/fd/{name}")  # the listing's own descriptor is closed by now
        except OSError:
            continue
        fds.add(int(name))
    return fds


def _fork_problem(allowed: set[int]) -> str:
    """Why this process must not fork a kernel now ("" when it may)."""
    threads = os.listdir("/proc/self/task")
    if len(threads) != 1:
        names = sorted(open(f"/proc/self/task/{t}/comm").read().strip() for t in threads)
        return f"it runs {len(threads)} OS threads ({', '.join(names)}), not one"
    context = sys.modules.get(CONTEXT_MODULE)
    if context is not None and context._context is not None:
        return "TensorFlow's eager context exists (an op ran)"
    extra = _open_fds() - allowed
    if extra:
        return "open files besides the standard streams and its sockets: " + ", ".join(
            f"{fd} -> {os.readlink(f'/proc/self/fd/{fd}')}" for fd in sorted(extra))
    return ""


def _sockets() -> set[int]:
    return {0, 1, 2, *(s.fileno() for s in _state["sockets"])}


def _prepare(sockets: list[socket.socket], preload: tuple[str, ...]) -> dict:
    """Import, record the stream bindings, and check that forking is safe; the facts the worker keeps."""
    allowed = {0, 1, 2, *(s.fileno() for s in sockets)}
    if _open_fds() - allowed:
        raise RuntimeError(f"it was started with open files {sorted(_open_fds() - allowed)}")
    importlib.import_module(BEFORE_STREAMS)
    streams = {"stdout": sys.stdout, "stderr": sys.stderr}
    before = {name: _fresh.holders(streams[name]) for name in streams}
    imports_set: dict[str, str] = {}  # what the imports every kernel's start makes set in the environment
    for module in preload:
        environ = dict(os.environ)
        importlib.import_module(module)
        if set(environ) - set(os.environ):
            raise RuntimeError(f"importing {module} removed environment variables "
                               f"{sorted(set(environ) - set(os.environ))}")
        if module in KERNEL_START:
            imports_set.update({key: value for key, value in os.environ.items() if environ.get(key) != value})
    numpy = sys.modules["numpy"]
    bindings = [b for name in streams for b in _fresh.bindings(streams[name], name, before[name])]
    home = os.environ["HOME"]
    homes = [root for root, _, _ in os.walk(home)]
    _state.update(sockets=sockets, streams=streams, bindings=bindings, homes=homes, environ=imports_set,
                  launcher=importlib.util.find_spec("ipykernel_launcher").origin, pid=os.getpid())
    guard = _sibling("../integrity/in_kernel")
    vars(sys)[guard.HANDOVER] = guard.snapshot()  # each kernel's guard takes it over (and off `sys`) in its prologue
    problem = _fork_problem(allowed)
    if problem:
        raise RuntimeError(problem)
    preview = random.Random()
    preview.setstate(random.getstate())
    legacy = numpy.random.RandomState()
    legacy.set_state(numpy.random.get_state())
    return {"pid": os.getpid(), "preload": list(preload), "environ": imports_set, "modules": len(sys.modules), "rebound": len(bindings), "homes": homes,
            "next_random": [preview.random() for _ in range(3)], "next_numpy": legacy.random_sample(3).tolist()}


# -- serving -------------------------------------------------------------------------------------------
def _send(peer: socket.socket, message: dict) -> None:
    peer.sendall(json.dumps(message).encode() + b"\n")


def _answer(line: bytes, children: set[int]) -> dict:
    """The answer to one request of a peer whose children (kernels' middle processes, judges) not yet reaped
    are `children`."""
    try:
        request = json.loads(line)
        if request["op"] not in ("spawn", "judge"):
            children.discard(request["pid"])
            return {"status": _reap(request["pid"])}
        answer = _spawn(request) if request["op"] == "spawn" else _judge()
        children.update([answer["pid"]] if "pid" in answer else [])
        return answer
    except Exception as error:
        return {"error": f"{type(error).__name__}: {error}"}


def _end(children: set[int]) -> None:
    """The children of a worker that is gone: killed and reaped, as they died with a zygote of its own."""
    for pid in children:
        with contextlib.suppress(OSError):  # a kernel's middle process leads its group (see `_middle`)
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):  # a judge does not
            os.kill(pid, signal.SIGKILL)
            _reap(pid)


def _accept(listener: socket.socket, ready: dict, peers: dict) -> None:
    """A worker's connection, if its peer is this process's user: told the zygote's facts, then served."""
    peer = listener.accept()[0]
    uid = struct.unpack("3i", peer.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[1]
    if uid != os.getuid():
        peer.close()
        return
    _state["sockets"].append(peer)
    peers[peer] = [b"", set()]
    with contextlib.suppress(OSError):
        _send(peer, {"ready": ready})


def serve(fd: int, preload: tuple[str, ...] = PRELOAD, listener: int | None = None) -> None:
    """The zygote's life: import `preload`, prepare and say so (or why not), then answer requests until
    end of file on the control socket `fd` (`listener`: a listening socket whose connections are served too)."""
    control = socket.socket(fileno=fd)
    listening = None if listener is None else socket.socket(fileno=listener)
    try:
        ready = _prepare([s for s in (control, listening) if s is not None], preload)
    except Exception as error:
        _send(control, {"error": f"the zygote could not prepare: {type(error).__name__}: {error}"})
        return
    _send(control, {"ready": ready})
    peers = {control: [b"", set()]}  # each peer's bytes after its last full line, and its kernels
    while control in peers:
        for peer in select.select(_state["sockets"], [], [])[0]:
            if peer is listening:
                _accept(listening, ready, peers)
                continue
            try:
                chunk = peer.recv(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:  # that worker is gone (or, on the control socket, the zygote's starter)
                _end(peers.pop(peer)[1])
                _state["sockets"].remove(peer)
                peer.close()
                continue
            peers[peer][0] += chunk
            while b"\n" in peers[peer][0]:
                line, peers[peer][0] = peers[peer][0].split(b"\n", 1)
                with contextlib.suppress(OSError):  # its worker died meanwhile: the next read ends it
                    _send(peer, _answer(line, peers[peer][1]))
    shutil.rmtree(os.environ["HOME"], ignore_errors=True)  # the starter is gone: nobody else removes it


def _reap(pid: int) -> int:
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _read_until_closed(fd: int, seconds: float) -> bytes:
    data, end = b"", time.monotonic() + seconds
    while time.monotonic() < end:
        if select.select([fd], [], [], max(0.0, end - time.monotonic()))[0]:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return data
            data += chunk
    return data + b"\n(timed out)"


def _spawn(request: dict) -> dict:
    """Fork the middle process of one kernel; its pid once the kernel is isolated, or why not."""
    return _forked(lambda status: _middle(request, status), "the kernel could not be isolated: ")


def _judge() -> dict:
    """Fork the grader's judge (tapelab.grading.execution.judge.serve), which no student code ever reaches: it
    listens on a socket in the zygote's home (the worker's user alone can enter it); its pid and that path."""
    _state["judges"] = _state.get("judges", 0) + 1
    path = os.path.join(os.environ["HOME"], f"judge-{_state['judges']}.sock")

    def judge(status: int) -> int:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != _state["pid"]:
            return 1
        return importlib.import_module(JUDGE).serve(path, status)
    answer = _forked(judge, "the judge could not start: ")
    return {**answer, "path": path} if "pid" in answer else answer


def _forked(body, failure: str) -> dict:
    """Fork a child that runs `body(status)` and writes "ready" to `status` once set up; its pid then, or why not."""
    problem = _fork_problem(_sockets())
    if problem:
        return {"error": f"the zygote refused to fork: {problem}"}
    status_read, status_write = os.pipe()
    gc.freeze()  # what this process holds (TensorFlow's objects, mostly) is never scanned by a child's collections
    pid = os.fork()
    if pid == 0:
        def child() -> int:
            os.close(status_read)
            for peer in _state["sockets"]:
                peer.close()
            return body(status_write)
        _child(child, status_write)
    os.close(status_write)
    status = _read_until_closed(status_read, SETUP_SECONDS)
    os.close(status_read)
    if status == b"ready":
        return {"pid": pid}
    os.kill(pid, signal.SIGKILL)
    _reap(pid)
    return {"error": failure + (status.decode(errors="replace").strip() or "its process ended first")}


def _child(body, status: int) -> None:
    """A forked child's whole life: `body()`, then exit with its code (70 and the traceback, written to
    `status`, when it raised); never returns into the parent's code."""
    code = 70
    try:
        code = body()
    except BaseException:
        _say(status, traceback.format_exc(limit=-3))
    finally:
        os._exit(code)


def _say(fd: int, text: str) -> None:
    try:
        os.write(fd, text.encode(errors="replace")[-4000:])
    except OSError:
        pass


def _middle(request: dict, status: int) -> int:
    """Root, in the worker's PID namespace: new namespaces, then fork the kernel as PID 1 of the new PID
    namespace, wait for it, and end as it ended. Dies with the zygote; the kernel dies with it."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != _state["pid"]:
        return 1  # the zygote ended before the signal was armed
    os.setsid()  # the executor kills the process group: this one and the kernel
    _calls.check(_calls.libc.unshare(ctypes.c_int(sum(_CLONE.values()))), "unshare")
    _calls.mount(None, "/", None, _calls.MS_REC | _calls.MS_PRIVATE)
    kernel = os.fork()
    if kernel == 0:
        _child(lambda: _kernel(request, status), status)
    os.close(status)
    code = _reap(kernel)
    if code < 0:  # killed by a signal: die of the same one
        with contextlib.suppress(OSError, ValueError):  # SIGKILL's action cannot be set, nor need be
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code if code >= 0 else 128 - code


def _kernel(request: dict, status: int) -> int:
    """PID 1 of its namespaces, root until it drops to the slot's uid: the sandbox of the cold path (the
    same mount plan and rlimits), a fresh process state, then ipykernel in this process."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    _calls.mount("proc", "/proc", "proc", _calls.MS_NOSUID | _calls.MS_NODEV | _calls.MS_NOEXEC)  # this PID ns's
    _calls.build(request["view"])
    for name, value in request["rlimits"].items():
        resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (value, value))
    uid = request["uid"]
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # a change of uid disarms it
    _prctl(_PR_SET_DUMPABLE, 1)  # as after the cold path's exec (a change of uid clears it)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    # what the imports of a kernel's start set (debugpy: PYDEVD_USE_FRAME_EVAL), as in a cold kernel, where
    # they run with the kernel's environment: a variable that environment names keeps its value. (What
    # TensorFlow's import sets, TF2_BEHAVIOR and others, a cold kernel has only once a cell imports it: not set.)
    os.environ.update({key: value for key, value in _state["environ"].items() if key not in request["env"]})
    for folder in _state["homes"]:  # the zygote's home, in this kernel's private /tmp, for paths computed there
        os.makedirs(folder, mode=0o700, exist_ok=True)
    _fresh.stdin_at_end()
    problem = _fork_problem({0, 1, 2, status})
    if problem:
        raise RuntimeError(f"the kernel's process is not fresh: {problem}")
    _fresh.reseed()
    _fresh.blas_threads()
    os.write(status, b"ready")
    os.close(status)
    return _run_kernel(request["argv"], int(request["env"].get("JPY_PARENT_PID") or 0))


def _run_kernel(argv: list[str], parent: int) -> int:
    """ipykernel, as `python -m ipykernel_launcher ARGV` runs it; the exit code."""
    from ipykernel.kernelapp import IPKernelApp

    sys.argv = [_state["launcher"], *argv]
    sys.orig_argv = [sys.executable, "-m", "ipykernel_launcher", *argv]
    code = 0
    try:
        app = IPKernelApp.instance()
        app.parent_handle = parent  # its default was read from the zygote's environment
        app.initialize(argv)
        _fresh.rebind(_state["bindings"], _state["streams"])
        app.start()
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
    atexit._run_exitfuncs()
    return code
