"""Questions vetted against the code (tapelab.checker.premises): a question the code already answers is never shown."""
import pytest

from answers import define
from tapelab.checker.code_facts import CodeFacts
from tapelab.checker.messages import Incorrect
from tapelab.checker.premises import PREMISES, vetted

_BY_NAME = {p.name: p for p in PREMISES}


# Code that already does what each question asks about (answers to exercises live here, never in the package).
_ANSWERED = {
    'apply-called': '''
def train_step(model, optimizer, loss_fn, x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True)) + model.losses
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss
''',
    'epoch-loop': '''
def train_epochs(step, dataset, epochs, metric):
    means = []
    batches = iter(dataset)
    for epoch in range(epochs):
        for x, y in batches:
            metric.update_state(step(x, y))
        means.append(float(metric.result()))
    return means
''',
    'rebound': '''
def manual_sgd_step(variables, grads, lr):
    for v, g in zip(variables, grads):
        values = v.numpy()
        values -= lr * g.numpy()
''',
    'watch-called': '''
def sigmoid_slopes(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
    return tape.gradient(tf.sigmoid(x), x)
''',
    'input-only-tape': '''
def input_only_gradient(model, x):
    x = tf.Variable(x)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = model(x)
    return tape.gradient(y, x), tape.watched_variables()
''',
    'training-mode': '''
def model_gradients(model, loss_fn, x, y):
    preds = model(x, training=True)
    with tf.GradientTape() as tape:
        loss = loss_fn(y, preds)
    return tape.gradient(loss, model.trainable_variables)
''',
    'inside-block': '''
def cubic_slope(x):
    x = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = 3 * x**3 - 2 * x**2 + x
    return tape.gradient(y, x)
''',
    'asked-twice': '''
def sigmoid_slopes(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.sigmoid(x)
    return tape.gradient(y, x)
''',
    'assign-add': '''
def manual_sgd_step(variables, grads, lr):
    for v, g in zip(variables, grads):
        v.assign(lr * g)
''',
    'trainable-sources': '''
def model_gradients(model, loss_fn, x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    return tape.gradient(loss, model.trainable_variables)
''',
}


def _facts(code: str, label: str) -> CodeFacts:
    namespace = define(code, f"premise {label}", {})
    fn = next(v for k, v in namespace.items() if callable(v) and not k.startswith("__"))
    return CodeFacts.of(fn)


@pytest.mark.parametrize("premise", PREMISES, ids=[p.name for p in PREMISES])
def test_a_question_the_code_already_answers_is_taken_out(premise):
    """Is every template's question, put to code that already does what it asks about, taken out with its cause?"""
    failure = Incorrect(f"`x` is 1.0, but should be 2.0. {premise.question}", cause=premise.causes[0])
    shown = vetted(failure, _facts(_ANSWERED[premise.name], premise.name))
    assert premise.question not in str(shown) and shown.cause is None, str(shown)
    assert str(shown) == "`x` is 1.0, but should be 2.0."


# Code that does not answer the question: the question stays.
_OPEN = {
    "rebound": "def manual_sgd_step(variables, grads, lr):\n    for v, g in zip(variables, grads):\n        v = v - lr * g\n",
    "asked-twice": "def f(x):\n    with tf.GradientTape() as tape:\n        y = x * x\n"
                   "    return tape.gradient(y, x), tape.gradient(y, x)\n",
    "inside-block": "def f(x):\n    y = x * x\n    with tf.GradientTape() as tape:\n        pass\n"
                    "    return tape.gradient(y, x)\n",
    "assign-add": "def manual_sgd_step(variables, grads, lr):\n    for v, g in zip(variables, grads):\n"
                  "        v.assign_add(lr * g)\n",
}
_NOTHING = "def f(x):\n    with tf.GradientTape() as tape:\n        y = model(x)\n    return y\n"


@pytest.mark.parametrize("premise", PREMISES, ids=[p.name for p in PREMISES])
def test_a_question_the_code_leaves_open_stays(premise):
    """Is the same question kept, with its cause, for code that does not answer it (the near miss)?"""
    failure = Incorrect(f"`x` is 1.0, but should be 2.0. {premise.question}", cause=premise.causes[0])
    shown = vetted(failure, _facts(_OPEN.get(premise.name, _NOTHING), premise.name + " open"))
    assert shown is failure


def test_every_template_has_code_that_answers_it():
    """Does the walk above cover every template of the table, and no other?"""
    assert set(_ANSWERED) == {p.name for p in PREMISES}


def test_each_question_matches_its_own_pattern():
    """Does each template's pattern find the question as the engine writes it?"""
    for premise in PREMISES:
        assert premise.find(premise.question), premise.name


def test_without_source_nothing_is_taken_out():
    """Is a failure left as it is when the function's source cannot be read (no facts, no evidence)?"""
    premise = _BY_NAME["apply-called"]
    failure = Incorrect(f"Nothing moved. {premise.question}", cause="no-update")
    assert vetted(failure, CodeFacts()) is failure


def test_a_generic_fix_the_task_rules_out_gives_way_to_the_task_s_own():
    """Is "open it with persistent=True" replaced by the exercise's own fix where its task rules it out?"""
    from tapelab.exercises.persistent_tapes import ex4_3

    failure = Incorrect("A non-persistent tape answers one `gradient` call and is then released. To ask one tape "
                        "several times, open it with `tf.GradientTape(persistent=True)` and `del tape` after the last "
                        "call.", cause="tape-used-twice")
    shown = vetted(failure, CodeFacts(), ex4_3.remedies)
    assert "persistent=True" not in str(shown) and "nested tapes" in str(shown) and shown.cause == "tape-used-twice"


def test_every_remedy_an_exercise_rules_out_is_one_the_engine_offers():
    """Does each exercise's `remedies` name a generic fix of the table (so none silently never applies)?"""
    from tapelab.checker.premises import REMEDIES
    from tapelab.exercises import basic_tape, debugging_none, persistent_tapes, watching_tensors

    for module in (basic_tape, debugging_none, persistent_tapes, watching_tensors):
        for name in module.__all__:
            assert set(getattr(module, name).remedies) <= set(REMEDIES), name


def test_a_call_in_a_comprehension_counts_as_asked_twice():
    """Is "did you call `tape.gradient` twice?" kept for one call written inside a list comprehension?"""
    premise = _BY_NAME["asked-twice"]
    code = ("def f(x):\n    with tf.GradientTape() as tape:\n        y = x * x\n"
            "    return [tape.gradient(y[i], x) for i in range(3)]\n")
    failure = Incorrect(f"It raised. {premise.question}", cause="tape-used-twice")
    assert vetted(failure, _facts(code, "comprehension")) is failure


def test_a_question_about_a_tape_the_code_does_not_open_stays():
    """Is a question naming a tape the code has no block for left alone (the code cannot answer it)?"""
    premise = _BY_NAME["asked-twice"]
    failure = Incorrect("It raised. Did you call `tape.gradient` twice?", cause="tape-used-twice")
    code = "def f(x):\n    with tf.GradientTape() as outer:\n        y = x * x\n    return outer.gradient(y, x)\n"
    assert premise.find(str(failure)) and vetted(failure, _facts(code, "other tape")) is failure
