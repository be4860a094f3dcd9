"""diagnose on compiled code: a tf.function (XLA or not) replayed eagerly, a Keras fit step, intended -inf."""
import inspect

import keras
import numpy as np
import pytest
import tensorflow as tf

from tapelab.diagnose import allow_non_finite, diagnose, diagnose_fit_step

X = np.linspace(-1.0, 1.0, 32, dtype=np.float32).reshape(8, 4)
Y = np.zeros((8, 1), np.float32)


def small_model() -> keras.Model:
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="relu", name="hidden"),
                             keras.layers.Dense(1, name="out")], name="net")


def log_of_zero_step(model):
    """A step whose loss takes the log of a relu output that is 0 somewhere: -inf, then NaN gradients."""
    def step_loss():
        h = model.layers[0](X)
        guarded = tf.debugging.check_numerics(tf.math.log(h), "log(h)")  # the log(0)
        return tf.reduce_mean(guarded)
    return step_loss


def test_xla_lets_log_of_zero_through_check_numerics_and_diagnose_names_it(line_of):
    """Under jit_compile=True does `tf.debugging.check_numerics` let a log(0) pass silently (while eager
    raises), and does diagnose name `Log` and the user's line all the same?"""
    model = small_model()
    step_loss = log_of_zero_step(model)
    with pytest.raises(tf.errors.InvalidArgumentError):
        step_loss()  # eager: check_numerics sees the -inf
    compiled = tf.function(step_loss, jit_compile=True)
    assert not np.isfinite(compiled().numpy())  # XLA: no error, the -inf goes through
    report = diagnose(compiled, model=model)
    found = report.compiled.stopped_at
    assert found.code == "non-finite-value" and found.op == "Log"
    assert found.where.lineno == line_of(step_loss, "# the log(0)")
    assert "check_numerics` raised in the eager replay" in str(report) and "`Log` at line" in str(report)
    assert not report.ok


def test_enable_check_numerics_cannot_compile_an_xla_step():
    """Does `tf.debugging.enable_check_numerics` make an XLA step fail to compile (its instrumentation op has no
    XLA kernel), naming no op of the user's, and does diagnose report that and still name the op?"""
    model = small_model()

    def step_loss():
        return tf.reduce_mean(tf.math.log(model.layers[0](X)))

    compiled = tf.function(step_loss, jit_compile=True)
    tf.debugging.enable_check_numerics()
    try:
        with pytest.raises(tf.errors.InvalidArgumentError, match="DebugNumericSummaryV2"):
            compiled()
    finally:
        tf.debugging.disable_check_numerics()
    report = diagnose(compiled, model=model)  # the trace made while enabled stays in the function
    assert report["net/hidden/kernel"].op == "Log"
    assert "unsupported operations" in report.compiled.error and not report.ok


@pytest.mark.parametrize("jit_compile", [False, True])
def test_the_same_step_gives_the_same_entries_eager_and_compiled(jit_compile):
    """Does a step give the same entries (status, cause, op, line) eagerly and as a tf.function, and, under
    XLA, is every gradient whose status differs compiled listed as a disagreement?"""
    model = small_model()

    def step_loss():
        return tf.reduce_mean(tf.math.log(model.layers[0](X)))

    eager = diagnose(step_loss, model=model)
    compiled = diagnose(tf.function(step_loss, jit_compile=jit_compile), model=model)
    assert [(e.status, e.cause, e.op, e.where) for e in eager.entries] == \
           [(e.status, e.cause, e.op, e.where) for e in compiled.entries]
    assert eager.compiled is None
    differ = [name for name, (a, b) in compiled.compiled.statuses.items() if a != b]
    assert all(f"`{name}`" in str(compiled.compiled) for name in differ)
    assert compiled.compiled.agree == (not differ)
    if not jit_compile:
        assert not differ


def test_none_gradient_through_an_op_inside_a_compiled_step(line_of):
    """Is an argmax inside an XLA-compiled step named, with its line, as where the path breaks?"""
    model = small_model()

    def step_loss():
        scores = model(X)
        picked = tf.cast(tf.argmax(tf.concat([scores, -scores], 1), axis=1), tf.float32)  # the break
        return tf.reduce_mean(picked)

    report = diagnose(tf.function(step_loss, jit_compile=True), model=model)
    entry = report["net/out/kernel"]
    assert entry.status == "None" and entry.cause == "non-differentiable" and entry.op == "ArgMax"
    assert entry.where.lineno == line_of(step_loss, "# the break")


def attention_loss(wq, wk, mask, allow_mask: bool, real_nan: bool):
    """Masked self-attention with `-inf` on masked keys; `real_nan` adds a 0/0 elsewhere in the loss."""
    x = tf.constant(X)

    def loss_fn():
        q, k = x @ wq, x @ wk
        scores = q @ tf.transpose(k)
        if allow_mask:
            with allow_non_finite():
                scores = scores + tf.math.log(mask)  # the mask: log(1) = 0, log(0) = -inf
        else:
            scores = scores + tf.math.log(mask)  # the mask: log(1) = 0, log(0) = -inf
        attended = tf.nn.softmax(scores) @ x
        loss = tf.reduce_mean(attended ** 2)
        if real_nan:
            loss += tf.reduce_mean(q * 0.0 / tf.zeros_like(q))  # the real NaN
        return loss
    return loss_fn


@pytest.fixture
def attention():
    keras.utils.set_random_seed(0)
    wq = tf.Variable(tf.random.normal((4, 4)), name="wq")
    wk = tf.Variable(tf.random.normal((4, 4)), name="wk")
    mask = tf.constant(np.tril(np.ones((8, 8), np.float32)))  # causal: every row keeps its first key
    return wq, wk, mask


def _line_in(fn, marker: str) -> str:
    """`file.py:LINE` of the line of `fn`'s source that holds `marker` (the last one, if several)."""
    body, first = inspect.getsourcelines(fn)
    hits = [first + i for i, text in enumerate(body) if marker in text]
    return f"{fn.__code__.co_filename.rsplit('/', 1)[-1]}:{hits[-1]}"


@pytest.mark.parametrize("how", ["context manager", "op", "line"])
def test_masked_attention_with_minus_inf_allowed_and_a_real_nan_still_found(attention, how, line_of):
    """With the mask's -inf allowed (by context manager, op type or line), is a clean step ok, and is a
    real NaN elsewhere in the same compiled step still named, not the mask?"""
    wq, wk, mask = attention
    allow = {"context manager": (), "op": ("Log",), "line": (_line_in(attention_loss, "# the mask"),)}[how]
    in_block = how == "context manager"
    clean = diagnose(tf.function(attention_loss(wq, wk, mask, in_block, False), jit_compile=True), [wq, wk],
                     allow=allow)
    assert clean.ok, clean
    broken_fn = attention_loss(wq, wk, mask, in_block, True)
    entry = diagnose(tf.function(broken_fn, jit_compile=True), [wq, wk], allow=allow)["wq"]
    assert entry.status == "non_finite" and entry.op == "RealDiv"
    assert entry.where.lineno == line_of(attention_loss, "# the real NaN")


def test_without_the_allowlist_the_mask_is_blamed(attention, line_of):
    """Without an allowlist, is the mask's log(0) named as the first op to make -inf (so allowing it matters)?"""
    wq, wk, mask = attention
    loss_fn = attention_loss(wq, wk, mask, False, True)
    entry = diagnose(tf.function(loss_fn, jit_compile=True), [wq, wk])["wq"]
    assert entry.op == "Log" and entry.where.lineno == line_of(attention_loss, "else:") + 1


def test_an_allowed_minus_inf_that_becomes_nan_is_still_found(attention):
    """Is a fully masked row (softmax of only -inf: NaN) named at the softmax, though the -inf is allowed?"""
    wq, wk, _ = attention
    mask = tf.constant(np.vstack([np.zeros((1, 8)), np.tril(np.ones((7, 8)))]).astype(np.float32))
    report = diagnose(tf.function(attention_loss(wq, wk, mask, True, False), jit_compile=True), [wq, wk])
    assert report["wq"].status == "non_finite" and report["wq"].op == "Softmax"


def test_a_bad_allow_entry_is_refused():
    """Is an allow entry that is neither an op type nor `file:LINE` refused with the forms it accepts?"""
    w = tf.Variable(1.0)
    with pytest.raises(ValueError, match="file.py:LINE"):
        diagnose(lambda: w * 2.0, [w], allow=["model.py:line"])


def test_nan_only_in_the_compiled_run_is_reported_as_a_disagreement():
    """When the traced function kept a Python value since changed (eps was 0 when traced), is the NaN that
    only the compiled run makes reported as a disagreement, not silence?"""
    model = small_model()
    settings = {"eps": 0.0}

    @tf.function(jit_compile=True)
    def step_loss():
        return tf.reduce_mean(tf.math.log(tf.abs(model(X)) * 0.0 + settings["eps"]))

    assert not np.isfinite(step_loss().numpy())  # traced with eps = 0
    settings["eps"] = 1.0  # the fix, which the traced function never sees
    report = diagnose(step_loss, model=model)
    assert not report.ok and not report.compiled.agree
    assert "the loss is NaN or Inf compiled but finite in the eager replay" in str(report)
    assert all(entry.status != "non_finite" for entry in report.entries)


def test_xla_rewriting_away_an_overflow_is_reported_as_a_disagreement(line_of):
    """When XLA rewrites `log(exp(x))` to `x`, is the overflow the eager replay finds named, and the
    compiled run's finite loss reported as a disagreement?"""
    model = small_model()

    def step_loss():
        return tf.reduce_mean(tf.math.log(tf.exp(model(X) + 100.0)))  # the overflow

    assert np.isfinite(tf.function(step_loss, jit_compile=True)().numpy())
    report = diagnose(step_loss, model=model, jit_compile=True)
    assert report["net/out/kernel"].op == "Exp"
    assert report["net/out/kernel"].where.lineno == line_of(step_loss, "# the overflow")
    assert "the loss is finite compiled but NaN or Inf in the eager replay" in str(report.compiled)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_fit_step_with_a_poisoned_batch_names_the_data_and_leaves_the_model(jit_compile, keras_may_compile_with_xla):
    """Does diagnose_fit_step on a compiled model name the NaN in the batch, agree with the compiled run, and
    leave weights, optimizer and metrics as they were?"""
    model = small_model()
    model.compile(optimizer="adam", loss="mse", metrics=["mae"], jit_compile=jit_compile)
    model.fit(X, Y, epochs=1, verbose=0)
    before = [v.numpy().copy() for v in model.variables + model.optimizer.variables + model.metrics_variables]
    poisoned = X.copy()
    poisoned[3, 1] = np.nan
    report = diagnose_fit_step(model, poisoned, Y)
    assert report.compiled.how == f"a tf.function with jit_compile={jit_compile}"
    assert report.compiled.loss_finite == (False, False) and (report.compiled.agree or jit_compile)
    entry = report["net/hidden/kernel"]
    assert entry.status == "non_finite" and entry.cause == "non-finite-input" and entry.op == "MatMul"
    after = [v.numpy() for v in model.variables + model.optimizer.variables + model.metrics_variables]
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(before, after))
    assert diagnose_fit_step(model, X, Y).ok


def test_fit_step_refuses_a_model_with_its_own_train_step():
    """Is a model that overrides train_step refused with what to call instead?"""
    class Custom(keras.Model):
        def train_step(self, data):
            return {}

    inputs = keras.Input((4,))
    model = Custom(inputs, keras.layers.Dense(1)(inputs))
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match="overrides `train_step`"):
        diagnose_fit_step(model, X, Y)


def test_a_function_loaded_from_a_saved_model_is_named_as_not_opened(tmp_path):
    """Is a restored SavedModel function (no Python to replay) named in the comparison as one op the
    replay could not open, its NaN still traced to that call?"""
    class Scorer(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable([1.0, 0.0], name="w")

        @tf.function(input_signature=[])
        def loss(self):
            return tf.reduce_sum(tf.math.log(self.w))

    tf.saved_model.save(Scorer(), str(tmp_path / "scorer"))
    loaded = tf.saved_model.load(str(tmp_path / "scorer"))
    report = diagnose(loaded.loss, [loaded.w])
    assert report.compiled.opaque and "could not open" in str(report.compiled)
    assert report.entries[0].op in report.compiled.opaque
