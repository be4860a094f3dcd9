"""Warm kernel start, two ways in one run: what the zygote preloads, how the client waits for the kernel, how
often the client retries connecting, or how a stop waits for the kernel.

    python bench/kernel_start.py [--rounds 8] [--compare preload|ready|reconnect|stop|view]
                                 (as root, where warm kernels can start; `make bench`)

--compare preload (the default): two zygotes in this process, the light one of a notebook without TensorFlow
(`zygote.LIGHT`) and a baseline preloading only NumPy and ipykernel.ipkernel (what LIGHT was before
`zygote.KERNEL_START`). --compare ready: the light zygote, with the sandbox kernel's client waiting as
`kernels.ReadyClient` does (until its kernel_info request is idle on iopub) against jupyter_client's own
wait (which then drains iopub until 0.2 s pass without a message). The next two use TensorFlow's zygote and
06's guard: --compare reconnect, the `start` phase with
ZeroMQ's default reconnect interval (100 ms) against kernels.RECONNECT_MS; --compare stop, the `stop` phase with
jupyter_client's wait (a poll every 0.1 s) against the pidfd's (warm.ForkedProcess.ended). --compare view: the light
zygote, the `start` phase with the kernel's view built as before (the plan as the shell script it replaced,
`mount` and `mkdir` commands run by /bin/sh: a zygote loaded from a copy whose `mountcalls.build` does that)
against mountcalls' own mount(2) calls. Kernels start in
turns, A B A B..., for the same one-cell notebook under the full sandbox; each kernel's phase (`start`: slot
made, kernel forked, isolated and answering) is read from its facts. Prints both medians and their ratio,
measured in the same run, so a loaded machine slows both alike.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile

os.environ.update(TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")

import nbformat  # noqa: E402
from jupyter_client.asynchronous import AsyncKernelClient  # noqa: E402
from jupyter_client.manager import AsyncKernelManager  # noqa: E402
from nbformat.v4 import new_code_cell, new_notebook  # noqa: E402

from tapelab.grading.execution import kernels, mountcalls, warm, worker, zygote  # noqa: E402
from tapelab.grading.execution.sandbox import Sandbox  # noqa: E402

BASELINE = ("numpy", "ipykernel.ipkernel")
OURS = kernels.ReadyClient.wait_for_ready
RECONNECT_MS, WAIT = kernels.RECONNECT_MS, kernels.SandboxKernelManager._async_wait
GUARD = ("from tapelab.exercises.fit_vs_custom import ex6_1, ex6_4, ex6_3, ex6_2, ex6_5, ex6_6",)  # 06's, as graded


def preload(name: str) -> None:
    """Kernels forked from the zygote of `name`: the baseline's preload or LIGHT."""
    chosen = BASELINE if name == "baseline" else zygote.LIGHT
    worker.zygote.preload_for = lambda packages: chosen  # this process's worker only: pick the zygote


def ready(name: str) -> None:
    """Kernels waited for as jupyter_client waits (the baseline), or as ReadyClient does."""
    kernels.ReadyClient.wait_for_ready = AsyncKernelClient.wait_for_ready if name == "baseline" else OURS


def reconnect(name: str) -> None:
    """Clients retrying a connection every 100 ms (ZeroMQ's default, the baseline) or every RECONNECT_MS."""
    kernels.RECONNECT_MS = 100 if name == "baseline" else RECONNECT_MS


def stop(name: str) -> None:
    """Stops that poll the kernel every 0.1 s (jupyter_client's, the baseline) or wait on its pidfd."""
    kernels.SandboxKernelManager._async_wait = AsyncKernelManager._async_wait if name == "baseline" else WAIT


# The old path, appended to a copy of mountcalls.py: each step of a plan as the command that did it, run by
# /bin/sh as the zygote's kernel ran mountview's script before mountcalls (the sibling step as drop_siblings).
SHELL_BUILD = r'''

import shlex, subprocess

COMMANDS = {"tmpfs": lambda p, o: f"mount -t tmpfs -o {o},nosuid,nodev tapelab-private {p}",
            "dir": lambda p, m: f"mkdir -m {m:o} {p}", "way": lambda p, m: f"[ -d {p} ] || mkdir -m {m:o} {p}",
            "file": lambda p: f": > {p}", "bind": lambda s, p: f"mount --bind {s} {p}",
            "rbind": lambda s, p: f"mount --rbind {s} {p}", "move": lambda s, p: f"mount --move {s} {p}"}
DROP = """tapelab_siblings() {{ awk -v s={s} -v keep={k} 'BEGIN {{n = split(keep, k, "\\n"); for (i = 1; i <= n; i++) \
mine[k[i]] = 1}} index($5, s) == 1 && !($5 in mine) {{print $5}}' /proc/self/mountinfo; }}
tapelab_siblings | while read -r point; do umount -l "$point" 2>/dev/null || :; done
left=$(tapelab_siblings)
[ -z "$left" ] || {{ echo "other kernels' scratch folders are still mounted: $left" >&2; exit 1; }}"""


def build(plan):
    lines = ["set -e"]
    for name, *arguments in plan:
        if name == "drop":
            lines.append(DROP.format(s=shlex.quote(arguments[0]), k=shlex.quote("\n".join(arguments[1]))))
        else:
            lines.append(COMMANDS[name](*(shlex.quote(a) if isinstance(a, str) else a for a in arguments)))
    view = subprocess.run(["/bin/sh", "-c", "\n".join(lines), "tapelab-sandbox", "true"], stdin=subprocess.DEVNULL,
                          capture_output=True, env={"PATH": "/usr/local/bin:/usr/bin:/bin"})
    if view.returncode != 0:
        raise RuntimeError(f"the mount script failed ({view.returncode}): {view.stderr.decode(errors='replace')}")
'''
VIEW_ZYGOTES: dict[str, warm.Zygote] = {}
VIEW_FOLDERS: list[str] = []


def view(name: str) -> None:
    """Kernels forked from a zygote whose view is built by /bin/sh (the baseline: a zygote loaded from a copy of
    zygote.py beside a mountcalls.py that ends with SHELL_BUILD) or by mountcalls' own calls."""
    worker.zygote.preload_for = lambda packages: zygote.LIGHT
    if name not in VIEW_ZYGOTES:
        path = zygote.__file__
        if name == "baseline":
            folder = tempfile.mkdtemp(prefix="tapelab-bench-view-")
            VIEW_FOLDERS.append(folder)
            path = shutil.copy(zygote.__file__, folder)
            shutil.copy(os.path.join(os.path.dirname(zygote.__file__), "zygote_fresh.py"), folder)
            with open(mountcalls.__file__) as source, open(os.path.join(folder, "mountcalls.py"), "w") as copy:
                copy.write(source.read() + SHELL_BUILD)
        warm.zygote_module = type(zygote)("bench_zygote")  # what warm.Zygote reads: the file it boots from
        vars(warm.zygote_module).update({**vars(zygote), "__file__": path})
        try:
            VIEW_ZYGOTES[name] = warm.Zygote(sys.executable, zygote.LIGHT)
        finally:
            warm.zygote_module = zygote
    warm._zygotes[zygote.LIGHT] = VIEW_ZYGOTES[name]


COMPARE = {"preload": (preload, "baseline preload", "with KERNEL_START", "start"),
           "ready": (ready, "jupyter_client's wait", "ReadyClient's wait", "start"),
           "reconnect": (reconnect, "reconnect every 100 ms", f"every {RECONNECT_MS} ms", "start"),
           "stop": (stop, "jupyter_client's poll", "the pidfd", "stop"),
           "view": (view, "the view by /bin/sh", "by mount(2) calls", "start")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--compare", choices=COMPARE, default="preload")
    args = parser.parse_args()
    choose, *labels, phase = COMPARE[args.compare]
    nb = nbformat.writes(new_notebook(cells=[new_code_cell("print(1 + 1)")]))
    light = args.compare in ("preload", "ready", "view")
    settings = worker.Settings(60, 120, 10**7, Sandbox(isolate=True, rlimits=True, kernels="warm"),
                               restore_imports=None if light else GUARD, packages=frozenset() if light else None)
    starts: dict[str, list[float]] = {"baseline": [], "ours": []}
    try:
        for name in starts:  # each zygote's own start (the imports) is not a kernel's
            choose(name)
            warm.current(sys.executable, worker.zygote.preload_for(settings.packages))
        for _ in range(args.rounds):
            for name in starts:
                choose(name)
                facts = worker.execute(nb, settings)["facts"]
                if facts.get("kernel") != "warm":
                    print(f"a kernel did not start warm: {facts.get('warm_failed') or facts}", file=sys.stderr)
                    return 1
                starts[name].append(facts["timing"][phase])
    finally:
        for made in VIEW_ZYGOTES.values():
            made.close()
        for folder in VIEW_FOLDERS:
            shutil.rmtree(folder)
        warm.stop()
    base, ours = (statistics.median(starts[name]) for name in ("baseline", "ours"))
    print(f"{phase}, median of {args.rounds}: {labels[0]} {base:.3f} s, {labels[1]} {ours:.3f} s; "
          f"ratio {ours / base:.2f} (load {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
