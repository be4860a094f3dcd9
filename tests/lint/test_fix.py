"""`tapelab lint --fix` and `--diff`: each fix on its true positive, the near misses left alone, fixed code that
compiles, imports and (in a subprocess with the real Keras 3) runs, notebooks edited in place, broken files kept."""
import copy
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import nbformat
import pytest

from tapelab.cli import main
from tapelab.lint import RULES, Config, lint_source
from tapelab.lint import files as lint_files
from tapelab.lint.fixes import ROUNDS, apply_edits, fix_file, fix_text
from tapelab.lint.model import Edit, finding

FIXED_RULES = {"keras2-lr", "keras2-reset-states", "keras2-legacy-optimizer", "all-variables",
               "keras3-watch-variables"}

# name -> (source with a fixable Keras 2 idiom, the source --fix makes of it, how many findings it fixes)
FIXES = {
    "all-variables": ("""
        import tensorflow as tf
        model = tf.keras.applications.ResNet50(weights=None)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(x, training=True))
        grads = tape.gradient(loss, model.variables)
        optimizer.apply_gradients(zip(grads, model.variables))
        """, """
        import tensorflow as tf
        model = tf.keras.applications.ResNet50(weights=None)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        """, 2),
    "watch-of-keras-variables": ("""
        import tensorflow as tf
        with tf.GradientTape() as tape:
            tape.watch(model.trainable_variables)
            loss = tf.reduce_sum(model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        """, """
        import tensorflow as tf
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        """, 1),
    "lr-keyword": ("""
        import keras
        optimizer = keras.optimizers.Adam(lr=1e-3)
        """, """
        import keras
        optimizer = keras.optimizers.Adam(learning_rate=1e-3)
        """, 1),
    "lr-keyword-of-an-imported-class": ("""
        from tensorflow.keras.optimizers import SGD
        optimizer = SGD(momentum=0.9, lr = 0.1)
        """, """
        from tensorflow.keras.optimizers import SGD
        optimizer = SGD(momentum=0.9, learning_rate = 0.1)
        """, 1),
    "lr-read-and-written": ("""
        import tensorflow as tf
        class Trainer:
            def decay(self):
                self.optimizer.lr = self.optimizer.lr * 0.5
        """, """
        import tensorflow as tf
        class Trainer:
            def decay(self):
                self.optimizer.learning_rate = self.optimizer.learning_rate * 0.5
        """, 2),
    "lr-after-non-ascii-text": ("""
        import keras
        optimizer = keras.optimizers.Adam()
        print("Lernrate, geschätzt:", optimizer.lr, "é", optimizer.lr)
        """, """
        import keras
        optimizer = keras.optimizers.Adam()
        print("Lernrate, geschätzt:", optimizer.learning_rate, "é", optimizer.learning_rate)
        """, 2),
    "reset-states-of-a-metric": ("""
        import keras
        mean = keras.metrics.Mean()
        mean.reset_states()
        """, """
        import keras
        mean = keras.metrics.Mean()
        mean.reset_state()
        """, 1),
    "reset-states-over-model-metrics": ("""
        import keras
        def reset(model):
            for metric in model.metrics:
                metric.reset_states()
        """, """
        import keras
        def reset(model):
            for metric in model.metrics:
                metric.reset_state()
        """, 1),
    "legacy-optimizer": ("""
        import tensorflow as tf
        optimizer = tf.keras.optimizers.legacy.RMSprop(1e-3, 0.8, rho=0.8, clipnorm=1.0)
        """, """
        import tensorflow as tf
        optimizer = tf.keras.optimizers.RMSprop(1e-3, 0.8, rho=0.8, clipnorm=1.0)
        """, 1),
    "legacy-from-an-imported-module": ("""
        from tensorflow.keras import optimizers
        optimizer = optimizers.legacy.SGD(0.1, 0.9, True)
        """, """
        from tensorflow.keras import optimizers
        optimizer = optimizers.SGD(0.1, 0.9, True)
        """, 1),
    "legacy-with-lr-over-two-rounds": ("""
        import tensorflow as tf
        optimizer = tf.keras.optimizers.legacy.Adam(
            lr=0.1,
            beta_1=0.8,
        )
        """, """
        import tensorflow as tf
        optimizer = tf.keras.optimizers.Adam(
            learning_rate=0.1,
            beta_1=0.8,
        )
        """, 2),
}

# name -> (source whose finding has no safe fix, the rule that still reports it)
NEAR_MISSES = {
    "subclassing-the-legacy-base-class": ("""
        import tensorflow as tf
        class Clipped(tf.keras.optimizers.legacy.Optimizer):
            pass
        """, "keras2-legacy-optimizer"),
    "legacy-name-passed-where-keras-3-takes-weight-decay": ("""
        import tensorflow as tf
        optimizer = tf.keras.optimizers.legacy.SGD(0.1, 0.9, False, "sgd")
        """, "keras2-legacy-optimizer"),
    "legacy-decay-that-keras-3-ignores": ("""
        import tensorflow as tf
        optimizer = tf.keras.optimizers.legacy.SGD(0.1, decay=1e-6)
        """, "keras2-legacy-optimizer"),
    "legacy-with-unknown-keywords": ("""
        import tensorflow as tf
        optimizer = tf.keras.optimizers.legacy.Adam(**settings)
        """, "keras2-legacy-optimizer"),
    "legacy-class-not-called": ("""
        import tensorflow as tf
        factory = tf.keras.optimizers.legacy.Adam
        optimizer = factory(0.1)
        """, "keras2-legacy-optimizer"),
    "legacy-import": ("""
        from tensorflow.keras.optimizers.legacy import Adam
        optimizer = Adam(0.1)
        """, "keras2-legacy-optimizer"),
    "lr-beside-learning-rate": ("""
        import keras
        optimizer = keras.optimizers.Adam(lr=0.1, learning_rate=0.2)
        """, "keras2-lr"),
    "lr-of-an-optimizers-module-not-from-keras": ("""
        from myproject import optimizers
        optimizer = optimizers.Adam(lr=0.1)
        """, "keras2-lr"),
    "lr-on-a-receiver-in-a-module-without-keras": ("""
        def decay(self):
            self.optimizer.lr *= 0.5
        """, "keras2-lr"),
    "reset-states-with-an-argument": ("""
        import keras
        mean = keras.metrics.Mean()
        mean.reset_states(0)
        """, "keras2-reset-states"),
    "compiled-loss": ("""
        import keras
        class Model(keras.Model):
            def train_step(self, data):
                x, y = data
                loss = self.compiled_loss(y, self(x))
        """, "keras2-compiled-loss"),
}


def _source(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def _run(capsys, *argv):
    status = main(["lint", *map(str, argv)])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("name", list(FIXES))
def test_each_fix_rewrites_its_true_positive(name):
    """Does --fix rewrite the Keras 2 idiom into the Keras 3 one, leaving a module that compiles and that lint
    finds clean of the fixed rules?"""
    before, after, fixed = _source(FIXES[name][0]), _source(FIXES[name][1]), FIXES[name][2]
    assert any(f.edit is not None for f in lint_source(before))
    result = fix_text(before, "module.py")
    assert (result.after, result.fixed) == (after, fixed)
    assert result.findings == [] and not {f.code for f in lint_source(after)} & FIXED_RULES
    compile(result.after, "module.py", "exec")


@pytest.mark.parametrize("name", list(NEAR_MISSES))
def test_a_finding_without_a_safe_fix_is_reported_and_left_as_it_is(name):
    """Is a Keras 2 idiom whose rewrite would not mean the same still reported, but not marked fixable nor
    changed by --fix?"""
    source, code = _source(NEAR_MISSES[name][0]), NEAR_MISSES[name][1]
    found = lint_source(source, "module.py")
    assert [f.code for f in found] == [code] and found[0].edit is None
    result = fix_text(source, "module.py")
    assert (result.after, result.fixed, result.findings) == (source, 0, found)


def test_a_silenced_or_ignored_finding_is_not_fixed():
    """Does --fix leave alone what a pragma silences or the configuration ignores, as it reports neither?"""
    source = "import keras\noptimizer = keras.optimizers.Adam(lr=0.1)  # tapelab: ignore[keras2-lr]\n"
    assert fix_text(source, "m.py").after == source
    plain = source.replace("  # tapelab: ignore[keras2-lr]", "")
    assert fix_text(plain, "m.py", Config(ignore=frozenset({"TPL205"}))).after == plain


def test_fixed_module_imports_and_works_with_keras_3_shaped_objects(tmp_path):
    """Does a fixed module without a module-level TensorFlow import still import, and call what Keras 3 objects
    have (`reset_state`, `learning_rate`), where the unfixed one raises?"""
    path = tmp_path / "training.py"
    path.write_text(_source("""
        def make_optimizer(rate):
            import tensorflow as tf
            return tf.keras.optimizers.legacy.Adam(lr=rate)

        def reset_all(model):
            for metric in model.metrics:
                metric.reset_states()

        def halve(trainer):
            trainer.optimizer.lr = trainer.optimizer.lr / 2
        """))
    unfixed = _import(path, "unfixed")
    fix_file(path, write=True)
    fixed = _import(path, "fixed")
    assert not {f.code for f in lint_source(path.read_text())} & FIXED_RULES
    assert "tf.keras.optimizers.Adam(learning_rate=rate)" in path.read_text()
    resets = []
    model = types.SimpleNamespace(metrics=[types.SimpleNamespace(reset_state=lambda: resets.append(1))] * 2)
    with pytest.raises(AttributeError):
        unfixed.reset_all(model)
    fixed.reset_all(model)
    trainer = types.SimpleNamespace(optimizer=types.SimpleNamespace(learning_rate=0.1))
    with pytest.raises(AttributeError):
        unfixed.halve(trainer)
    fixed.halve(trainer)
    assert resets == [1, 1] and trainer.optimizer.learning_rate == 0.05


def _import(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RUNNER = """
import contextlib, io, json, sys
outcomes = []
for source in json.load(sys.stdin):
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(source, {})
        outcomes.append(["ok", out.getvalue().strip()])
    except Exception as error:
        outcomes.append([type(error).__name__, ""])
print(json.dumps(outcomes))
"""

# Keras 2 snippet -> (what it does under Keras 3, what its fixed form does)
UNDER_KERAS3 = {
    "import keras\noptimizer = keras.optimizers.Adam(lr=0.1)\nprint(round(float(optimizer.learning_rate), 6))\n":
        (["ValueError", ""], ["ok", "0.1"]),
    "import keras\noptimizer = keras.optimizers.SGD()\nprint(round(float(optimizer.lr), 6))\n":
        (["AttributeError", ""], ["ok", "0.01"]),
    "import keras\noptimizer = keras.optimizers.SGD()\noptimizer.lr = 0.5\n"
    "print(round(float(optimizer.learning_rate), 6))\n": (["ok", "0.01"], ["ok", "0.5"]),  # Keras 3 ignores `.lr =`
    "import keras\nmean = keras.metrics.Mean()\nmean.update_state([2.0])\nmean.reset_states()\n"
    "print(float(mean.result()))\n": (["AttributeError", ""], ["ok", "0.0"]),
    "import tensorflow as tf\noptimizer = tf.keras.optimizers.legacy.Adam(lr=0.1, beta_1=0.8)\n"
    "print(round(float(optimizer.learning_rate), 6), optimizer.beta_1)\n": (["ImportError", ""], ["ok", "0.1 0.8"]),
}


def test_fixed_snippets_run_under_the_real_keras_3():
    """Under the Keras 3 installed with the course, does each Keras 2 snippet fail (or, for `optimizer.lr = x`,
    silently do nothing) and its fixed form do what the snippet meant?"""
    snippets = list(UNDER_KERAS3)
    fixed = [fix_text(s, "snippet.py").after for s in snippets]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")
    done = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(snippets + fixed), capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    outcomes = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcomes == [UNDER_KERAS3[s][0] for s in snippets] + [UNDER_KERAS3[s][1] for s in snippets]


@pytest.fixture
def project(tmp_path):
    (tmp_path / "fixable.py").write_text("import keras\noptimizer = keras.optimizers.Adam(lr=0.1)\n")
    (tmp_path / "mixed.py").write_text(_source(NEAR_MISSES["compiled-loss"][0]) + "        self.reset_metrics()\n"
                                       "        for metric in self.metrics:\n            metric.reset_states()\n")
    return tmp_path


def test_text_output_marks_fixable_findings_and_counts_them(project, capsys):
    """Does plain `tapelab lint` mark a fixable finding `[*]`, leave the others unmarked, and say how many can
    be fixed?"""
    status, out, _ = _run(capsys, project)
    lines = out.splitlines()
    assert status == 1 and lines[-2:] == ["3 findings", "[*] 2 fixable with `tapelab lint --fix`"]
    assert [" [*] " in line for line in lines[:-2]] == [True, False, True]
    assert "TPL205 [*] [keras2-lr]" in lines[0] and "TPL201 [keras2-compiled-loss]" in lines[1]


def test_diff_prints_what_fix_would_change_and_writes_nothing(project, capsys):
    """Does --diff print a unified diff of the fixes, change no file, and exit 1 (0 when nothing would change)?"""
    before = {p: p.read_bytes() for p in project.iterdir()}
    status, out, err = _run(capsys, "--diff", project)
    assert status == 1 and {p: p.read_bytes() for p in project.iterdir()} == before
    assert f"--- {project / 'fixable.py'}\n+++ {project / 'fixable.py'}\n" in out
    assert "-optimizer = keras.optimizers.Adam(lr=0.1)\n+optimizer = keras.optimizers.Adam(learning_rate=0.1)\n" in out
    assert "-            metric.reset_states()\n+            metric.reset_state()\n" in out
    assert not [line for line in out.splitlines() if line[:1] in "+-" and "compiled_loss" in line]
    assert "would fix 2 findings in 2 files" in err
    (project / "mixed.py").unlink()
    _run(capsys, "--fix", project)
    assert _run(capsys, "--diff", project)[:2] == (0, "")


def test_fix_writes_the_files_then_reports_what_remains(project, capsys):
    """Does --fix rewrite the files, report only the findings it could not fix (exit 1), and exit 0 once none
    remain?"""
    status, out, err = _run(capsys, "--fix", project)
    assert "learning_rate=0.1" in (project / "fixable.py").read_text()
    assert "metric.reset_state()" in (project / "mixed.py").read_text()
    assert status == 1 and "fixed 2 findings in 2 files" in err
    remaining, summary = out.splitlines()
    assert f"{project / 'mixed.py'}:5:16: TPL201 [keras2-compiled-loss] warning: `self.compiled_loss`" in remaining
    assert summary == "1 finding"
    assert _run(capsys, "--fix", project / "fixable.py")[:2] == (0, "0 findings\n")


def test_fix_and_diff_together_are_a_usage_error(project, capsys):
    """Are --fix and --diff refused together (exit 2), since one writes and the other promises not to?"""
    with pytest.raises(SystemExit) as stop:
        main(["lint", "--fix", "--diff", str(project)])
    assert stop.value.code == 2 and "not allowed with" in capsys.readouterr().err


def _notebook(*cells):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Schätzung der Lernrate")] + list(cells))


def test_notebook_cells_are_fixed_and_everything_else_kept(tmp_path, capsys):
    """Are a notebook's cells fixed in its JSON, written back exactly as nbformat writes the fixed notebook
    (outputs, metadata, magics, non-ASCII text untouched), and shown by --diff cell by cell?"""
    optimizer = nbformat.v4.new_code_cell("optimizer = keras.optimizers.Adam(lr=0.1)\noptimizer", execution_count=2,
                                          outputs=[nbformat.v4.new_output("execute_result", {"text/plain": "<Adam>"},
                                                                          execution_count=2)])
    optimizer.metadata["tags"] = ["keep-me"]
    book = _notebook(nbformat.v4.new_code_cell("%matplotlib inline\nimport keras"), optimizer,
                     nbformat.v4.new_code_cell("mean = keras.metrics.Mean()\nmean.reset_states()  # é"))
    path = tmp_path / "course.ipynb"
    nbformat.write(book, path)
    expected = copy.deepcopy(book)
    expected.cells[2].source = "optimizer = keras.optimizers.Adam(learning_rate=0.1)\noptimizer"
    expected.cells[3].source = "mean = keras.metrics.Mean()\nmean.reset_state()  # é"
    nbformat.write(expected, tmp_path / "expected.ipynb")

    status, out, _ = _run(capsys, "--diff", path)
    assert status == 1 and f"--- {path}:cell 2\n+++ {path}:cell 2\n" in out and f"+++ {path}:cell 3\n" in out
    assert "+mean.reset_state()  # é\n" in out
    assert _run(capsys, "--fix", path)[0] == 0
    assert path.read_text(encoding="utf-8") == (tmp_path / "expected.ipynb").read_text(encoding="utf-8")


def test_a_file_that_does_not_parse_is_left_alone(tmp_path, capsys):
    """Is a file (or a notebook cell) that does not parse left byte for byte as it was, reported as a syntax error, while
    the notebook's other cells are fixed?"""
    broken = tmp_path / "broken.py"
    broken.write_bytes(b"import keras\noptimizer = keras.optimizers.Adam(lr=0.1)\ndef train(:\n")
    book = _notebook(nbformat.v4.new_code_cell("import keras\nkeras.optimizers.Adam(lr=0.1)"),
                     nbformat.v4.new_code_cell("keras.optimizers.Adam(lr=0.2)\ndef train(:"))
    nbformat.write(book, tmp_path / "course.ipynb")
    _, out, _ = _run(capsys, "--fix", tmp_path)
    assert broken.read_bytes() == b"import keras\noptimizer = keras.optimizers.Adam(lr=0.1)\ndef train(:\n"
    assert f"{broken}:3:11: TPL001 [syntax-error]" in out and "course.ipynb:cell 2:2:11: TPL001" in out
    cells = nbformat.read(tmp_path / "course.ipynb", as_version=4).cells
    assert [c.source for c in cells[1:]] == ["import keras\nkeras.optimizers.Adam(learning_rate=0.1)",
                                             "keras.optimizers.Adam(lr=0.2)\ndef train(:"]


def test_a_file_that_cannot_be_read_is_left_alone(tmp_path):
    """Is a file that is not UTF-8 left byte for byte as it was, with a warning saying why, and reported as
    `tapelab lint` reports it (TPL002 unreadable-file)?"""
    path = tmp_path / "latin1.py"
    path.write_bytes("import keras\n# Schätzung\nkeras.optimizers.Adam(lr=0.1)\n".encode("latin-1"))
    result = fix_file(path, write=True)
    assert path.read_bytes() == "import keras\n# Schätzung\nkeras.optimizers.Adam(lr=0.1)\n".encode("latin-1")
    assert result.warnings[0].startswith(f"{path}: not fixed, it cannot be read")
    assert [(f.number, f.line) for f in result.findings] == [("TPL002", 2)]


def test_line_endings_are_kept(tmp_path):
    """Does --fix keep a file's Windows line endings?"""
    path = tmp_path / "crlf.py"
    path.write_bytes(b"import keras\r\noptimizer = keras.optimizers.Adam(lr=0.1)\r\noptimizer.lr = 0.2\r\n")
    fix_file(path, write=True)
    assert path.read_bytes() == (b"import keras\r\noptimizer = keras.optimizers.Adam(learning_rate=0.1)\r\n"
                                 b"optimizer.learning_rate = 0.2\r\n")


def test_overlapping_edits_wait_for_the_next_round():
    """Is an edit that overlaps one before it left out of that round (and counted out)?"""
    edits = [Edit(1, 2, 1, 4, "Y"), Edit(1, 0, 1, 3, "X"), Edit(2, 0, 2, 0, "+")]
    assert apply_edits("abcdef\nghi", edits) == ("Xdef\n+ghi", 2)


def _always(edit):
    """A checker that reports one finding with `edit` on any module (standing in for a rule's bad edit)."""
    return [(lambda source: True, lambda tree: iter([finding("keras2-lr", tree.body[0], "stand-in", edit)]))]


@pytest.mark.parametrize("name", ["module.py", "course.ipynb"])
def test_a_fix_that_would_break_the_code_is_not_applied(monkeypatch, name):
    """If a rule's edit would make the file (or the cell) stop parsing, is the text kept as it was, with a
    warning?"""
    monkeypatch.setattr(lint_files, "CHECKERS", _always(Edit(1, 0, 1, 1, "(")))
    text = nbformat.writes(_notebook(nbformat.v4.new_code_cell("x = 1"))) if name.endswith(".ipynb") else "x = 1\n"
    result = fix_text(text, name)
    assert (result.after, result.fixed) == (text, 0)
    assert result.warnings == [f"{name}: not fixed: the fix of 1 finding would make it stop parsing (a bug of "
                               "tapelab lint: please report it)"]


def test_fixing_stops_after_a_few_rounds(monkeypatch):
    """Does a fix that keeps finding more to fix stop after ROUNDS rounds instead of looping forever?"""
    monkeypatch.setattr(lint_files, "CHECKERS", _always(Edit(1, 0, 1, 0, "x = 0; ")))
    result = fix_text("x = 1\n", "module.py")
    assert result.fixed == ROUNDS and result.after == "x = 0; " * ROUNDS + "x = 1\n"


def test_the_docs_name_the_rules_that_have_a_fix():
    """Does docs/lint.md's Fixing section name as fixable exactly the rules whose findings carry a fix here, and
    every other Keras 2 rule as having none?"""
    docs = (Path(__file__).parents[2] / "docs" / "lint.md").read_text()
    fixable, unfixed = re.split(r"No fix\s+exists for", docs.split("## Fixing")[1].split("\n## ")[0])
    carried = {f.number for before, _, _ in FIXES.values() for f in lint_source(_source(before)) if f.edit}
    keras = {r.number for r in RULES.values() if r.number.startswith("TPL2")}
    assert set(re.findall(r"TPL\d+", fixable)) == carried == {RULES[code].number for code in FIXED_RULES}
    assert set(re.findall(r"TPL\d+", unfixed)) == keras - carried
