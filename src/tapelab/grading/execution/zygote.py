"""The zygote: a process per worker that imported TensorFlow once, and forks each kernel from itself.

`warm.Zygote` (the worker's side) starts it as a fresh interpreter: minimal environment (the
kernel's, with no grader secrets), cwd /, standard streams on /dev/null, one control socket. It loads
this file by its path (importing the tapelab package would import the grader), imports what its
kernels need (`preload_for`: TensorFlow's set for a notebook that uses it, else `LIGHT`), runs no
TensorFlow op, then answers one JSON line per request:
- {"op": "spawn", ...}: fork a kernel for one sandbox slot; answer {"pid": P} (the middle process,
  see `_middle`) once the kernel is isolated and about to start ipykernel, or {"error": why};
- {"op": "reap", "pid": P}: wait for that child; answer {"status": its exit code}.
End of file on the socket (the worker is gone) ends it, its home folder removed; its children die with it
(parent-death signals).

Before each fork it checks what makes forking safe (`_fork_problem`) and refuses otherwise: one OS
thread (importing NumPy starts OpenBLAS's thread pool, the second thread TensorFlow's import seems to
leave: the zygote imports with OPENBLAS_NUM_THREADS=1 and each kernel restores OpenBLAS's default),
no TensorFlow eager context, no open file but the standard streams and the socket.

A kernel then ends up as a cold one would: same namespaces, mount plan (`mountcalls`, which this file
loads by its path), rlimits, uid, cwd, environment, sys.path, sys.argv and standard streams; the
references the imports took to the zygote's stdout and stderr (logging handlers, default arguments) are
pointed at ipykernel's streams, as if the imports had run in the kernel, and the environment variables
that the imports of ipykernel's start (`KERNEL_START`) set are set again. What stays shared is only what cannot change after an
interpreter starts: its hash seed (random per zygote, the same for the kernels of one worker).
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
_CLONE = {"mount": 0x00020000, "ipc": 0x08000000, "net": 0x40000000, "pid": 0x20000000}
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS = 1, 4, 38
_state: dict = {}  # set once by `_prepare`: the socket, the stream bindings, the home folders, ...


def _sibling(name: str) -> types.ModuleType:
    """A module of this folder, loaded by its path (this process does not import tapelab)."""
    spec = importlib.util.spec_from_file_location(f"tapelab_{name}", os.path.join(os.path.dirname(__file__),
                                                                                 f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_calls = _sibling("mountcalls")  # the kernel's view, and the libc calls this process makes


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
        return "open files besides the standard streams and its control socket: " + ", ".join(
            f"{fd} -> {os.readlink(f'/proc/self/fd/{fd}')}" for fd in sorted(extra))
    return ""


# -- the imports, and where they kept the standard streams --------------------------------------------
def _holders(stream: object) -> dict[int, object]:
    return {id(r): r for r in gc.get_referrers(stream) if not isinstance(r, types.FrameType) and r is not vars(sys)}


def _bindings(stream: object, name: str, before: dict[int, object]) -> list[tuple]:
    """Each place the imports since `before` keep `stream`: (kind, holder, key, stream name). A place
    that cannot be pointed elsewhere raises, so the zygote refuses to serve rather than diverge."""
    found = []
    for ident, holder in _holders(stream).items():
        if ident in before:
            continue
        if isinstance(holder, tuple):
            owners = [f for f in gc.get_referrers(holder) if isinstance(f, types.FunctionType) and f.__defaults__ is holder]
            if not owners:
                raise RuntimeError(f"a tuple that is no function's defaults holds sys.{name}: {holder!r:.200}")
            found += [("defaults", f, None, name) for f in owners]
        elif isinstance(holder, dict):
            if any(key is stream for key in holder):
                raise RuntimeError(f"a dict is keyed by sys.{name}")
            keys = [key for key, value in holder.items() if value is stream]
            classes = [t for t in gc.get_referrers(holder) if isinstance(t, type)
                       and all(vars(t).get(key) is stream for key in keys)]
            if classes:  # a class's namespace: written through setattr, so its attribute cache follows
                found += [("attr", cls, key, name) for cls in classes for key in keys]
            else:
                found += [("item", holder, key, name) for key in keys]
        elif isinstance(holder, list):
            found += [("item", holder, i, name) for i, value in enumerate(holder) if value is stream]
        elif type(holder).__name__ == "cell":
            found.append(("cell", holder, None, name))
        elif hasattr(holder, "__dict__"):
            found += [("attr", holder, key, name) for key, value in vars(holder).items() if value is stream]
        else:
            raise RuntimeError(f"a {type(holder).__name__} holds sys.{name}")
    return found


def _rebind(bindings: list[tuple], old: dict[str, object]) -> None:
    """Point every binding at the kernel's stream of the same name (ipykernel's, once it runs)."""
    for kind, holder, key, name in bindings:
        new = getattr(sys, name)
        if kind == "defaults":
            holder.__defaults__ = tuple(new if v is old[name] else v for v in holder.__defaults__)
        elif kind == "item":
            holder[key] = new
        elif kind == "cell":
            holder.cell_contents = new
        else:
            setattr(holder, key, new)


def _prepare(control: socket.socket, preload: tuple[str, ...]) -> dict:
    """Import, record the stream bindings, and check that forking is safe; the facts the worker keeps."""
    allowed = {0, 1, 2, control.fileno()}
    if _open_fds() - allowed:
        raise RuntimeError(f"it was started with open files {sorted(_open_fds() - allowed)}")
    importlib.import_module(BEFORE_STREAMS)
    streams = {"stdout": sys.stdout, "stderr": sys.stderr}
    before = {name: _holders(streams[name]) for name in streams}
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
    bindings = [b for name in streams for b in _bindings(streams[name], name, before[name])]
    home = os.environ["HOME"]
    homes = [root for root, _, _ in os.walk(home)]
    _state.update(control=control, streams=streams, bindings=bindings, homes=homes, environ=imports_set,
                  launcher=importlib.util.find_spec("ipykernel_launcher").origin, pid=os.getpid())
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
def _send(control: socket.socket, message: dict) -> None:
    control.sendall(json.dumps(message).encode() + b"\n")


def _lines(control: socket.socket):
    buffer = b""
    while True:
        while b"\n" not in buffer:
            chunk = control.recv(1 << 16)
            if not chunk:
                return
            buffer += chunk
        line, buffer = buffer.split(b"\n", 1)
        yield json.loads(line)


def serve(fd: int, preload: tuple[str, ...] = PRELOAD) -> None:
    """The zygote's life: import `preload`, prepare and say so (or why not), then answer requests until
    end of file."""
    control = socket.socket(fileno=fd)
    try:
        ready = _prepare(control, preload)
    except Exception as error:
        _send(control, {"error": f"the zygote could not prepare: {type(error).__name__}: {error}"})
        return
    _send(control, {"ready": ready})
    for request in _lines(control):
        try:
            answer = _spawn(request) if request["op"] == "spawn" else {"status": _reap(request["pid"])}
        except Exception as error:
            answer = {"error": f"{type(error).__name__}: {error}"}
        _send(control, answer)
    shutil.rmtree(os.environ["HOME"], ignore_errors=True)  # the worker is gone: nobody else removes it


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
    problem = _fork_problem({0, 1, 2, _state["control"].fileno()})
    if problem:
        return {"error": f"the zygote refused to fork: {problem}"}
    status_read, status_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        def middle() -> int:
            os.close(status_read)
            _state["control"].close()
            return _middle(request, status_write)
        _child(middle, status_write)
    os.close(status_write)
    status = _read_until_closed(status_read, SETUP_SECONDS)
    os.close(status_read)
    if status == b"ready":
        return {"pid": pid}
    os.kill(pid, signal.SIGKILL)
    _reap(pid)
    return {"error": "the kernel could not be isolated: " + (status.decode(errors="replace").strip()
                                                             or "its process ended first")}


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
    _stdin_at_end()
    problem = _fork_problem({0, 1, 2, status})
    if problem:
        raise RuntimeError(f"the kernel's process is not fresh: {problem}")
    _reseed()
    _blas_threads()
    os.write(status, b"ready")
    os.close(status)
    return _run_kernel(request["argv"], int(request["env"].get("JPY_PARENT_PID") or 0))


def _stdin_at_end() -> None:
    """Standard input as a cold kernel has it: a pipe whose writer has closed."""
    read, write = os.pipe()
    os.close(write)
    os.dup2(read, 0)
    os.close(read)


def _reseed() -> None:
    """New seeds from the system for the generators a fork would share: Python's and NumPy's global ones
    (TensorFlow's live in its eager context, created in the kernel; Python's hash seed cannot change)."""
    random.seed()
    sys.modules["numpy"].random.seed()


def _blas_threads() -> None:
    """OpenBLAS's threads as a kernel importing NumPy would start them (its default: one per CPU)."""
    with open("/proc/self/maps") as maps:
        blas = {line.split()[-1] for line in maps if "openblas" in line.rsplit("/", 1)[-1]}
    for path in blas:
        library = ctypes.CDLL(path)
        for prefix, suffix in (("scipy_openblas", "64_"), ("openblas", "")):
            setter = getattr(library, f"{prefix}_set_num_threads{suffix}", None)
            if setter is not None:
                setter(getattr(library, f"{prefix}_get_num_procs{suffix}")())
                break


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
        _rebind(_state["bindings"], _state["streams"])
        app.start()
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
    atexit._run_exitfuncs()
    return code
