"""Each lint rule on a true positive and on a near miss it must not flag, in-process on source strings."""
import textwrap

import pytest

from tapelab.lint import RULES, lint_source
from tapelab.lint.file_rules import SYNTAX_ERROR, UNREADABLE_FILE
import more_rule_cases

# rule code -> (source with the pitfall, line it is reported on, a near miss that is right)
CASES = {
    "not-watched": ("""
        x = tf.constant(3.0)
        with tf.GradientTape() as tape:
            y = x * x
        g = tape.gradient(y, x)
        """, 4, """
        x = tf.constant(3.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        g = tape.gradient(y, x)
        """),
    "outside-tape": ("""
        w = tf.Variable(1.0)
        with tf.GradientTape() as tape:
            pass
        loss = w * 3.0
        g = tape.gradient(loss, w)
        """, 5, """
        w = tf.Variable(1.0)
        with tf.GradientTape() as tape:
            loss = w * 3.0
        print(loss * 2.0)
        g = tape.gradient(loss, w)
        loc = tf.Variable(0.0)
        normal = tfd.Normal(loc=loc, scale=1.0)          # an object built from the variable outside the tape:
        layer = make_head(loc)                           # it computes when its method runs inside the tape
        dense = tf.keras.layers.Dense(1, bias_initializer=tf.constant_initializer(loc))
        with tf.GradientTape() as tape2:
            nll = -normal.log_prob(3.0) + layer.penalty()
        g2 = tape2.gradient(nll, loc)
        """),
    "numpy-in-path": ("""
        def step(w, x):
            with tf.GradientTape() as tape:
                loss = tf.constant(np.mean(w * x))
            return tape.gradient(loss, w)
        """, 4, """
        def step(w, x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(w * x)
                print(np.mean(x))
            return tape.gradient(loss, w)
        """),
    "python-number-in-path": ("""
        def step(w, x):
            with tf.GradientTape() as tape:
                loss = tf.constant(float(tf.reduce_sum(w * x)))
            return tape.gradient(loss, w)
        """, 4, """
        def step(w, x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(w * x) * float(len(x))
            return tape.gradient(loss, w)
        """),
    "predict-in-tape": ("""
        def step(model, x, y):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model.predict(x))
            return tape.gradient(loss, model.trainable_variables)
        """, 4, """
        def step(model, x, y):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            return tape.gradient(loss, model.trainable_variables)

        def fit_gp(kernel, x, y):
            with tf.GradientTape() as tape:
                loss = -kernel.predict(x).log_prob(y)  # not a Keras model: its own `predict`
            return tape.gradient(loss, kernel.amplitude)
        """),
    "non-differentiable": ("""
        def step(model, x):
            with tf.GradientTape() as tape:
                y = tf.cast(tf.argmax(model(x), axis=1), tf.float32)
            return tape.gradient(y, model.trainable_variables)
        """, 4, """
        def step(model, x, labels):
            with tf.GradientTape() as tape:
                logits = model(x)
                hits = tf.cast(tf.argmax(logits, axis=1) == labels, tf.float32)
                loss = tf.reduce_mean(tf.nn.softmax(logits)) + 0.0 * tf.reduce_mean(hits)
            return tape.gradient(loss, model.trainable_variables)
        """),
    "stop-gradient": ("""
        def step(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.stop_gradient(x * x)
            return tape.gradient(y, x)
        """, 5, """
        def step(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = x * tf.stop_gradient(x)
            return tape.gradient(y, x)
        """),
    "unrecorded-gradient": ("""
        x = tf.Variable(2.0)
        with tf.GradientTape() as outer:
            with tf.GradientTape() as inner:
                y = x ** 3
        dy_dx = inner.gradient(y, x)
        d2 = outer.gradient(dy_dx, x)
        """, 6, """
        x = tf.Variable(2.0)
        with tf.GradientTape() as outer:
            with tf.GradientTape() as inner:
                y = x ** 3
            dy_dx = inner.gradient(y, x)
        d2 = outer.gradient(dy_dx, x)
        """),
    "no-gradients": ("""
        def step(model, optimizer, x, y):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model.predict(x))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
        """, 5, """
        def step(model, optimizer, x, y):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model.predict(x))
            grads = tape.gradient(loss, model.trainable_variables)
            if any(g is None for g in grads):
                raise ValueError("no gradient")
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
        """),
    "tape-used-twice": ("""
        x = tf.Variable(3.0)
        with tf.GradientTape() as tape:
            y, z = x * x, x * x * x
        dy = tape.gradient(y, x)
        dz = tape.gradient(z, x)
        """, 5, """
        x = tf.Variable(3.0)
        with tf.GradientTape() as tape:
            y = x * x
        if y > 0:
            dy = tape.gradient(y, x)
        else:
            dy = -tape.gradient(y, x)
        """),
    "tape-not-released": ("""
        x = tf.Variable(3.0)
        with tf.GradientTape(persistent=True) as tape:
            y = x * x
        dy = tape.gradient(y, x)
        for step in range(100):
            x.assign_sub(0.1 * dy)
        """, 2, """
        x = tf.Variable(3.0)
        with tf.GradientTape(persistent=True) as tape:
            y = x * x
        dy = tape.gradient(y, x)
        del tape
        for step in range(100):
            x.assign_sub(0.1 * dy)
        """),
    "replaced-by-tensor": ("""
        w = tf.Variable(1.0)
        for step in range(10):
            with tf.GradientTape() as tape:
                loss = (w * 2.0 - 1.0) ** 2
            w = w - 0.1 * tape.gradient(loss, w)
        """, 5, """
        w = tf.Variable(1.0)
        for step in range(10):
            with tf.GradientTape() as tape:
                loss = (w * 2.0 - 1.0) ** 2
            w.assign_sub(0.1 * tape.gradient(loss, w))
        """),
    "keras2-compiled-loss": ("""
        class Model(keras.Model):
            def train_step(self, data):
                x, y = data
                loss = self.compiled_loss(y, self(x))
        """, 4, """
        class Model(keras.Model):
            def train_step(self, data):
                x, y = data
                loss = self.compute_loss(x=x, y=y, y_pred=self(x))
        """),
    "keras2-reset-states": ("""
        def reset(model):
            for metric in model.metrics:
                metric.reset_states()
        """, 3, """
        def reset(model, lstm):
            for metric in model.metrics:
                metric.reset_state()
            lstm.reset_states()
        """),
    "keras2-get-gradients": ("""
        def grads(self, loss, params):
            return self.optimizer.get_gradients(loss, params)
        """, 2, """
        def grads(self, loss, params, helper):
            return helper.get_gradients(loss, params)
        """),
    "keras2-legacy-optimizer": ("""
        import tensorflow as tf
        optimizer = tf.keras.optimizers.legacy.Adam(1e-3)
        """, 2, """
        import tf_keras
        optimizer = tf_keras.optimizers.legacy.Adam(1e-3)
        """),
    "keras2-lr": ("""
        import keras
        optimizer = keras.optimizers.Adam(lr=1e-3)
        """, 2, """
        import keras
        from keras.optimizers import SGD
        optimizer = keras.optimizers.Adam(learning_rate=1e-3)
        plain = SGD(learning_rate=0.1)
        schedule = make_schedule(lr=0.1)
        print(schedule.lr, plain.learning_rate)
        """),
    "keras2-get-updates": ("""
        def updates(self, loss, params):
            return self.optimizer.get_updates(loss, params)
        """, 2, """
        def updates(self, loss, params, tape):
            grads = tape.gradient(loss, params)
            self.optimizer.apply_gradients(zip(grads, params))
            return self.ema.get_updates()
        """),
    "keras2-compiled-metrics": ("""
        class Model(keras.Model):
            def train_step(self, data):
                x, y = data
                self.compiled_metrics.update_state(y, self(x))
        """, 4, """
        class Model(keras.Model):
            def train_step(self, data):
                x, y = data
                for metric in self.metrics:
                    metric.update_state(y, self(x))
        """),
}

CASES.update(more_rule_cases.CASES)


# the findings a case may also give: gradients are None for `no-gradients` because of a cut the linter names
ALSO = {"no-gradients": {"predict-in-tape"}}


def _lint(source: str):
    return lint_source(textwrap.dedent(source).lstrip("\n"))


def test_every_rule_has_a_case():
    """Does every registered rule have a true positive and a near miss here (the file rules, which report on
    files rather than code, have theirs in test_file_rules.py)?"""
    assert set(CASES) == set(RULES) - {SYNTAX_ERROR.code, UNREADABLE_FILE.code}


@pytest.mark.parametrize("code", list(CASES))
def test_rule_reports_its_pitfall_on_its_line(code):
    """Is the pitfall reported under its own rule, once, on the line that holds it, with the rule's number?"""
    source, line, _ = CASES[code]
    found = _lint(source)
    assert [(f.line, f.number) for f in found if f.code == code] == [(line, RULES[code].number)]
    assert {f.code for f in found} - {code} == ALSO.get(code, set())


@pytest.mark.parametrize("code", list(CASES))
def test_rule_stays_silent_on_its_near_miss(code):
    """Is the right code that looks like the pitfall left without any finding (of any rule)?"""
    assert {f.code for f in _lint(CASES[code][2])} == ALSO.get(code, set())


def test_keras2_rules_are_off_in_keras_own_implementation():
    """Is a module importing Keras's private implementation (Keras itself) free of Keras 2 idiom findings?"""
    source = """
        from keras.src.optimizers import Adam
        from keras.optimizers import legacy as legacy
        """
    assert _lint(source) == []
    assert [f.code for f in _lint("from keras.optimizers import legacy as legacy\nopt = legacy.Adam()\n")] == [
        "keras2-legacy-optimizer"]


def test_the_message_names_the_culprit_and_the_fix_comes_from_the_catalogue():
    """Does a finding say which call cut the path, and give the cause catalogue's fix?"""
    from tapelab.causes import cause

    (found,) = _lint(CASES["numpy-in-path"][0])
    assert "`np.mean()`" in found.message and "line 3" in found.message
    assert found.fix == cause("numpy-in-path").fix


# More true positives a rule family must keep: (rule code, source, line reported)
MORE_PITFALLS = {
    "persistent tape kept in a list": ("tape-not-released", """
        def steps(w, xs):
            kept = []
            for x in xs:
                with tf.GradientTape(persistent=True) as tape:
                    loss = w * x
                kept.append(tape)
            return kept
        """, 6),
    "persistent tape kept on an object": ("tape-not-released", """
        class Probe:
            def record(self, w):
                with tf.GradientTape(persistent=True) as tape:
                    y = w * w
                self.tape = tape
        """, 5),
    "a non-trainable variable as a source": ("not-watched", """
        w = tf.Variable(2.0, trainable=False)
        with tf.GradientTape() as tape:
            y = w * w
        g = tape.gradient(y, w)
        """, 4),
    "sources in a dict, with watch_accessed_variables=False": ("not-watched", """
        w, b = tf.Variable(2.0), tf.Variable(1.0)
        params = {"w": w, "b": b}
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(w)
            y = w * b
        g = tape.gradient(y, params)
        """, 6),
    "nested sources, with watch_accessed_variables=False": ("not-watched", """
        w, b = tf.Variable(2.0), tf.Variable(1.0)
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(b)
            y = w * b
        g = tape.gradient(y, [[w], {"bias": b}])
        """, 5),
    "a model's weights, with watch_accessed_variables=False": ("not-watched", """
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            loss = model(x)
        g = tape.gradient(loss, model.trainable_variables)
        """, 3),
    "a legacy optimizer subclassed through an alias": ("keras2-legacy-optimizer", """
        import tensorflow as tf
        BASE = tf.keras.optimizers.legacy.Adam
        class LazyAdam(BASE):
            pass
        """, 2),
    "a legacy optimizer imported, then subclassed": ("keras2-legacy-optimizer", """
        from tensorflow.keras.optimizers.legacy import Optimizer
        class Bop(Optimizer):
            pass
        """, 1),
    "legacy optimizer classes in a dict, built later": ("keras2-legacy-optimizer", """
        import tensorflow as tf
        CLASSES = {"sgd": tf.keras.optimizers.legacy.SGD}
        optimizer = CLASSES["sgd"](0.1)
        """, 2),
    "compiled_metrics read for more than update_state": ("keras2-compiled-metrics", """
        class Model(keras.Model):
            def reset(self):
                self.compiled_metrics.reset_state()
        """, 3),
}
MORE_PITFALLS.update(more_rule_cases.MORE_PITFALLS)


# The false-alarm classes found on real code (issue 30), each a near miss of the rule that cried wolf:
# (rule code, source that is right)
FALSE_ALARMS = {
    "persistent tape rebound on each pass of a loop": ("tape-not-released", """
        def attributions(model, batches):
            out = []
            for batch in batches:
                with tf.GradientTape(persistent=True) as tape:
                    tape.watch(batch)
                    loss = model(batch)
                out.append(tape.gradient(loss, batch))
            return out
        """),
    "persistent tape rebound by a later tape": ("tape-not-released", """
        x = tf.Variable(3.0)
        with tf.GradientTape(persistent=True) as tape:
            y = x * x
        dy = tape.gradient(y, x)
        with tf.GradientTape(persistent=True) as tape:
            z = x * x * x
        dz = tape.gradient(z, x)
        del tape
        for step in range(10):
            x.assign_sub(0.1 * (dy + dz))
        """),
    "stop_gradient on the input of the model that owns the sources": ("stop-gradient", """
        with tf.GradientTape() as tape:
            logits = model(tf.stop_gradient(features))
            value = critic.value(tf.stop_gradient(logits))
            loss = tf.reduce_mean(logits) + value
        grads = tape.gradient(loss, model.trainable_variables)
        """),
    "stop_gradient on the argument of a method of an owner": ("stop-gradient", """
        loc = tf.Variable(0.0)
        normal = tfd.Normal(loc=loc, scale=1.0)
        with tf.GradientTape() as tape:
            nll = -normal.log_prob(tf.stop_gradient(samples))
        g = tape.gradient(nll, loc)
        """),
    "a trainable variable, or a watched frozen one, in a dict of sources": ("not-watched", """
        w, frozen = tf.Variable(2.0), tf.Variable(1.0, trainable=False)
        params = {"w": w, "frozen": frozen}
        with tf.GradientTape() as tape:
            tape.watch(frozen)
            y = w * frozen
        g = tape.gradient(y, params)
        """),
    "a class that defines its own compiled_loss": ("keras2-compiled-loss", """
        class Trainer(keras.Model):
            def compiled_loss(self, y, y_pred):
                return tf.reduce_mean((y - y_pred) ** 2)
            def train_step(self, data):
                x, y = data
                return self.compiled_loss(y, self(x))
        """),
    "a legacy optimizer only compared, tested with isinstance or annotated": ("keras2-legacy-optimizer", """
        import tensorflow as tf
        from tensorflow.keras.optimizers.legacy import Optimizer as LegacyOptimizer
        Legacy = tf.keras.optimizers.legacy.Optimizer
        def is_legacy(opt: tf.keras.optimizers.legacy.Optimizer) -> bool:
            return isinstance(opt, (tf.keras.optimizers.Optimizer, tf.keras.optimizers.legacy.Optimizer)) \\
                or type(opt) == Legacy or issubclass(type(opt), LegacyOptimizer)
        """),
    "a legacy optimizer through a module's tf_keras shim": ("keras2-legacy-optimizer", """
        from tensorflow_probability.python.internal import tf_keras
        class StochasticGradientLangevinDynamics(tf_keras.optimizers.legacy.Optimizer):
            pass
        """),
    "compiled_metrics only tested for truth": ("keras2-compiled-metrics", """
        def weights_of(model):
            return bool(model.compiled_metrics)
        """),
    "a script's last persistent tape": ("tape-not-released", """
        x = tf.Variable(3.0)
        with tf.GradientTape(persistent=True) as tape:
            y = x * x
        print(tape.gradient(y, x), tape.gradient(y, x))
        """),
}
FALSE_ALARMS.update(more_rule_cases.FALSE_ALARMS)


@pytest.mark.parametrize("label", list(MORE_PITFALLS))
def test_rule_reports_more_pitfalls(label):
    """Is each further true positive reported once, under its rule, on its line?"""
    code, source, line = MORE_PITFALLS[label]
    assert [(f.code, f.line) for f in _lint(source)] == [(code, line)]


@pytest.mark.parametrize("label", list(FALSE_ALARMS))
def test_false_alarm_classes_stay_silent(label):
    """Is each class of false alarm found on real code now a near miss: no finding of any rule?"""
    code, source = FALSE_ALARMS[label]
    assert _lint(source) == [], f"{code} cries wolf on: {label}"
