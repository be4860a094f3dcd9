"""Does diagnose leave TensorFlow, Keras and NumPy unpatched (no class or module attribute written)?

The grading sandbox watches class attributes, and a patch would reach other threads. One subprocess
(TensorFlow imports once) runs every case twice: first to warm up, so lazy imports, layer builds and
caches happen unwatched; then watched two ways. An audit hook records `object.__setattr__` /
`object.__delattr__` events on a class or module, but CPython 3.11 raises them only for a few special
attributes (a built-in type's, a function's `__code__`), not for `Cls.attr = value`; so the real check
is by identity: a snapshot of every attribute of every tensorflow/keras/numpy module and of the classes
they define, taken before diagnose, inside the loss function while diagnose runs it (a patch undone at
the end shows only there) and after. The one attribute TensorFlow itself rebinds while an op callback is
installed (`execute.execute`, by `op_callbacks.add_op_callback`) is expected by name, during the run only. A probe that patches `_EagerTensorBase.numpy` around a loss, as
the old recorder did, shows the snapshots see such a patch.
"""
import json
import os
import subprocess
import sys

CALLBACK_SWITCH = "tensorflow.python.eager.execute.execute"
SCRIPT = r'''
import json, sys, types
import numpy as np
import keras
import tensorflow as tf
from tapelab.diagnose import diagnose

X = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
Y = tf.constant([[1.0], [2.0], [3.0]])
w = tf.Variable([[0.5], [0.2]])
before_tape = w * 2.0  # a closure tensor computed before the tape

def numpy_exit():
    note()
    pred = X @ w
    return tf.reduce_mean((pred.numpy() - Y) ** 2)

def mean_exit():
    note()
    return tf.constant(np.mean((X @ w - Y) ** 2))

def stopped():
    note()
    return tf.reduce_mean((tf.stop_gradient(X @ w) - Y) ** 2)

def closure_tensor():
    note()
    return tf.reduce_mean((X @ before_tape - Y) ** 2)

model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(4), keras.layers.BatchNormalization(),
                          keras.layers.Dropout(0.5), keras.layers.Dense(1)])

def batchnorm():
    note()
    return tf.reduce_mean((model(X, training=True) - Y) ** 2)

def snapshot():
    """Every attribute of every tensorflow/keras/numpy module and of the classes they define, by identity."""
    found = {}
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] not in ("tensorflow", "keras", "numpy") or not isinstance(module, types.ModuleType):
            continue
        for attr, value in list(vars(module).items()):
            found[(name, attr)] = id(value)
            if isinstance(value, type) and value.__module__ == name:
                for key, member in list(vars(value).items()):
                    found[(name, attr, key)] = id(member)
    return found

def differences(before, now):
    return sorted(".".join(key) for key in before.keys() | now.keys() if before.get(key) != now.get(key))

def run_all(watch):
    found = {}
    for name, fn in [("numpy_exit", numpy_exit), ("mean_exit", mean_exit), ("stopped", stopped),
                     ("closure_tensor", closure_tensor), ("batchnorm", batchnorm)]:
        watching[0] = watch
        before = snapshot() if watch else {}
        report = diagnose(fn, model=model) if name == "batchnorm" else diagnose(fn, [w])
        after = snapshot() if watch else {}
        watching[0] = False
        found[name] = {"codes": sorted({str(e.cause) for e in report.entries}),
                       "during": differences(before, inside.pop()) if watch else [], "after": differences(before, after)}
    return found

inside, events, watching = [], [], [False]

def note():
    """Called first in each loss function: a snapshot while diagnose runs it (a patch undone later shows here)."""
    if watching[0]:
        inside.append(snapshot())

run_all(False)  # warm-up: lazy imports, builds and caches happen here, unwatched

def hook(event, args):
    if watching[0] and event in ("object.__setattr__", "object.__delattr__") and isinstance(args[0], (type, types.ModuleType)):
        events.append(f"{event} {args[0].__name__}.{args[1]}")

sys.addaudithook(hook)
results = run_all(True)

from tensorflow.python.framework import ops  # the probe: a patch like the old recorder's, while a loss runs
base, original = ops._EagerTensorBase, ops._EagerTensorBase.numpy

watching[0] = True
before = snapshot()
base.numpy = lambda self: original(self)
try:
    stopped()
finally:
    base.numpy = original
probe = differences(before, inside.pop())
print(json.dumps({"probe": probe, "events": events, "results": results}))
'''


def test_diagnose_writes_no_class_or_module_attribute(tmp_path):
    """Across a numpy exit, a stop_gradient, a BatchNorm model and a closure tensor, does diagnose write no class or module attribute?"""
    script = tmp_path / "cases.py"  # a file, not `-c`: diagnose reads the loss functions' source
    script.write_text(SCRIPT)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["probe"] == ["tensorflow.python.framework.ops._EagerTensorBase.numpy"]
    results = found["results"]
    assert {name: r["codes"] for name, r in results.items()} == {
        "numpy_exit": ["numpy-in-path"], "mean_exit": ["numpy-in-path"], "stopped": ["stop-gradient"],
        "closure_tensor": ["outside-tape"], "batchnorm": ["None"]}
    assert found["events"] == []
    # TensorFlow's own op-callback registration (`op_callbacks.add_op_callback`, how the recorder sees ops)
    # rebinds `execute.execute` to its callback-checking twin while a callback is installed; that is the
    # only attribute that differs while diagnose runs, and nothing differs after it
    assert {name: r["during"] for name, r in results.items()} == dict.fromkeys(results, [CALLBACK_SWITCH])
    assert {name: r["after"] for name, r in results.items()} == dict.fromkeys(results, [])
