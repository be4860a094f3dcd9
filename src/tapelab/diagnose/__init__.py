"""Why is my gradient None, zero or NaN? Run a loss under a tape and say, per variable, where and why.

`diagnose(loss_fn, variables)` runs `loss_fn()` once under a tape while recording every eager
operation it executes (type, inputs, outputs, and the line of your code that ran it), asks for every
gradient in one call, and for each variable whose gradient is None, all zero or not finite reads the
recording: the op where its path to the loss ends (a `tf.stop_gradient`, an int cast, a NumPy call,
an assignment or a new `tf.Variable` made from the value, a line outside the tape) and the line that ran it; for NaN or Inf, the op that made the
first non-finite value (log of 0, an overflow, the `tf.where` trap) or ran where its derivative is
infinite (sqrt at 0). A cause is named only when the recording, the variable or your code shows it.
Nothing is patched: a value leaving TensorFlow (`.numpy()`, NumPy) runs no op and is read from the source.

    report = diagnose(lambda: loss(model(x, training=True), y), model=model)
    print(report)          # or display it in a notebook; norms show a vanishing gradient
    report["dense/kernel"].where   # the line where that variable's path breaks

Compiled code: a `tf.function` the loss calls (with or without `jit_compile=True`) is replayed eagerly
op by op, and the compiled run's gradients are compared with the replay's (`report.compiled`): a
difference is a finding. `diagnose_fit_step(model, x, y)` does the same for the step `fit` compiles,
and `python -m tapelab.diagnose.replay STEP_DIR` for a step `tapelab.guarded`'s flight recorder saved.
`allow=[...]` and `with allow_non_finite():` mark intended NaN or Inf (an attention mask). The run has
no lasting side effect on the model: non-trainable state it assigns (BatchNorm statistics, dropout
seeds, counters among the variables given or the loss function's free values) is restored afterwards.
With `tape=True` the loss function takes a tape and enters it itself; with `tape=your_tape` diagnose
reads your own tape (its `watch_accessed_variables`, the watches you made, a tape already used).

Runs wherever the user calls it (a notebook, a script, a training loop); it imports TensorFlow, Keras,
NumPy, `causes` and `quiet`, never the checker, grading, the CLI or `guarded`. `run` holds `diagnose()`;
`report` the `Report`; `record` the eager op recorder, `breaks` and `exits` the path analysis that reads
it, `source` the facts quoted from the user's code, `state` what is saved and restored, `verdicts` the
causes named, `compiled` the replay of traced functions and its comparison, `allow` the allowlist,
`fit_step` the step `fit` compiles, `replay` a saved step read back and diagnosed.
"""
from tapelab.diagnose.allow import allow_non_finite
from tapelab.diagnose.compiled import Comparison
from tapelab.diagnose.fit_step import diagnose_fit_step
from tapelab.diagnose.run import CAUSES, Entry, Report, blocking_call, diagnose

__all__ = ["CAUSES", "Comparison", "Entry", "Report", "allow_non_finite", "blocking_call", "diagnose",
           "diagnose_fit_step"]
