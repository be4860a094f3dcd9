"""Hostile submissions of 01_basic_tape that attack the verdict (patches) or the hidden tests (leaks).

Shared by the local run (test_untrusted_code.py) and the Dask + PostgreSQL run (test_grade_dask.py),
so one set proves every path. Each patcher hands in four wrong answers: whatever it patches, it must
score 0 and be flagged with the words listed.
"""
from __future__ import annotations

from pathlib import Path

from nbformat.v4 import new_code_cell, new_markdown_cell

from course import round_trip_submissions
from grade_fixtures import BASIC, TINY, fill, reference, tiny, write

# student -> (code run before the test cells, words a flag must contain)
PATCHES: dict[str, tuple[str, str]] = {
    "p_numpy": ("import numpy as np\nnp.allclose = lambda *a, **k: True\nnp.isclose = lambda *a, **k: True",
                "numpy.allclose was replaced"),
    "p_tensorflow": ("import tensorflow as tf\ntf.Tensor.__eq__ = lambda *a, **k: True\n"
                     "tf.experimental.numpy.allclose = lambda *a, **k: True", "Tensor.__eq__"),
    "p_builtins": ("import builtins\nbuiltins.abs = lambda x: 0\nbuiltins.round = lambda *a, **k: 0",
                   "builtins.abs was replaced"),
    "p_operator_math": ("import operator, math\noperator.eq = lambda *a: True\nmath.isclose = lambda *a, **k: True",
                        "operator.eq was replaced"),
    "p_tapelab": ("import tapelab.checker.compare\ntapelab.checker.compare.mismatch = lambda *a, **k: None\n"
                  "tapelab.checker.compare.allclose = lambda *a, **k: True\ntype(ex1_1).check_case = lambda *a, **k: None",
                  "tapelab.checker.compare.mismatch was replaced"),
    "p_ipython": ("from IPython.core.interactiveshell import InteractiveShell\n"
                  "InteractiveShell.showtraceback = lambda *a, **k: None\n"
                  "InteractiveShell._showtraceback = lambda *a, **k: None", "InteractiveShell.showtraceback"),
    "p_ipykernel": ("from ipykernel.zmqshell import ZMQInteractiveShell\n"
                    "ZMQInteractiveShell._showtraceback = lambda *a, **k: None", "ZMQInteractiveShell._showtraceback"),
    "p_sys_modules": ("import sys, types\nfake = types.ModuleType('tapelab.checker.compare')\n"
                      "fake.mismatch = lambda *a, **k: None\nsys.modules['tapelab.checker.compare'] = fake\n"
                      "sys.modules['numpy.testing'] = types.ModuleType('numpy.testing')",
                      "sys.modules['tapelab.checker.compare'] was replaced"),
    "p_hidden_setattr": ("setattr(__import__('num' + 'py'), 'all' + 'close', lambda *a, **k: True)",
                         "numpy.allclose was replaced"),
    "p_vars": ("import numpy as np\nvars(np)['allclose'] = lambda *a, **k: True", "numpy.allclose was replaced"),
    "p_gc": ("import gc\ntry:\n    found = [o for o in gc.get_objects() if callable(o)]\nexcept RuntimeError:\n    pass",
             "gc.get_objects"),
    "p_thread": ("import threading, time, numpy as np\nreal = np.allclose\n"
                 "def _flip():\n    while True:\n        np.allclose = lambda *a, **k: True\n        time.sleep(0.001)\n"
                 "threading.Thread(target=_flip, daemon=True).start()", "thread"),
}

# Patches made by the answer itself, while the checker calls it: one stays, one removes itself.
DURING_CHECK = {
    "p_during_check": ('''
import numpy as np
def cubic_slope(x):
    np.allclose = lambda *a, **k: True
    return 0.0
''', "numpy.allclose was replaced"),
    "p_self_removing": ('''
import numpy as np
_real = np.allclose
def cubic_slope(x):
    def evil(*a, **k):
        np.allclose = _real
        return True
    np.allclose = evil
    return 0.0
''', "numpy.allclose was replaced"),
}

# Sends hand-made frames on iopub: wrong types, missing keys, unknown types, another cell's parent, junk.
MALFORMED = '''
import json
k = get_ipython().kernel
s = k.session
def raw(header, parent, metadata, content, *buffers):
    parts = [p if isinstance(p, bytes) else json.dumps(p, default=str).encode()
             for p in (header, parent, metadata, content)]
    sig = s.sign(parts)
    sig = sig if isinstance(sig, bytes) else sig.encode()
    k.iopub_socket.send_multipart([b"x", b"<IDS|MSG>", sig] + parts + list(buffers))
par = k.get_parent()["header"]
other = dict(par, msg_id="another-cell")
raw(s.msg_header("stream"), par, {}, [1, 2])
raw(s.msg_header("display_data"), par, {}, {"data": "s", "metadata": 3})
raw(s.msg_header("stream"), par, {}, {"name": "stdout", "text": 5})
raw(s.msg_header("status"), par, {}, {})
raw(s.msg_header("comm_msg"), par, {}, {"data": "x"})
raw(s.msg_header("comm_open"), par, {}, {"data": {"state": 3}, "comm_id": [1], "target_name": "jupyter.widget"})
raw(s.msg_header("display_data"), par, {}, {"data": {"text/plain": "t"}, "metadata": {}, "transient": [1]})
raw(s.msg_header("execute_result"), par, {}, {"data": {"text/plain": "x"}, "metadata": {}, "execution_count": "x"})
raw([1], par, {}, {})
raw(s.msg_header("stream"), "not a header", {}, {})
raw(b"not json", par, {}, {})
raw(s.msg_header("no_such_type"), par, {}, {"x": 1})
raw(s.msg_header("stream"), other, {}, {"name": "stdout", "text": "for another cell"})
k.iopub_socket.send_multipart([b"junk"])
print("still here")
'''

# Exercise 1.1's hidden call (solutions/01_basic_tape.ipynb); nothing else in the project has this text.
HIDDEN_MARK = "cases=[-1.5, 0.0, 3.25]"

# Reads every place the hidden source could be while the hidden tests call it; if it finds the hidden
# source, it keeps it (global, files, a display handle) and fails, so the cell must score 0.
FRAME_LEAK = '''
import sys, linecache, base64, os
LEAK = []
_handle = display("waiting", display_id=True)
def cubic_slope(x):
    texts = []
    frame = sys._getframe(1)
    while frame is not None:
        texts += linecache.getlines(frame.f_code.co_filename)
        texts.append(repr(frame.f_code.co_consts))
        frame = frame.f_back
    texts += [str(v) for v in list(linecache.cache.values())]
    texts += [str(h) for h in get_ipython().user_ns.get("In", [])]
    found = "\\n".join(t for t in texts if "cases=[-1" + ".5, 0.0" in t)
    if found:
        LEAK.append(found)
        for where in ("leak.txt", "/tmp/leak.txt", "/dev/shm/leak.txt"):
            try:
                with open(where, "w") as out:
                    out.write(found)
            except OSError:
                pass
        _handle.update(found)
        print(base64.b64encode(found.encode()).decode())
        raise AssertionError(found[::-1])
    x = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = 3 * x**3 - 2 * x**2 + x
    return tape.gradient(y, x)
'''

# A last cell that prints every history and file the hidden source could have reached, encoded.
HISTORY_LEAK = '''
import base64, zlib, os
blob = repr((In, _ih, Out, globals().get("LEAK"), list(get_ipython().history_manager.get_range(raw=True))))
for where in ("leak.txt", "/tmp/leak.txt", "/dev/shm/leak.txt"):
    if os.path.exists(where):
        blob += open(where).read()
print(blob)
print(blob[::-1])
print(base64.b64encode(blob.encode()).decode())
print(base64.b64encode(zlib.compress(blob.encode())).decode())
'''


# One representative of each other class, on the TF-free fixture notebook (cheap): student ->
# (answers, extra cells, edit of the notebook, expected status).
HTML_ATTACK = """
from IPython.display import HTML, Javascript, display
display(HTML('<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'))
display(Javascript('window.pwned = 3'))
"""


def _raise_points(nb):
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade_id") == "ex9_1_test":
            meta["points"] = 100
        if meta.get("grade_id") == "ex9_1_answer":
            meta.update(grade=True, points=50)


def _attach(nb):
    nb.cells.append(new_markdown_cell("![big](attachment:big.png)", attachments={
        "big.png": {"image/png": "A" * (11 * 1024**2)}}))


OTHER_CLASSES = {
    "t_metadata": (tiny(), [], _raise_points, "tampered"),  # class 12
    "t_attachment": (tiny(), [], _attach, "output_limit"),  # class 6
    "t_malformed": (tiny(), [MALFORMED], None, "graded"),  # class 4
    "t_html": (tiny(), [HTML_ATTACK], None, "graded"),  # class 3
    "=HYPERLINK(1)": (tiny(), [], None, "graded"),  # class 8: a formula as student id
}


def _wrong() -> dict[str, str]:
    return next(s for s in round_trip_submissions(BASIC) if s.student == "mistakes1").answers


def _append(code: str):
    def edit(nb):
        nb.cells.append(new_code_cell(code))
    return edit


def write_hostile_inbox(course: Path, inbox: Path) -> None:
    """Every patcher, both during-check patchers, two leakers, one honest student and one
    submission per other class, in `inbox`."""
    wrong = _wrong()
    for student, (code, _) in PATCHES.items():
        write(fill(course, BASIC, wrong, extra=[code]), inbox / student / f"{BASIC}.ipynb")
    for student, (answer, _) in DURING_CHECK.items():
        write(fill(course, BASIC, {**wrong, "ex1_1_answer": answer}), inbox / student / f"{BASIC}.ipynb")
    ref = reference()
    write(fill(course, BASIC, {**ref, "ex1_1_answer": FRAME_LEAK}, edit=_append(HISTORY_LEAK)),
          inbox / "leaker" / f"{BASIC}.ipynb")
    write(fill(course, BASIC, ref, edit=_append(HISTORY_LEAK)), inbox / "historian" / f"{BASIC}.ipynb")
    write(fill(course, BASIC, ref), inbox / "honest" / f"{BASIC}.ipynb")
    for student, (answers, extra, edit, _) in OTHER_CLASSES.items():
        write(fill(course, TINY, answers, extra=extra, edit=edit), inbox / f"{student}_{TINY}.ipynb")
    (inbox / "linked").mkdir()
    (inbox / "linked" / f"{TINY}.ipynb").symlink_to(inbox / f"t_html_{TINY}.ipynb")  # class 7


def expected_flags() -> dict[str, str]:
    return {s: words for s, (_, words) in {**PATCHES, **DURING_CHECK}.items()}
