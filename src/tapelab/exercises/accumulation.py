"""Exercise 2.6 of notebook 02_model_variables: gradient accumulation, k micro-batches added up and applied once,
so that the update is the full batch's.

The checker calls the student's `step` micro-batch by micro-batch and reads the model's weights after every
call: when they moved, and by how much, tells which known slip happened (applied too early, summed, replaced,
never emptied, added to the weights), from what the code did rather than from its source.
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from tapelab.checker.compare import all_close
from tapelab.checker.counters import late_count
from tapelab.checker.exercise import Exercise
from tapelab.checker.messages import Incorrect
from tapelab.checker.replay import once_in_judge
from tapelab.checker.variants import Space
from tapelab.checker.wrong_answers import Alternative, ratio_of, wrong_value
from tapelab.exercises.keras_cases import seeded_tanh_model, short_path, tanh_mse

__all__ = ["ex2_6"]

_RTOL, _ATOL = 1e-4, 1e-6
# The check reads the model's names and first weights and hands it to the student's code: in the grader's judge,
# served what that code did, it is only read, so it is built once per case there.
_tanh_model = once_in_judge(seeded_tanh_model)


def _ordinal(n: int) -> str:
    return f"{n}{'tsnrhtdd'[(n // 10 % 10 != 1) * (n % 10 < 4) * n % 10::4]}"


def _calls(numbers: list[int]) -> str:
    """1 and 3; 1, 2 and 4: call numbers as a sentence says them."""
    words = [str(n) for n in numbers]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


class AccumulatedStep(Exercise):
    number = "2.6"
    answer = "make_accumulating_step"
    replayable = True  # every read of the kernel's state after a call goes through `run`
    # How many micro-batches make one step (k, 2 in the notebook's text) and SGD's learning rate (0.1 there).
    space = Space(default={"k": 2, "lr": 0.1},
                  draws={"k": lambda rng: int(rng.integers(2, 5)), "lr": lambda rng: float(rng.choice([0.05, 0.2]))},
                  wording={"kth": lambda v: _ordinal(v["k"]), "calls": lambda v: str(2 * v["k"])})
    statement = """Write `make_accumulating_step(model)` for gradient accumulation. It creates
`keras.optimizers.SGD(learning_rate=${lr})` and one accumulator per trainable variable of `model`, and returns a function
`step(x, y)`. Each call of `step` computes the mean squared error `tf.reduce_mean(tf.square(y - model(x, training=True)))`
of its micro-batch under a tape and adds the gradients to the accumulators; every ${kth} call applies the mean of the
${k} accumulated gradients once, with the optimizer, and empties the accumulators. With micro-batches of equal size,
${k} calls then move the weights exactly as one SGD step on the whole batch. The test calls `step` on ${calls}
micro-batches, two full steps, and reads the weights after every call."""
    visible_cases = ((1, 2, 1), (5, 3, 2))  # (seed, rows per micro-batch, features)
    parameter_kinds = {"x": "constant", "y": "constant"}  # what `step(x, y)` is given: a None gradient's evidence
    praise = "the weights stayed put between applications, and each application was the full batch's SGD step."
    hints = (
        "Create the accumulators once, in `make_accumulating_step`: `tf.Variable(tf.zeros_like(v))` for each "
        "`v` in `model.trainable_variables`, and a call counter; `step` reads them through its closure.",
        "In `step`: `for acc, g in zip(accumulators, grads): acc.assign_add(g)`; count the call, and when the count "
        "reaches ${k}, `optimizer.apply([acc / ${k} for acc in accumulators], variables)`, then `acc.assign(tf.zeros_like"
        "(acc))` for each accumulator and set the count back to 0.",
    )

    def check_case(self, fn, case, facts):
        seed, rows, features = case
        k, lr = self.variant["k"], self.variant["lr"]
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(2 * k * rows, features)).astype(np.float32)
        y = rng.uniform(-1.0, 2.0, size=(2 * k * rows, 1)).astype(np.float32)
        model = _tanh_model(seed, features)
        names = [short_path(v) for v in model.trainable_variables]
        start = [v.numpy().copy() for v in model.trainable_variables]
        shown = f"a Dense(3)-Dense(1) model with {features} input feature(s)"
        # whether `step` is callable is read in the factory's run, and the weights in each step's: the grader's judge
        # has only a stand-in for `step` and the model as built, and is served what the kernel read
        # (tapelab.checker.replay)
        step, is_callable = self.run(lambda: (lambda made: (made, callable(made)))(fn(model)),
                                     f"Calling `{self.answer}({shown})`").value
        if not is_callable:
            raise Incorrect(f"`make_accumulating_step` returned {'`None`' if step is None else 'a `' + type(step).__name__ + '`'}"
                            ", but should return the function `step(x, y)`. Did you end with `return step`?",
                            cause="no-return" if step is None else None)

        def grads_at(weights, lo, hi):
            return tanh_mse(weights, x[lo * rows:hi * rows], y[lo * rows:hi * rows])[1]

        def moved(weights, direction, factor=1.0):
            return [w - factor * lr * g for w, g in zip(weights, direction)]

        full = [start]
        for r in range(2):
            full.append(moved(full[-1], grads_at(full[-1], r * k, (r + 1) * k)))
        def call_step(call):
            lo = (call - 1) * rows

            def stepped():
                step(tf.constant(x[lo:lo + rows]), tf.constant(y[lo:lo + rows]))
                return [v.numpy() for v in model.trainable_variables]

            return self.run(stepped, f"Calling `step` ({_ordinal(call)} micro-batch of {rows} rows, on {shown})").value

        kept = start  # what the weights should be now
        for call in range(1, 2 * k + 1):
            before = kept if call == 1 else now
            now = call_step(call)
            if call % k:
                self._between(now, kept, call, k, lambda: grads_at(kept, call - 1, call), names,
                              lambda: self._schedule(before, now, call, k, call_step), lambda: late_count(fn))
                continue
            round_ = call // k
            self._applied(now, full[round_], full[round_ - 1], call, k, lr, names, facts, lambda: self._others(
                x, y, rows, round_, full, lr, k))
            kept = full[round_]

    def _others(self, x, y, rows, round_, full, lr, k) -> dict:
        """The weights of the known slips at the end of round `round_` (1 or 2), from the round's start."""
        begin = full[round_ - 1]
        lo = (round_ - 1) * k
        micro = [tanh_mse(begin, x[(lo + i) * rows:(lo + i + 1) * rows], y[(lo + i) * rows:(lo + i + 1) * rows])[1]
                 for i in range(k)]
        total = [sum(parts) for parts in zip(*micro)]
        found = {"summed": [w - lr * s for w, s in zip(begin, total)],
                 "last only": [w - lr * g / k for w, g in zip(begin, micro[-1])],
                 "last only, not divided": [w - lr * g for w, g in zip(begin, micro[-1])]}
        if round_ == 2:
            first = [tanh_mse(full[0], x[i * rows:(i + 1) * rows], y[i * rows:(i + 1) * rows])[1] for i in range(k)]
            old = [sum(parts) for parts in zip(*first)]
            found["not reset"] = [w - lr * (s + o) / k for w, s, o in zip(begin, total, old)]
        return found

    @staticmethod
    def _schedule(before, now, call, k, call_step) -> list[int]:
        """The calls, of all 2k, after which the weights moved: the calls up to `call` as seen, the rest run now."""
        moved, weights = [], now
        for n in range(call, 2 * k + 1):
            if n > call:
                before, weights = weights, call_step(n)
            if not all_close(before, weights, _RTOL, _ATOL):
                moved.append(n)
        return moved

    def _between(self, now, kept, call, k, micro_grads, names, schedule, counted_late) -> None:
        """Between two applications the weights stay where the last one left them. `counted_late()` is the count's
        test and increment when the code tests it before counting the call (tapelab.checker.counters)."""
        if all_close(kept, now, _RTOL, _ATOL):
            return
        g = micro_grads()
        if all_close([w + d for w, d in zip(kept, g)], now, _RTOL, _ATOL):
            raise Incorrect(f"After the {_ordinal(call)} call of `step` the weights moved by exactly the micro-batch's "
                            "gradients, upwards: you added the gradients to the model's own variables. Keep "
                            "accumulators of your own, `tf.Variable(tf.zeros_like(v))` for each trainable variable, "
                            "and `assign_add` the gradients to them.", cause="accumulated-into-weights")
        first = next(i for i, (a, b) in enumerate(zip(kept, now)) if not np.allclose(a, b, _RTOL, _ATOL))
        due = list(range(k, 2 * k + 1, k))
        moved = [d for d in due if d < call] + schedule()  # the applications before `call` were checked right
        said = (f"The weights moved after call{'s' if len(moved) > 1 else ''} {_calls(moved)} of `step` "
                f"(`{names[first]}` changed after call {call}), but they should move only after calls {_calls(due)}, "
                f"each time {k} micro-batches are accumulated, and stay put after the others.")
        if moved == list(range(call, 2 * k + 1)) and call == 1:
            raise Incorrect(f"{said} Your step applies after every micro-batch: add the gradients to the "
                            f"accumulators on each call, and apply only when the count reaches {k}.",
                            cause="applied-per-micro-batch")
        # as often as due, from the 1st call on: the schedule a count tested before it counts the call gives
        early = len(moved) == len(due) and moved[0] == 1 and all(m % k == 1 for m in moved)
        late = counted_late() if early else None
        if late:
            test, count = late
            raise Incorrect(f"{said} `if {test}:` comes before `{count}`, so each call tests the count of the calls "
                            f"before it, and the 1st call already applies, after a single micro-batch. Count the call "
                            f"first, then apply when the count reaches {k}.", cause="applied-off-schedule")
        if len(moved) == len(due) and all(m % k == call % k for m in moved):
            raise Incorrect(f"{said} Your step applies as often as it should, but on the wrong calls: after the "
                            f"{_ordinal(call)} micro-batch of each {k} instead of the {_ordinal(k)}. Apply when the "
                            f"count reaches {k} (a multiple of {k}).", cause="applied-off-schedule")
        raise Incorrect(said)

    def _applied(self, now, want, begin, call, k, lr, names, facts, others) -> None:
        """On every k-th call the weights make the full batch's SGD step."""
        if all_close(want, now, _RTOL, _ATOL):
            return
        rebound = facts.found and facts.calls_to("Variable") and not facts.calls_to("assign_add")
        if all_close(begin, now, _RTOL, _ATOL) and rebound and call == k:
            raise Incorrect(f"After the {_ordinal(call)} call of `step` the weights had not moved: the step applied "
                            "nothing, and your code creates variables but never calls `assign_add` on them. A line "
                            "such as `acc = acc + g` rebinds "
                            "the name `acc` to a new tensor and leaves the accumulator variable at zero; add to it in "
                            "place with `acc.assign_add(g)`.", cause="replaced-by-tensor")
        if all_close(begin, now, _RTOL, _ATOL):
            raise Incorrect(f"After the {_ordinal(call)} call of `step` the weights had not moved, but every "
                            f"{_ordinal(k)} call should apply the mean of the accumulated gradients. Did you count "
                            f"the calls and call `optimizer.apply` when the count reaches {k} (and set it back to 0, "
                            "so the next step comes after another "
                            f"{k})?", cause="no-update")
        found = {name: dict(zip(names, weights)) for name, weights in others().items()}
        alternatives = [
            Alternative("the sum applied", found["summed"], "gradients-summed",
                        f"That is {k} times the full-batch step: you applied the sum of the {k} accumulated "
                        f"gradients. Apply their mean, the sum divided by {k}."),
            Alternative("the last micro-batch alone", found["last only"], "accumulator-replaced",
                        f"That step holds the last micro-batch's gradients only, divided by {k}: the earlier "
                        "micro-batches' gradients never reached it. Did each call replace or empty the accumulators, "
                        "or differentiate losses that an earlier call's tape recorded? Add every micro-batch's "
                        "gradients with `acc.assign_add(g)`, and empty the accumulators only after `apply`."),
            Alternative("the last micro-batch alone, whole", found["last only, not divided"], "accumulator-replaced",
                        "That step is the last micro-batch's own SGD step: the earlier micro-batches' gradients were "
                        "lost. Add every micro-batch's gradients to the accumulators (`assign_add`), and apply their "
                        f"mean on the {_ordinal(k)} call."),
        ]
        if "not reset" in found:
            alternatives.append(Alternative(
                "not emptied", found["not reset"], "accumulators-not-reset",
                "The first step was right, but the second also applied the first step's gradients: the accumulators "
                "were not emptied after `apply`. Set each back to zeros, `acc.assign(tf.zeros_like(acc))`, right after "
                "applying."))
        ratio = ratio_of([w - b for w, b in zip(want, begin)], [n - b for n, b in zip(now, begin)])
        if ratio is not None and abs(ratio - k) > 1e-3 * k:  # k itself is the sum applied, named above
            alternatives.append(Alternative("another step size", dict(zip(names, now)), "constant-factor",
                                            f"The weights moved {ratio:.4g} times as far as the full-batch step with "
                                            f"learning rate {lr:g}. Is the optimizer `SGD(learning_rate={lr:g})`, and "
                                            f"do you divide the accumulated sum by {k}, and by nothing else?"))
        problem = wrong_value("weights", dict(zip(names, want)),
                              dict(zip(names, now)), alternatives,
                              f"Is each application the mean of the last {k} micro-batches' gradients, applied once "
                              f"with `SGD(learning_rate={lr:g})`?", _RTOL, _ATOL)
        if problem:
            raise Incorrect(f"After the {_ordinal(call)} call of `step` (an application): {problem}", cause=problem.cause,
                            expected=problem.expected, actual=problem.actual)


ex2_6 = AccumulatedStep()
