"""Stage 3, execution: where untrusted student code runs.

`pools` (local worker processes) and `cluster` (Dask workers, only with --scheduler) hand notebooks to
`worker`, which runs each in a `sandbox` slot (its own uid, a mount namespace planned by `mountview` and
built by `mountcalls`, limits) through `executor`'s client; `kernels` launches the kernel, cold or forked by
`warm` from the pool's (or the Dask worker's) `zygote`. The coordinator imports `pools`, `cluster` and
`sandbox`; the rest runs in worker processes, `zygote` (with `zygote_fresh`) in its own, and `mountcalls`
in the kernel's (loaded by path, or as a script). May import the shared modules and `integrity`; never
`grades`, `handback`, `insight` or `exports` (tests/test_layers.py).
"""
from tapelab.lazy import face

__all__ = ["DaskPool", "LocalPool", "Sandbox", "SandboxError", "Settings", "execute"]

__getattr__, __dir__ = face(__name__, {
    "LocalPool": "pools", "DaskPool": "cluster", "Sandbox": "sandbox", "SandboxError": "sandbox",
    "Settings": "worker", "execute": "worker"})
