"""Realistic wrong answers for 06_fit_vs_custom, each with words its feedback must contain."""
import tapelab_answers

from answers import Mistake


def _reference_edited(number: str, *edits: tuple[str, str]) -> str:
    """Exercise `number`'s reference answer with each (old, new) edit made everywhere (each must apply): its
    template, for an exercise in variants, so that the mistake applies to any variant."""
    found = tapelab_answers.answer(number)
    code = found.template or found.solution
    for old, new in edits:
        assert old in code, (number, old)
        code = code.replace(old, new)
    return code


def _edited62(*edits: tuple[str, str]) -> str:
    """Exercise 6.2's reference (for any variant) with each (old, new) edit made everywhere."""
    return _reference_edited("6.2", *edits)


_TEST_STEP_62 = '''        def test_step(self, data):
            x, y = data
            y_pred = tf.cast(self(x, training=False), y.dtype)
            loss = tf.reduce_mean(${fn}(y - y_pred))
            return self.track(x, y, y_pred, loss)

'''


MISTAKES = {
    "ex6_1_answer": [],  # below, edits of the reference (_edited61)
    "ex6_4_answer": [
        Mistake("one optimizer used for both layers", '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(${open}y - model(x, training=True)${close})
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    opt_a.apply(grads[:2], variables[:2])
    opt_a.apply(grads[2:], variables[2:])
    return loss
''', "With two optimizers, give each its own layer"),
        Mistake("optimizers swapped", '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(${open}y - model(x, training=True)${close})
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    opt_b.apply(grads[:2], variables[:2])
    opt_a.apply(grads[2:], variables[2:])
    return loss
''', "the optimizers are swapped"),
        Mistake("every variable given to opt_a", '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(${open}y - model(x, training=True)${close})
    grads = tape.gradient(loss, model.trainable_variables)
    opt_a.apply(grads, model.trainable_variables)
    return loss
''', "Did you pass all the variables to `opt_a`?"),
        Mistake("second layer never updated", '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    first = model.layers[0].trainable_variables
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(${open}y - model(x, training=True)${close})
    grads = tape.gradient(loss, first)
    opt_a.apply(grads, first)
    return loss
''', "did not change"),
        Mistake("model called without training=True", '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(${open}y - model(x)${close})
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    n = len(model.layers[0].trainable_variables)
    opt_a.apply(grads[:n], variables[:n])
    opt_b.apply(grads[n:], variables[n:])
    return loss
''', "Did you call `model(x, training=True)`"),
        Mistake("variables split at a fixed index", '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(${open}y - model(x, training=True)${close})
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    opt_a.apply(grads[:2], variables[:2])
    opt_b.apply(grads[2:], variables[2:])
    return loss
''', "split the variables at a fixed index"),
        Mistake("nothing returned", '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(${open}y - model(x, training=True)${close})
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    n = len(model.layers[0].trainable_variables)
    opt_a.apply(grads[:n], variables[:n])
    opt_b.apply(grads[n:], variables[n:])
''', "Did you forget `return loss`?"),
        Mistake("split counted on the second layer", '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(${open}y - model(x, training=True)${close})
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    n = len(model.layers[1].trainable_variables)
    opt_a.apply(grads[:n], variables[:n])
    opt_b.apply(grads[n:], variables[n:])
    return loss
''', "count another layer's variables"),
        Mistake("apply_gradients given two lists", '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(${open}y - model(x, training=True)${close})
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    n = len(model.layers[0].trainable_variables)
    opt_a.apply_gradients(grads[:n], variables[:n])
    opt_b.apply_gradients(grads[n:], variables[n:])
    return loss
''', "apply_gradients(zip(grads, variables))"),
    ],
    "ex6_3_answer": [
        Mistake("per-tensor clip_by_norm", '''
def clip_gradients(grads, max_norm):
    return [tf.clip_by_norm(g, max_norm) for g in grads]
''', "per tensor vs global"),
        Mistake("scales up small gradients", '''
def clip_gradients(grads, max_norm):
    global_norm = tf.sqrt(tf.add_n([tf.reduce_sum(tf.square(g)) for g in grads]))
    return [g * max_norm / global_norm for g in grads]
''', "scaled the gradients up"),
        Mistake("no square root", '''
def clip_gradients(grads, max_norm):
    squares = tf.add_n([tf.reduce_sum(tf.square(g)) for g in grads])
    scale = tf.minimum(1.0, max_norm / squares)
    return [g * scale for g in grads]
''', "forget the square root"),
        Mistake("tuple of tf.clip_by_global_norm returned whole", '''
def clip_gradients(grads, max_norm):
    return tf.clip_by_global_norm(grads, max_norm)
''', "instead of its first item"),
        Mistake("per-entry clip_by_value", '''
def clip_gradients(grads, max_norm):
    return [tf.clip_by_value(g, -max_norm, max_norm) for g in grads]
''', "clip_by_value"),
        Mistake("maximum instead of minimum", '''
def clip_gradients(grads, max_norm):
    global_norm = tf.sqrt(tf.add_n([tf.reduce_sum(tf.square(g)) for g in grads]))
    scale = tf.maximum(1.0, max_norm / global_norm)
    return [g * scale for g in grads]
''', "came back unchanged"),
    ],
    "ex6_2_answer": [
        Mistake("compiled_loss kept", _edited62(("loss = tf.reduce_mean(${fn}(y - y_pred))",
                                                 "loss = self.compiled_loss(y, y_pred)")),
                "compiled_loss"),
        Mistake("tracker fed the predictions", _edited62(("update_state(loss,", "update_state(y_pred,")),
                "These are the mean predictions"),
        Mistake("sum instead of mean", _edited62(("tf.reduce_mean(${fn}", "tf.reduce_sum(${fn}")),
                "instead of taking their mean"),
        Mistake("loss tracker with another name", _edited62(('Mean(name="loss")', 'Mean(name="${loss}_loss")')),
                "Did you name your loss metric"),
        Mistake("tracker defined at module level", 'loss_tracker = keras.metrics.Mean(name="loss")\n' + _edited62(
            ('            self.loss_tracker = keras.metrics.Mean(name="loss")\n', ""),
            ("        @property\n        def metrics(self):\n            return [self.loss_tracker, self.metric_tracker]\n\n",
             ""),
            ("return {m.name: m.result() for m in self.metrics}",
             'return {"loss": loss_tracker.result(), "${metric}": self.metric_tracker.result()}'),
            ("self.loss_tracker", "loss_tracker")), "Is your tracker an attribute of the model"),
        Mistake("metrics without @property", _edited62(("        @property\n", "")), "Did you forget `@property`"),
        Mistake("per-example losses not averaged", _edited62(("tf.reduce_mean(${fn}(y - y_pred))",
                                                             "keras.losses.mean_${error}_error(y, y_pred)")),
                "summed over the batch"),
        Mistake("no test_step", _edited62((_TEST_STEP_62, "")), "does not override `test_step`"),
        Mistake("test_step copied from train_step, tape and update included", _edited62((
            "            y_pred = tf.cast(self(x, training=False), y.dtype)\n            loss = tf.reduce_mean(${fn}(y - y_pred))\n",
            "            with tf.GradientTape() as tape:\n"
            "                y_pred = tf.cast(self(x, training=False), y.dtype)\n"
            "                loss = tf.reduce_mean(${fn}(y - y_pred))\n"
            "            self.optimizer.apply(tape.gradient(loss, self.trainable_variables), self.trainable_variables)\n")),
                "your `test_step` trains"),
    ],
}


def _edited61(train: tuple = (), test: tuple = ()) -> str:
    """Exercise 6.1's reference with each (old, new) edit made in its `train_step` (`train`) or from its
    `test_step` on (`test`); each edit must apply."""
    head, _, tail = _reference_edited("6.1").partition("\n        def test_step")
    tail = "\n        def test_step" + tail
    for old, new in train:
        assert old in head, old
        head = head.replace(old, new)
    for old, new in test:
        assert old in tail, old
        tail = tail.replace(old, new)
    return head + tail


_LOOP = '''            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss, sample_weight=tf.shape(x)[0])
                else:
                    metric.update_state(y, y_pred, sample_weight=sample_weight)
'''
_RETURN = "            return {m.name: m.result() for m in self.metrics}"
_UNPACK = "x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)"
_LOSS = "loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)"
_APPLY_ALL = ("grads = tape.gradient(scaled_loss, self.trainable_variables)\n"
              "            self.optimizer.apply(grads, self.trainable_variables)")
MISTAKES["ex6_1_answer"] += [
    Mistake("metrics never updated", _edited61(train=[(_LOOP, "")]), "forget to update the metrics"),
    Mistake("returns the batch loss only", _edited61(train=[(_LOOP, ""), (_RETURN, '            return {"loss": loss}')]),
            "forget to update the metrics"),
    Mistake("gradients applied to the kernel only", _edited61(train=[(_APPLY_ALL, (
        "kernel = self.trainable_variables[0]\n"
        "            self.optimizer.apply(tape.gradient(scaled_loss, [kernel]), [kernel])"))]), "never changed during training"),
    Mistake("hard-coded MSE instead of compute_loss",
            _edited61(train=[(_LOSS, "loss = tf.reduce_mean(tf.square(y - y_pred))")]), "without the sample weights"),
    Mistake("the Keras 2 compiled_loss idiom", _edited61(train=[
        (_LOSS, "loss = self.compiled_loss(y, y_pred, sample_weight=sample_weight)"),
        (_LOOP, "            self.compiled_metrics.update_state(y, y_pred, sample_weight=sample_weight)\n")]),
            "Keras 2 `self.compiled_loss`"),
    Mistake("only the loss metric updated", _edited61(train=[(_LOOP, (
        "            self.metrics[0].update_state(loss, sample_weight=tf.shape(x)[0])\n"))]),
            "forget to update the metrics"),
    Mistake("forward pass outside the tape", _edited61(train=[(
        "            with tf.GradientTape() as tape:\n                y_pred = self(x, training=True)\n",
        "            y_pred = self(x, training=True)\n            with tf.GradientTape() as tape:\n")]),
            "Every gradient was `None`"),
    Mistake("loss metric not weighted by batch size",
            _edited61(train=[("loss, sample_weight=tf.shape(x)[0]", "loss")], test=[("loss, sample_weight=tf.shape(x)[0]", "loss")]),
            "weights each batch's loss by its number of rows"),
    Mistake("loss never scaled under mixed precision",
            _edited61(train=[("tape.gradient(scaled_loss", "tape.gradient(loss")]), "scale_loss"),
    Mistake("section 3's step, `x, y = data`, given sample weights",
            _edited61(train=[(_UNPACK, "x, y = data"), (", sample_weight=sample_weight)", ")")]),
            "unpack_x_y_sample_weight(data)"),
    Mistake("sample weights unpacked but never given to the loss",
            _edited61(train=[(_LOSS, "loss = self.compute_loss(x=x, y=y, y_pred=y_pred)")]),
            "without the sample weights"),
    # Right only eagerly: `fit` traces train_step into a graph, where a tensor has no value (the checker
    # fits the first case of each check that way, the others with run_eagerly=True).
    Mistake("a tensor's value read inside train_step",
            _edited61(train=[(_RETURN, "            print(float(loss))\n" + _RETURN)]),
            "`TypeError: float() argument must be a string or a real number, not 'SymbolicTensor'`"),
    Mistake("no test_step", _edited61(test=[("def test_step(self, data):", "def evaluate_step(self, data):")]),
            "does not override `test_step`"),
    Mistake("test_step unpacks `x, y = data`", _edited61(test=[(_UNPACK, "x, y = data"), (", sample_weight=sample_weight)", ")")]),
            "hands `test_step`"),
    Mistake("test_step copied from train_step, tape and update included",
            _edited61(test=[("            y_pred = self(x, training=False)\n            " + _LOSS, (
                "            with tf.GradientTape() as tape:\n"
                "                y_pred = self(x, training=False)\n"
                "                " + _LOSS + "\n"
                "            self.optimizer.apply(tape.gradient(loss, self.trainable_variables), "
                "self.trainable_variables)"))]), "your `test_step` trains"),
    Mistake("test_step's loss without the weights",
            _edited61(test=[(_LOSS, "loss = self.compute_loss(x=x, y=y, y_pred=y_pred)")]),
            "pass them to `compute_loss`"),
    Mistake("the loss tracker given the rows' weights",
            _edited61(train=[("loss, sample_weight=tf.shape(x)[0]", "loss, sample_weight=sample_weight")]),
            "one weight per row"),
    Mistake("the compiled metrics not given the weights",
            _edited61(train=[("y_pred, sample_weight=sample_weight)", "y_pred)")],
                      test=[("y_pred, sample_weight=sample_weight)", "y_pred)")]),
            "without the sample weights"),
]
MISTAKES["ex6_2_answer"] += [
    Mistake("tracker not weighted by batch size", _edited62(("loss, sample_weight=tf.shape(x)[0]", "loss")),
            "by its number of rows"),
    Mistake("loss never scaled under mixed precision", _edited62(("tape.gradient(scaled_loss,", "tape.gradient(loss,")),
            "never scales its loss"),
    Mistake("float16 prediction minus float32 target", _edited62(("y_pred = tf.cast(self(x, training=True), y.dtype)",
                                                                  "y_pred = self(x, training=True)")),
            "tf.cast(y_pred, y.dtype)"),
    Mistake("the rows counted with .numpy() inside train_step",
            _edited62(("sample_weight=tf.shape(x)[0]", "sample_weight=len(x.numpy())")),
            "'SymbolicTensor' object has no attribute 'numpy'"),
]
MISTAKES["ex6_4_answer"] += [
    Mistake("the other variables taken from the second layer only", '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    first = model.layers[0].trainable_variables
    others = model.layers[1].trainable_variables
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(${open}y - model(x, training=True)${close})
    grads_first, grads_others = tape.gradient(loss, [first, others])
    opt_a.apply(grads_first, first)
    opt_b.apply(grads_others, others)
    return loss
''', "did not change"),
]

_APPLY = '''
    def apply():
        optimizer.apply(grads, model.trainable_variables)
        return tf.constant(True)

    return tf.cond({condition}, apply, lambda: tf.constant(False))
'''
_FORWARD = '''
def safe_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
    grads = tape.gradient(loss, model.trainable_variables)
'''
_GRADS_FINITE = "tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])"
MISTAKES["ex6_5_answer"] = [
    Mistake("only the loss checked", _FORWARD + _APPLY.format(condition="tf.math.is_finite(loss)"),
            "did you check only the loss?"),
    Mistake("only the gradients checked", _FORWARD + _APPLY.format(condition=_GRADS_FINITE),
            "did you check only the gradients?"),
    Mistake("a Python check with .numpy()", _FORWARD + '''
    if np.isfinite(loss.numpy()) and all(np.all(np.isfinite(g.numpy())) for g in grads) and len(x) > 0:
        optimizer.apply(grads, model.trainable_variables)
        return True
    return False
''', "Inside `tf.function` a tensor has no value"),
    Mistake("applied before the check", _FORWARD + '''
    optimizer.apply(grads, model.trainable_variables)
    return (tf.shape(x)[0] > 0) & tf.math.is_finite(loss) & ''' + _GRADS_FINITE + '''
''', "took a step anyway"),
    Mistake("a malformed batch swallowed", '''
def safe_step(model, optimizer, x, y):
    try:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - model(x, training=True)))
    except ValueError:
        return tf.constant(False)
    grads = tape.gradient(loss, model.trainable_variables)
''' + _APPLY.format(condition="(tf.shape(x)[0] > 0) & tf.math.is_finite(loss) & " + _GRADS_FINITE),
            "instead of raising"),
]

# Right only in float32 (issue 17 item 1): 6.4's step under mixed_float16, where each optimizer is a
# LossScaleOptimizer with its own scale, and 6.3's clipping on float16 gradients.
_TWO_STEP = '''
def two_optimizer_step(model, opt_a, opt_b, x, y):
    first = model.layers[0].trainable_variables
    others = [v for layer in model.layers[1:] for v in layer.trainable_variables]
    with tf.GradientTape({persistent}) as tape:
        y_pred = model(x, training=True)
        loss = tf.reduce_mean(${{open}}{difference}${{close}})
{scaled}
{apply}
    return loss
'''
_OWN_SCALES = "        scaled_a, scaled_b = opt_a.scale_loss(loss), opt_b.scale_loss(loss)"
_APPLY_OWN = '''    opt_a.apply(tape.gradient(scaled_a, first), first)
    opt_b.apply(tape.gradient(scaled_b, others), others)'''
_APPLY_ONE_GRADIENT = '''    grads_first, grads_others = tape.gradient({target}, [first, others])
    opt_a.apply(grads_first, first)
    opt_b.apply(grads_others, others)'''
_CAST_UP = "y - tf.cast(y_pred, y.dtype)"
MISTAKES["ex6_4_answer"] += [
    Mistake("loss never scaled under mixed precision", _TWO_STEP.format(
        persistent="", difference=_CAST_UP, scaled="", apply=_APPLY_ONE_GRADIENT.format(target="loss")),
        "never scales its loss"),
    *(Mistake(f"{name}'s loss scale used for every variable", _TWO_STEP.format(
        persistent="", difference=_CAST_UP, scaled=f"        scaled_loss = {name}.scale_loss(loss)",
        apply=_APPLY_ONE_GRADIENT.format(target="scaled_loss")), f"scales the loss once, by `{name}`'s scale")
      for name in ("opt_a", "opt_b")),
    Mistake("float16 prediction minus float32 target", _TWO_STEP.format(
        persistent="persistent=True", difference="y - y_pred", scaled=_OWN_SCALES, apply=_APPLY_OWN),
        "tf.cast(y_pred, y.dtype)"),
    Mistake("targets cast down to float16", _TWO_STEP.format(
        persistent="persistent=True", difference="tf.cast(y, y_pred.dtype) - y_pred", scaled=_OWN_SCALES,
        apply=_APPLY_OWN), "returned a float16 loss"),
    Mistake("two scaled losses from one non-persistent tape", _TWO_STEP.format(
        persistent="", difference=_CAST_UP, scaled=_OWN_SCALES, apply=_APPLY_OWN), "persistent=True"),
]

_CLIP = '''
def clip_gradients(grads, max_norm):
{norm}
    scale = {scale}
    return [g * scale for g in grads]
'''
_NORM = "    global_norm = tf.sqrt(tf.add_n([tf.reduce_sum(tf.square(g)) for g in grads]))"
MISTAKES["ex6_3_answer"] += [
    Mistake("a float32 constant in tf.minimum", _CLIP.format(
        norm=_NORM, scale="tf.minimum(tf.constant(1.0), max_norm / global_norm)"),
        "a float32 tensor in your code met them"),
    Mistake("max_norm cast to float32", _CLIP.format(
        norm=_NORM, scale="tf.minimum(1.0, tf.cast(max_norm, tf.float32) / global_norm)"),
        "a float32 tensor in your code met them"),
    Mistake("computed and returned in float32", _CLIP.format(
        norm='''    grads = [tf.cast(g, tf.float32) for g in grads]
    global_norm = tf.norm(tf.concat([tf.reshape(g, [-1]) for g in grads], axis=0))''',
        scale="tf.minimum(1.0, max_norm / global_norm)"), "keeps its gradient's dtype"),
    # The third edition's reference (issue 49): squared in the gradients' dtype, so float16 squares overflow.
    Mistake("norm squared in float16", _CLIP.format(norm=_NORM, scale="tf.minimum(1.0, max_norm / global_norm)"),
            "Compute the norm in float32"),
    Mistake("norm in float32, factor not cast back", _CLIP.format(
        norm=_NORM.replace("tf.square(g)", "tf.square(tf.cast(g, tf.float32))"),
        scale="tf.minimum(1.0, max_norm / global_norm)"), "cast the factor back"),
]

MISTAKES["ex6_6_answer"] = [
    Mistake("validated in training mode", '''
def evaluate(model, dataset):
    total, count = 0.0, 0
    for x, y in dataset:
        errors = $fn(y - model(x, training=True))
        total += float(tf.reduce_sum(errors))
        count += int(tf.size(errors))
    return ${open}total / count${close}
''', "Call `model(x, training=False)`"),
    Mistake("the mean of the batch means", '''
def evaluate(model, dataset):
    losses = []
    for x, y in dataset:
        losses.append(tf.reduce_mean($fn(y - model(x, training=False))))
    return ${open}float(tf.reduce_mean(losses))${close}
''', "plain mean of the 3 batch means"),
    Mistake("an optimizer step while evaluating", '''
def evaluate(model, dataset):
    optimizer = keras.optimizers.SGD(0.01)
    total, count = 0.0, 0
    for x, y in dataset:
        with tf.GradientTape() as tape:
            errors = $fn(y - model(x, training=False))
            loss = tf.reduce_mean(errors)
        optimizer.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        total += float(tf.reduce_sum(errors))
        count += int(tf.size(errors))
    return ${open}total / count${close}
''', "changed the model's weights"),
    Mistake("only the last batch's loss", '''
def evaluate(model, dataset):
    for x, y in dataset:
        loss = tf.reduce_mean($fn(y - model(x, training=False)))
    return ${open}float(loss)${close}
''', "the last batch alone"),
    Mistake("return inside the loop", '''
def evaluate(model, dataset):
    total, count = 0.0, 0
    for x, y in dataset:
        errors = $fn(y - model(x, training=False))
        total += float(tf.reduce_sum(errors))
        count += int(tf.size(errors))
        return ${open}total / count${close}
''', "did you `return` inside the loop?"),
    Mistake("every batch counted as full", '''
def evaluate(model, dataset):
    total, batches = 0.0, 0
    for x, y in dataset:
        total += float(tf.reduce_sum($fn(y - model(x, training=False))))
        batches += 1
    return ${open}total / (batches * 4)${close}
''', "as if every batch were full"),
]
