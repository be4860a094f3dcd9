"""The guard inside a grading kernel: installed before any student code, it undoes and reports patches.

This file is never imported by the kernel: the worker sends its source in the prologue (see
channel.Session), which runs before the first notebook cell. `_install` then
- imports the notebook's trusted tapelab modules (and with them NumPy, TensorFlow, Keras),
- snapshots every loaded module's functions, classes and submodules, the classes' methods,
  `sys.modules`, and IPython's and ipykernel's components,
- adds an audit hook (audit hooks cannot be removed) that holds all of that in its closure and
  * blocks `gc.get_objects/get_referrers/get_referents` and ctypes memory access (the only ways
    to reach the closure), recording each attempt,
  * notes the class attribute writes CPython audits (only a few special attributes: an ordinary
    `Cls.attr = value` raises no audit event, so every other class patch is found by comparing the
    classes with their snapshot, which each check and each step does: a block of 64 namespaces whose
    keys and values are all the very objects of the last scan is passed over in a few C loops),
  * answers "tapelab.guard" requests: the n-th request must carry HMAC(secret, n and its mode); it
    restores everything, in mode "fresh" re-imports tapelab fresh from disk and re-runs the trusted
    imports in the user namespace (the executor asks for it before each check, not after the last
    check before the next step), and reports what it found, authenticated with HMAC(secret, report),
  * answers "tapelab.guard.check" (the checkers send it after every call of student code, with a
    reference bound at import) by restoring every module and class before the checker compares.
A forged request, a missing or forged report, or any finding makes the executor flag the
submission and void the check it surrounds: tampering can only cost the student.
"""


def _install(secret, imports, path, allowed):  # noqa: C901 - one closure on purpose: its state is private
    import gc
    import importlib
    import itertools
    import json
    import linecache
    from operator import is_, methodcaller
    from os.path import isfile
    import sys
    import threading
    import types
    from _hashlib import compare_digest, hmac_digest  # C functions: no Python code to patch

    from IPython.core.interactiveshell import InteractiveShell

    key = bytes.fromhex(secret)
    dumps = json.dumps
    modules = sys.modules
    shell = InteractiveShell._instance
    kernel = getattr(shell, "kernel", None)
    module_type, type_set, type_del = types.ModuleType, type.__setattr__, type.__delattr__
    missing = object()
    flatten = itertools.chain.from_iterable
    values_of = methodcaller("values")  # C for a dict and a mappingproxy, builtin types: nothing to patch
    block_size = 64
    state = {"n": 0, "busy": False, "findings": []}

    api_kinds = (module_type, property, staticmethod, classmethod)

    def api(value):
        return callable(value) or isinstance(value, api_kinds)

    def api_names(namespace):  # api(v) written out: the snapshot's hot loop, over every loaded name
        return {k: v for k, v in namespace.items() if callable(v) or isinstance(v, api_kinds)}

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

    def whole(owner):
        """Every key and value of a module's or class's namespace, in order: unchanged when all are the same objects."""
        current = vars(owner)
        return tuple(current), tuple(current.values())

    def unchanged(current, keys, values):
        """Identity only (never ==, which could run the notebook's code), in C and in the namespace's own order,
        so no key is looked up: most modules and classes never change between two scans."""
        return (len(current) == len(keys) and all(map(is_, current, keys)) and all(map(is_, current.values(), values))
                and len(current) == len(keys))  # each map is one C loop; a thread may run between them

    def snapshot_modules(ours):
        saved = {}
        for name, module in list(modules.items()):
            if ((name == "tapelab" or name.startswith("tapelab.")) == ours and isinstance(module, module_type)
                    and vars(module) is not shell.user_ns):
                saved[name] = [module, api_names(vars(module)), *whole(module)]
        return saved

    def snapshot_classes(saved_modules):
        classes = {}
        for entry in saved_modules.values():
            for value in entry[1].values():
                if isinstance(value, type) and value.__flags__ & (1 << 9) and id(value) not in classes:
                    classes[id(value)] = [value, api_names(vars(value)), *whole(value)]
        return classes

    def fingerprint(owners):
        """The owners' namespaces flattened in C: their lengths, then all their keys, then all their values."""
        spaces = list(map(vars, owners))
        return tuple(map(len, spaces)), tuple(flatten(spaces)), tuple(flatten(map(values_of, spaces)))

    def in_blocks(saved):
        """A snapshot's entries in blocks, each [keys, owners, fingerprint...]: a scan passes over a block whose
        namespaces all still hold the very same keys and values in a few C loops, and looks entry by entry only
        into a block where something changed (a module's or class's data may change; the rest stays the same)."""
        order = list(saved)
        blocks = []
        for start in range(0, len(order), block_size):
            keys = tuple(order[start:start + block_size])
            owners = tuple(saved[k][0] for k in keys)
            blocks.append([keys, owners, *fingerprint(owners)])
        return blocks

    def holds(block):
        """Identity only, as `unchanged`, for a whole block at once."""
        _, owners, lengths, keys, values = block
        spaces = list(map(vars, owners))
        return (tuple(map(len, spaces)) == lengths and all(map(is_, flatten(spaces), keys))
                and all(map(is_, flatten(map(values_of, spaces)), values))
                and tuple(map(len, spaces)) == lengths)  # a thread may run between the C loops

    collecting = gc.isenabled()
    gc.disable()  # the snapshot makes some 20,000 containers: collections in between would walk all of TensorFlow
    try:
        saved_modules = snapshot_modules(False)
        for module, attr in (("builtins", "input"), ("getpass", "getpass"), ("sys", "excepthook")):  # set per request
            saved_modules.get(module, (None, {}))[1].pop(attr, None)
        saved_classes = snapshot_classes(saved_modules)
        module_blocks, class_blocks = in_blocks(saved_modules), in_blocks(saved_classes)
        ours = {"modules": snapshot_modules(True)}
        ours["classes"] = snapshot_classes(ours["modules"])
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

    def restore_names(saved_modules=saved_modules, only=None):
        for name in saved_modules if only is None else only:
            entry = saved_modules[name]
            module, names, keys, values = entry
            if modules.get(name, module) is not module:
                note(f"sys.modules[{name!r}] was replaced")
                modules[name] = module
            current = vars(module)
            if unchanged(current, keys, values):
                continue
            for attr, value in names.items():
                now = current.get(attr, missing)
                if now is value:
                    continue
                if isinstance(value, module_type) and isinstance(now, module_type) and now.__name__ == value.__name__:
                    names[attr] = now  # a lazy module replaced by the real one
                    continue
                note(f"{name}.{attr} was {'deleted' if now is missing else 'replaced'}")
                current[attr] = value
            entry[2:] = whole(module)  # what the checks compare is restored; the rest (data) may change freely

    def restore_classes(ids, saved_classes=saved_classes):
        for ident in ids:
            entry = saved_classes[ident]
            cls, saved, keys, values = entry
            current = vars(cls)
            if unchanged(current, keys, values):
                continue
            for attr, value in saved.items():
                if current.get(attr, missing) is not value and attr not in ("__dict__", "__weakref__", "__doc__"):
                    note(f"{cls.__module__}.{cls.__qualname__}.{attr} was changed")
                    type_set(cls, attr, value)
            for attr in [a for a in current if a not in saved]:
                if api(current[attr]):
                    note(f"{cls.__module__}.{cls.__qualname__}.{attr} was added")
                    type_del(cls, attr)
            entry[2:] = whole(cls)  # what the checks compare is restored; the rest (data) may change freely

    def scan_modules():
        for block in module_blocks:
            keys, owners = block[0], block[1]
            if all(map(is_, map(modules.get, keys, owners), owners)) and holds(block):
                continue
            restore_names(saved_modules, keys)
            block[2:] = fingerprint(owners)

    def scan_classes():
        for block in class_blocks:
            if not holds(block):
                restore_classes(block[0])
                block[2:] = fingerprint(block[1])

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
        scan_modules()
        scan_classes()
        restore_runtime()
        restore_names(ours["modules"])  # restored, and when `fresh`, then re-imported from disk
        restore_classes(list(ours["classes"]), ours["classes"])
        if not fresh:  # no check follows before the next step, which re-imports (the executor's choice)
            return
        for name in tapelab_modules():
            del modules[name]
        importlib.invalidate_caches()
        run_trusted_imports()
        ours["modules"] = snapshot_modules(True)
        ours["classes"] = snapshot_classes(ours["modules"])

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
            if isinstance(target, type) and id(target) in saved_classes and (
                    event == "object.__delattr__" or api(args[2])):
                note(f"{target.__module__}.{target.__qualname__}.{args[1]} was written")
            return
        if event in blocked:
            note(f"the notebook called {event}")
            raise RuntimeError(f"{event} is not available while grading")
        if event == "tapelab.guard.check":
            state["busy"] = True
            try:
                scan_modules()
                scan_classes()
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
