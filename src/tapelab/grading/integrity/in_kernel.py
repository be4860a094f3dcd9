"""The guard inside a grading kernel: installed before any student code, it undoes and reports patches.

This file is never imported by the kernel: the worker sends its source in the prologue (see
channel.Session), which runs before the first notebook cell. `_install` then
- imports the notebook's trusted tapelab modules (and with them NumPy, TensorFlow, Keras),
- snapshots every loaded module's functions, classes and submodules, the classes' methods,
  `sys.modules`, and IPython's and ipykernel's components. A warm kernel's zygote took that snapshot
  once, before it forked (`snapshot`, handed over on `sys` and taken off it here): the prologue then
  takes again only what was loaded, replaced or written since, so a kernel neither redoes the work nor
  touches (and copies) the pages of the zygote's objects,
- adds an audit hook (audit hooks cannot be removed) that holds all of that in its closure and
  * blocks `gc.get_objects/get_referrers/get_referents` and ctypes memory access (the only ways
    to reach the closure), recording each attempt,
  * notes the class attribute writes CPython audits (only a few special attributes: an ordinary
    `Cls.attr = value` raises no audit event, so every other class patch is found by comparing the
    classes with their snapshot, which each check and each step does). A scan compares only the
    namespaces written since the last one: CPython gives a dict a new version tag (PEP 509) at each
    write, and the guard reads the tags of all watched namespaces by address, in C, in about a
    millisecond (`Watched.written`); the others are never looked at,
  * answers "tapelab.guard" requests: the n-th request must carry HMAC(secret, n and its mode); it
    restores everything, in mode "fresh" re-imports tapelab fresh from disk and re-runs the trusted
    imports in the user namespace (the executor asks for it before each check, not after the last
    check before the next step), and reports what it found, authenticated with HMAC(secret, report),
  * answers "tapelab.guard.check" (the checkers send it after every call of student code, with a
    reference bound at import) by restoring every module and class before the checker compares.
A forged request, a missing or forged report, or any finding makes the executor flag the
submission and void the check it surrounds: tampering can only cost the student.
"""

# Bound once, when the prologue runs this source (before any notebook code): nothing below looks a module up later.
from array import array
from gc import get_referents
from itertools import compress, count
from operator import ne
import sys
from types import ModuleType

from _ctypes import _SimpleCData

MODULES = sys.modules
VERSION_AT = 24  # bytes into a CPython 3.11 dict where its PEP 509 version tag is (`namespace_versions` checks it)
HANDOVER = "_tapelab_guard_snapshot"  # `sys`'s attribute for the zygote's snapshot, until a kernel's prologue takes it


def namespace_versions():
    """A reader of a dict's version tag by the dict's address: CPython gives every write to a dict a new one.
    It reads in C through a private ctypes class on an immutable base, so nothing the notebook can reach or
    patch is on its path. On a Python where it reads no such tag, each read is new: every namespace then
    looks written and each scan compares them all, as slowly as that is."""
    class Word(_SimpleCData):
        _type_ = "Q"

    def read(address):
        return Word.from_address(address + VERSION_AT).value

    probe = {"a": 0, "b": 0}
    before = read(id(probe))
    probe["a"] = 1  # a write that neither resizes nor moves the dict's table
    if read(id(probe)) != before:
        return read
    return lambda address, counter=count(): next(counter)


class Watched:
    """Modules or classes by key, each kept as [owner, its API names], and the address and last seen version
    of each one's namespace (`array`s: reading them touches none of the objects a zygote shares with its kernels)."""

    def __init__(self, read, parts=None):
        self.read, self.listed = read, None  # listed: sys.modules's version when its entries were last compared
        self.entries, self.keys, self.index, self.at, self.seen = parts or ({}, [], {}, array("Q"), array("Q"))

    def parts(self):
        return self.entries, self.keys, self.index, self.at, self.seen

    def take(self, key, owner):
        """Watch `owner` under `key` from now on, with its API names as they are now."""
        space = vars(owner)
        address = id(space) if type(space) is dict else id(get_referents(space)[0])  # a class's: behind its proxy
        version = self.read(address)  # read first: a write after it is a change the next scan sees
        self.entries[key] = [owner, api_names(space)]
        if key in self.index:
            self.at[self.index[key]], self.seen[self.index[key]] = address, version
        else:
            self.index[key] = len(self.keys)
            self.keys.append(key)
            self.at.append(address)
            self.seen.append(version)

    def written(self):
        """The keys whose namespaces were written since they were last seen; from now on they count as seen."""
        now = array("Q", map(self.read, self.at))
        if now == self.seen:
            return []
        keys = list(compress(self.keys, map(ne, now, self.seen)))
        self.seen = now
        return keys


API_KINDS = (ModuleType, property, staticmethod, classmethod)


def api(value):
    """A function, class, module or descriptor: what a patch replaces (a namespace's other values are its data)."""
    return callable(value) or isinstance(value, API_KINDS)


def api_names(space):
    """`api` written out: the snapshot's hot loop, over every loaded name."""
    return {k: v for k, v in space.items() if callable(v) or isinstance(v, API_KINDS)}


def watch(modules_w, classes_w, names, ours, skip):
    """Watch the modules `names` of `sys.modules` (tapelab's when `ours`, else the others), but not the one whose
    namespace is `skip` (the notebook's), and the heap classes they name that `classes_w` does not watch yet."""
    for name in names:
        module = MODULES.get(name)
        if (isinstance(module, ModuleType) and (name == "tapelab" or name.startswith("tapelab.")) == ours
                and vars(module) is not skip):
            modules_w.take(name, module)
            for value in modules_w.entries[name][1].values():
                if isinstance(value, type) and value.__flags__ & (1 << 9) and id(value) not in classes_w.index:
                    classes_w.take(id(value), value)


def snapshot():
    """What a zygote hands to the kernels it forks (on `sys`, as HANDOVER): every loaded module but tapelab's
    and the classes they name, taken once; a kernel's prologue then watches only what changed since."""
    import gc

    read = namespace_versions()
    modules_w, classes_w = Watched(read), Watched(read)
    collecting = gc.isenabled()
    gc.disable()
    try:
        watch(modules_w, classes_w, list(MODULES), ours=False, skip=vars(MODULES["__main__"]))
    finally:
        if collecting:
            gc.enable()
    return {"modules": modules_w.parts(), "classes": classes_w.parts()}


def _install(secret, imports, path, allowed):  # noqa: C901 - one closure on purpose: its state is private
    import gc
    import importlib
    import json
    import linecache
    from os.path import isfile
    import sys
    import threading
    from _hashlib import compare_digest, hmac_digest  # C functions: no Python code to patch

    from IPython.core.interactiveshell import InteractiveShell

    taken = vars(sys).pop(HANDOVER, None)  # a warm kernel's: its zygote's snapshot, from before the fork
    key = bytes.fromhex(secret)
    dumps = json.dumps
    modules = MODULES
    shell = InteractiveShell._instance
    kernel = getattr(shell, "kernel", None)
    type_set, type_del = type.__setattr__, type.__delattr__
    missing = object()
    state = {"n": 0, "busy": False, "findings": []}
    read = namespace_versions()
    sys_modules = id(modules)

    def run_trusted_imports():
        for statement in imports:
            exec(statement, shell.user_ns)

    def tapelab_modules():
        return [name for name in modules if name == "tapelab" or name.startswith("tapelab.")]

    sys.path[:] = path
    run_trusted_imports()
    # pyplot (Keras imports it) picks its backend lazily, on the first plot, and then rebinds some of its own
    # functions (draw_if_interactive): pick it now, so the snapshot already holds what an honest plot leads to.
    pyplot = modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.switch_backend(modules["matplotlib"].get_backend())

    def watch_ours():
        ours_w = [Watched(read), Watched(read)]
        watch(*ours_w, tapelab_modules(), ours=True, skip=shell.user_ns)
        return ours_w

    collecting = gc.isenabled()
    gc.disable()  # the snapshot makes some 20,000 containers: collections in between would walk all of TensorFlow
    try:
        if taken is None:  # a cold kernel: everything loaded now
            saved, saved_classes = Watched(read), Watched(read)
            fresh = list(modules)
        else:  # what the zygote took, and what was loaded, replaced or written since (no notebook code ran yet)
            saved, saved_classes = Watched(read, taken["modules"]), Watched(read, taken["classes"])
            fresh = [n for n in list(modules) if saved.entries.get(n, (None,))[0] is not modules[n]] + saved.written()
            for ident in saved_classes.written():
                saved_classes.take(ident, saved_classes.entries[ident][0])
        watch(saved, saved_classes, fresh, ours=False, skip=shell.user_ns)
        for module, attr in (("builtins", "input"), ("getpass", "getpass"), ("sys", "excepthook")):  # set per request
            saved.entries.get(module, (None, {}))[1].pop(attr, None)
        ours = watch_ours()
    finally:
        if collecting:
            gc.enable()
    saved_sys = {n: getattr(sys, n) for n in ("displayhook", "stdout", "stderr", "audit")}
    shell_parts = ("display_formatter", "displayhook", "display_pub", "compile", "events", "InteractiveTB",
                   "SyntaxTB", "history_manager", "payload_manager", "builtin_trap", "display_trap",
                   "input_transformer_manager")
    saved_shell = {n: getattr(shell, n) for n in shell_parts if hasattr(shell, n)}
    owners = [o for o in (shell, kernel) if o is not None]
    saved_instance = [(o, {a: v for a, v in vars(o).items() if callable(getattr(type(o), a, None))}) for o in owners]
    threads = set(sys._current_frames())

    def from_notebook(code):
        """Code compiled from a cell or a string, not from an installed file."""
        name = getattr(code, "co_filename", None)
        return name is not None and not name.startswith("<frozen ") and not isfile(name)

    def notebook_threads():
        """Threads started after the prologue whose stack or target runs the notebook's code."""
        count = 0
        for ident, frame in sys._current_frames().items():
            if ident in threads or ident == threading.get_ident():
                continue
            thread = threading._active.get(ident)
            target = getattr(thread, "_target", None) or getattr(thread, "function", None)
            suspicious = from_notebook(getattr(target, "__code__", None))
            while frame is not None and not suspicious:
                suspicious, frame = from_notebook(frame.f_code), frame.f_back
            count += suspicious
        return count

    def note(text):
        if text not in state["findings"]:
            state["findings"].append(text)

    def restore_names(watched, names):
        for name in names:
            module, saved_names = watched.entries[name]
            current = vars(module)
            for attr, value in saved_names.items():
                now = current.get(attr, missing)
                if now is value:
                    continue
                if isinstance(value, ModuleType) and isinstance(now, ModuleType) and now.__name__ == value.__name__:
                    saved_names[attr] = now  # a lazy module replaced by the real one
                    continue
                note(f"{name}.{attr} was {'deleted' if now is missing else 'replaced'}")
                current[attr] = value

    def restore_classes(watched, ids):
        for ident in ids:
            cls, saved_names = watched.entries[ident]
            current = vars(cls)
            for attr, value in saved_names.items():
                if current.get(attr, missing) is not value and attr not in ("__dict__", "__weakref__", "__doc__"):
                    note(f"{cls.__module__}.{cls.__qualname__}.{attr} was changed")
                    type_set(cls, attr, value)
            for attr in [a for a in current if a not in saved_names]:
                if api(current[attr]):
                    note(f"{cls.__module__}.{cls.__qualname__}.{attr} was added")
                    type_del(cls, attr)

    def restore_entries(watched):
        """sys.modules's entries as `watched` holds them: looked at only when sys.modules was written since."""
        now = read(sys_modules)
        if now == watched.listed:
            return
        watched.listed = now
        for name, (module, _) in watched.entries.items():
            if modules.get(name, module) is not module:
                note(f"sys.modules[{name!r}] was replaced")
                modules[name] = module

    def scan(watched_modules, watched_classes):
        """Every watched namespace written since the last scan compared with its snapshot, and restored: the
        version tags tell which (a few C loops over addresses); the others are never touched."""
        restore_entries(watched_modules)
        restore_names(watched_modules, watched_modules.written())
        restore_classes(watched_classes, watched_classes.written())

    def restore_runtime():
        sys.settrace(None)
        sys.setprofile(None)
        threading.settrace(None)
        threading.setprofile(None)
        for name, value in saved_sys.items():
            if getattr(sys, name) is not value:
                note(f"sys.{name} was replaced")
                setattr(sys, name, value)
        sys.path[:] = path
        sys.meta_path[:] = [f for f in sys.meta_path if type(f).__module__ != "__main__"]
        sys.path_hooks[:] = [h for h in sys.path_hooks if getattr(h, "__module__", "") != "__main__"]
        sys.path_importer_cache.clear()
        for name, value in saved_shell.items():
            if getattr(shell, name, missing) is not value:
                note(f"IPython's shell.{name} was replaced")
                setattr(shell, name, value)
        for owner, saved in saved_instance:
            current = vars(owner)
            for attr in [a for a in current if callable(getattr(type(owner), a, None))]:
                if saved.get(attr, missing) is not current[attr]:
                    note(f"{type(owner).__name__}.{attr} was overridden on the instance")
                    del current[attr]
            for attr, value in saved.items():
                current.setdefault(attr, value)
        shell.custom_exceptions = ()
        shell.CustomTB = None
        ok = lambda f: (getattr(f, "__module__", None) or "").startswith(allowed)  # noqa: E731
        for chain in (shell.input_transformers_cleanup, shell.input_transformers_post, shell.ast_transformers):
            chain[:] = [t for t in chain if ok(t)]
        for callbacks in shell.events.callbacks.values():
            callbacks[:] = [c for c in callbacks if ok(c)]
        running = notebook_threads()
        if running:
            note(f"{running} thread(s) running the notebook's own code")

    def restore_all(fresh):
        scan(saved, saved_classes)
        restore_runtime()
        scan(*ours)
        if not fresh:  # no check follows before the next step, which re-imports (the executor's choice)
            return
        for name in tapelab_modules():
            del modules[name]
        importlib.invalidate_caches()
        run_trusted_imports()
        ours[:] = watch_ours()

    def mac(text):
        return hmac_digest(key, text.encode(), "sha256").hex()

    blocked = ("gc.get_objects", "gc.get_referrers", "gc.get_referents", "ctypes.string_at", "ctypes.wstring_at",
               "ctypes.cdata", "ctypes.cdata/buffer", "ctypes.addressof", "ctypes.dlsym", "ctypes.dlopen",
               "sys._current_frames", "sys.addaudithook")

    def hook(event, args):
        if state["busy"]:
            return
        if event == "object.__setattr__" or event == "object.__delattr__":
            target = args[0]
            if isinstance(target, type) and id(target) in saved_classes.index and (
                    event == "object.__delattr__" or api(args[2])):
                note(f"{target.__module__}.{target.__qualname__}.{args[1]} was written")
            return
        if event in blocked:
            note(f"the notebook called {event}")
            raise RuntimeError(f"{event} is not available while grading")
        if event == "tapelab.guard.check":
            state["busy"] = True
            try:
                scan(saved, saved_classes)  # tapelab's own modules: at each step (the checks hold theirs from import)
            finally:
                state["busy"] = False
            return
        if event != "tapelab.guard":
            return
        state["busy"] = True
        try:
            request, out, mode = args
            expected = mac(f"request {state['n'] + 1} {mode}") if type(mode) is str else None
            if not (type(request) is str and expected is not None and compare_digest(request, expected)):
                state["busy"] = False
                note("a guard request was forged")
                return
            state["n"] += 1
            restore_all(mode == "fresh")
            report = dumps({"n": state["n"], "findings": state["findings"]})
            state["findings"] = []
            list.append(out, dumps({"report": report, "mac": mac(report)}))
        finally:
            state["busy"] = False

    for cache in (linecache.cache, getattr(linecache, "_ipython_cache", {})):
        for name in [n for n, entry in cache.items() if secret in "".join(entry[2] if len(entry) > 2 else ())]:
            del cache[name]
    sys.addaudithook(hook)
