"""`diagnose()`: the recorded run of the loss (run as written, then replayed eagerly when it called compiled
code), and the reading of it per variable.

The package docstring (`tapelab.diagnose`) says what it finds; the recording is `record`, the path
analysis `breaks` and `exits`, the quoted source `source`, the saved state `state`, the verdicts `verdicts`,
the replay of compiled code and its comparison `compiled`, the `Report` itself `report`.
"""
from __future__ import annotations

import contextlib
import inspect
from types import FrameType
from typing import Any, Callable, Iterable, Mapping

import tensorflow as tf

from tapelab.diagnose.allow import Allowlist
from tapelab.diagnose.compiled import Comparison, compiled_gradients, functions_run_eagerly, gradient_status
from tapelab.diagnose.report import Report
from tapelab.diagnose.exits import leaving_call
from tapelab.diagnose.breaks import (Break, ancestry, assigned_and_read, dead_relu, find_break, host_data_in,
                                    non_finite_origin, reads)
from tapelab.diagnose.record import Recorder, tensor_id
from tapelab.diagnose.source import bindings, blocking_call, free_values, sliced_arguments
from tapelab.diagnose.state import Saved, stateful
from tapelab.diagnose.verdicts import CAUSES, Entry, for_break, for_non_finite
from tapelab.quiet import Quiet

__all__ = ["CAUSES", "Entry", "Report", "blocking_call", "diagnose"]

def diagnose(loss_fn: Callable[..., Any], variables: Iterable | Mapping[str, Any] | None = None, *,
             model: Any = None, watch: Iterable = (), tape: bool | tf.GradientTape = False,
             allow: Iterable[str] = (), jit_compile: bool | None = None) -> Report:
    """Run `loss_fn` once, recording its ops, and report per variable a None, zero or non-finite gradient and why.

    `variables` is a list or a {name: variable} dict (default: the model's trainable variables);
    `model` also lets the report find untracked `tf.Variable`s on its layers and restore its state;
    `watch` lists tensors diagnose's own tape should watch. `tape=False`: `loss_fn()` takes no argument.
    `tape=True`: `loss_fn(tape)` gets a fresh tape and enters `with tape:` itself. `tape=<GradientTape>`:
    `loss_fn(tape)` gets yours, and diagnose asks your tape for the gradients.

    Compiled code: a `tf.function` the loss calls (or is) is replayed eagerly, op by op, and its
    gradients compared with the compiled run's (`report.compiled`). `jit_compile=True` (or False) also
    runs the whole loss and its gradients traced in one `tf.function`, as a compiled training step
    does, and compares. `allow` lists op types (`"Log"`) or lines (`"model.py:42"`) whose NaN or Inf
    is intended; so does `with allow_non_finite():` around the code that makes them.
    """
    caller = inspect.currentframe().f_back
    try:
        return _Run(loss_fn, caller, model, tuple(watch), tape, Allowlist(allow), jit_compile).report(variables)
    finally:
        del caller


class _Run:
    """One diagnosis: the recorded run of the loss and everything known about its sources."""

    def __init__(self, loss_fn, caller: FrameType, model, watch: tuple, tape, allow: Allowlist,
                 jit_compile: bool | None) -> None:
        if tape is False and _required_parameters(loss_fn):
            raise ValueError("loss_fn takes an argument: if it is the tape, pass `tape=True` (or your own tape).")
        self.loss_fn, self.caller, self.model, self.watch = loss_fn, caller, model, watch
        self.free = free_values(loss_fn)
        self.known = {**caller.f_globals, **caller.f_locals, **self.free} if caller else dict(self.free)
        self.handed = tape if isinstance(tape, tf.GradientTape) else None
        self.tape = self.handed or tf.GradientTape(persistent=True)
        self.takes_tape = tape is not False
        self.record = Recorder(self.tape)
        self.allow, self.jit_compile = allow, jit_compile

    def report(self, variables) -> Report:
        named = self._named(variables)
        sources = [v for _, v in named]
        saved = Saved(stateful([self.model, *self.free.values()]))
        compiled = self._compiled(sources, saved) if self.jit_compile is not None and not self.handed else None
        attempt = None
        if compiled is None and not self.handed:  # run as written; replay only if it called traced functions
            try:
                attempt = self._attempt(saved, sources, replay=False)
            except Exception as error:  # e.g. XLA cannot compile it: the replay raises too if the code is wrong
                compiled = Comparison("the tf.functions your loss calls", error=_first_line(error))
                self.tape = tf.GradientTape(persistent=True)
                self.record = Recorder(self.tape)
            if attempt is not None and self.record.calls_functions():
                compiled, attempt = ("the tf.functions your loss calls", attempt[:2]), None
                self.tape = tf.GradientTape(persistent=True)
                self.record = Recorder(self.tape)
        if attempt is None:  # a handed tape allows one run: its functions are replayed at once
            try:
                attempt = self._attempt(saved, sources, replay=True)
            except tf.errors.InvalidArgumentError as error:
                if not isinstance(compiled, tuple) or "CheckNumerics" not in str(error):
                    raise
                return self._stopped(named, compiled, error)
        loss, grads, missing, restored = attempt
        comparison = None
        if isinstance(compiled, Comparison):
            comparison = compiled
        elif compiled is not None:
            comparison = Comparison.of(compiled[0], compiled[1], (loss, grads), [name for name, _ in named])
        if comparison is not None:
            comparison.opaque = self.record.calls_functions()  # no Python to replay (a loaded SavedModel)
        self.loss_id = tensor_id(loss)
        self.made = {i for op in self.record.ops for i in op.output_ids}
        sliced = sliced_arguments(self.caller, self.known) if self.caller else {}
        self._origin = self._loss_reads = None
        entries = [self._judge(sliced[i][0] if i in sliced and name == f"variables[{i}]" else name, var, grad,
                               sliced.get(i), missing[i]) for i, ((name, var), grad) in enumerate(zip(named, grads))]
        entries += _untracked(self.model, {id(v) for _, v in named})
        value = None
        try:
            value = float(tf.reduce_sum(loss))
        except (TypeError, ValueError):
            pass
        return Report(entries, value, restored, comparison)

    def _stopped(self, named: list, compiled: tuple, error: Exception) -> Report:
        """The report when the replay stopped at the user's own `check_numerics` (which XLA skips): the
        statuses of the compiled run, the producer read from the ops replayed up to there."""
        how, (loss, grads) = compiled
        origin = non_finite_origin(self.record, None, self.allow.covers)
        entries = []
        for (name, _), grad in zip(named, grads):
            status, norm = gradient_status(grad)
            entries.append(for_non_finite(name, origin, norm) if status == "non_finite" else
                           Entry(name, status, norm=norm, explanation="" if status == "ok" else
                                 f"The compiled run gives a {status} gradient; the eager replay stopped before "
                                 "its gradients, so the cause is not established."))
        first = str(error).strip().splitlines()[0].split("}", 1)[-1].strip()
        comparison = Comparison(how, stopped=first[:200], stopped_at=origin[0] if origin else None)
        return Report(entries, None, [], comparison)

    def _attempt(self, saved: Saved, sources: list, replay: bool) -> tuple[Any, list, list, list[str]]:
        """One recorded run of the loss (its tf.functions replayed eagerly if `replay`) and its gradients:
        (loss, gradients, the op whose missing gradient stopped each, the state restored)."""
        try:
            with Quiet(), (functions_run_eagerly() if replay else contextlib.nullcontext()):
                loss = self._run()
        finally:
            restored = saved.restore(self.record)
        self.spent = False
        parts = tf.nest.flatten(loss)
        self.loss, self.loss_is_tensor = loss, bool(parts) and all(tf.is_tensor(p) or hasattr(p, "assign") for p in parts)
        with Quiet():
            grads, missing = self._gradients(loss, sources)
        return loss, grads, missing, restored

    def _compiled(self, sources: list, saved: Saved) -> tuple[str, tuple] | Comparison:
        """The loss and gradients traced into one tf.function (XLA if asked), the state put back after."""
        how = f"a tf.function with jit_compile={self.jit_compile}"
        try:
            with Quiet():
                return how, compiled_gradients(self.loss_fn, sources, watch=self.watch, takes_tape=self.takes_tape,
                                               jit_compile=bool(self.jit_compile))
        except Exception as error:  # the comparison must never hide the diagnosis
            return Comparison(how, error=_first_line(error))
        finally:
            saved.restore_all()

    def _run(self) -> Any:
        with self.record:
            if self.takes_tape:
                return self.loss_fn(self.tape)
            with self.tape:
                for tensor in self.watch:
                    self.tape.watch(tensor)
                return self.loss_fn()

    def _gradients(self, loss, sources: list) -> tuple[list, list[str | None]]:
        """Every gradient in one call; per source only after a LookupError, on a tape that allows it.
        Returns the gradients and, per source, the op whose missing gradient stopped it (or None)."""
        nothing = [None] * len(sources)
        if not self.loss_is_tensor:
            return nothing, nothing
        try:
            return list(self.tape.gradient(loss, sources)), nothing
        except LookupError as error:
            if not self.tape._persistent:
                return nothing, [_missing_op(error)] * len(sources)
            grads, missing = [], []
            for source in sources:
                try:
                    grads.append(self.tape.gradient(loss, source))
                    missing.append(None)
                except LookupError as each:
                    grads.append(None)
                    missing.append(_missing_op(each))
            return grads, missing
        except RuntimeError as error:
            if "non-persistent" not in str(error):
                raise
            self.spent = True
            return nothing, nothing
        except (TypeError, ValueError):  # a loss that is not a tensor (None, a Python number)
            return nothing, nothing

    def _named(self, variables) -> list[tuple[str, Any]]:
        """(name, variable) pairs: a dict's keys, else the name the code uses for each variable."""
        if variables is None:
            if self.model is None:
                raise ValueError("diagnose needs the variables to check: pass `variables=[...]` or `model=...`.")
            variables = self.model.trainable_variables
        if isinstance(variables, Mapping):
            return list(variables.items())
        names = {id(value): name for name, value in self.known.items() if not name.startswith("_")}
        named = []
        for i, var in enumerate(variables):
            name = names.get(id(var)) or getattr(var, "path", None) or getattr(var, "name", "") or f"variables[{i}]"
            named.append((str(name).removesuffix(":0"), var))
        return named

    def _judge(self, name: str, var: Any, grad: Any, sliced: tuple[str, str] | None, missing: str | None) -> Entry:
        """The entry for one source: the first fact in the checklist that the run or the code establishes."""
        if grad is not None:
            status, norm = gradient_status(grad)
            if status == "non_finite":
                if self._origin is None:
                    self._origin = (non_finite_origin(self.record, self.loss_id, self.allow.covers),)
                return for_non_finite(name, self._origin[0], norm)
            if status == "zero":
                return self._zero(name)
            return Entry(name, "ok", norm=norm)
        return self._none(name, var, sliced, missing)

    def _zero(self, name: str) -> Entry:
        dead = dead_relu(self.record, self.loss_id)
        if dead is not None:
            return Entry(name, "zero", "zero-gradient",
                         f"`{name}` has a gradient, but every entry is 0, and `{dead.kind}` at {dead.where} outputs 0 "
                         "for every input of this batch (a dead relu), so nothing flows back through it. Try other "
                         "initial values, a smaller learning rate or `leaky_relu`.", dead.kind,
                         dead.where, 0.0)
        return Entry(name, "zero", "zero-gradient",
                     f"`{name}` has a gradient, but every entry is 0. Is a unit saturated (a sigmoid near 0 or 1), "
                     "is the loss multiplied by zero, or does the loss not change with it (a sign, a constant "
                     "sum)? Try other initial values or a smaller learning rate.", norm=0.0)

    def _none(self, name: str, var: Any, sliced: tuple[str, str] | None, missing: str | None) -> Entry:
        if not self.loss_is_tensor:
            return self._not_a_tensor(name)
        if self.spent:
            return Entry(name, "None", "tape-used-twice",
                         "Your tape is not persistent and had already computed a set of gradients, so it could "
                         "not compute these. Ask for every gradient in one call with a list of sources, or open "
                         "the tape with `persistent=True`.")
        if missing:
            where = next((op.where for op in self.record.ops if op.kind == missing), None)
            return Entry(name, "None", "no-gradient-registered",
                         f"Computing the gradient raised `LookupError`: TensorFlow has no gradient for the operation "
                         f"`{missing}`" + (f" (run at {where})" if where else "") + ", and the backward pass "
                         "stops there. Can you replace it with differentiable ops, or wrap it in "
                         "`tf.custom_gradient` with a gradient you define?",
                         missing, where)
        is_variable = hasattr(var, "assign") and hasattr(var, "trainable")
        if is_variable and self._state_of_model(var):
            return Entry(name, "None", "all-variables",
                         f"`{name}` is one of the model's non-trainable variables (a BatchNorm moving statistic, "
                         "a seed state): its layer updates it, not a gradient. Did you pass `model.variables`? "
                         "Ask for the gradients of `model.trainable_variables`.")
        dtype = getattr(var, "dtype", None)
        if dtype is not None and not tf.as_dtype(dtype).is_floating:
            return Entry(name, "None", "int-dtype",
                         f"`{name}` has dtype `{tf.as_dtype(dtype).name}`. Only floating-point values have "
                         f"gradients: did you create it from integers? Write `2.0`, not `2`, or pass `dtype=tf.float32`.")
        if is_variable and not var.trainable:
            return Entry(name, "None", "not-trainable",
                         f"`{name}` is a variable with `trainable=False`, and the tape only watches trainable "
                         "variables by itself. Did you mean it to be trained? Create it with `trainable=True`, "
                         f"or call `tape.watch({name})` inside the `with` block.")
        source_id = tensor_id(var)
        if self.loss_id is not None and self.loss_id < self.record.start and self.loss_id != source_id:
            return Entry(name, "None", "outside-tape",
                         "`loss_fn` returned a loss that existed before it ran: it was computed before the "
                         "tape started recording, so the tape holds no path to any variable. Did you compute the "
                         "loss inside `with tf.GradientTape() as tape:`?")
        if not is_variable:
            return self._unwatched_tensor(name, sliced)
        if (self.handed is not None and not self.handed._watch_accessed_variables
                and id(var) not in {id(v) for v in self.handed.watched_variables()}):
            return Entry(name, "None", "not-watched",
                         f"Your tape was opened with `watch_accessed_variables=False`, and `{name}` was never "
                         f"passed to `tape.watch`. Call `tape.watch({name})` inside the `with` block.")
        found = find_break(self.record, source_id, self.loss_id, self._read_by_loss())
        if found is not None and found.code == "not-connected" and found.trail and host_data_in(self.record, self.loss_id):
            left = leaving_call(self.loss_fn, found.trail)
            found = Break("numpy-in-path", found.op, left.where, left.call, after=found.where) if left else found
        if found is not None:
            return for_break(name, found)
        if not reads(self.record, source_id):
            return self._unread(name, var)
        return Entry(name, "None", None,
                     f"The gradient of `{name}` is None although every recorded op from it to the loss has a "
                     "gradient: one of those gradient functions returns None for it.")

    def _read_by_loss(self) -> frozenset[int]:
        if self._loss_reads is None:
            with Quiet():
                self._loss_reads = assigned_and_read(self.record, self.tape, self.loss)
        return self._loss_reads

    def _not_a_tensor(self, name: str) -> Entry:
        loss = self.loss
        if loss is None:
            return Entry(name, "None", "none-target", "`loss_fn` returned `None`, so there is no loss to differentiate. "
                         "Does it end with `return loss`?")
        return Entry(name, "None", "numpy-in-path",
                     f"`loss_fn` returned a `{type(loss).__name__}`, not a tensor: the loss left TensorFlow "
                     "(`float()`, `.numpy()` or a NumPy function), and the tape differentiates tensors only. "
                     "Return the tensor itself.")

    def _unwatched_tensor(self, name: str, sliced: tuple[str, str] | None) -> Entry:
        if sliced:
            text, base = sliced
            return Entry(name, "None", "sliced-source",
                         f"`{text}` is a new tensor computed from the variable `{base}` before the tape, not "
                         f"`{base}` itself, so the tape never watched it. Differentiate the variable and index "
                         f"the gradient: `tape.gradient(loss, {base})` and then take the part you want.")
        rebound = self._rebinding(name)
        if rebound:
            made, later = rebound
            return Entry(name, "None", "replaced-by-tensor",
                         f"`{name}` is a tensor, not a `tf.Variable`: line {made.lineno} made it a variable, and "
                         f"line {later.lineno} (`{later.text}`) replaced it by the result. Did you mean "
                         f"`{name}.assign_sub(...)` (or `assign_add`), which changes the variable in place?")
        return Entry(name, "None", "not-watched",
                     f"`{name}` is a tensor, and a tape only watches trainable variables by itself. Did you call "
                     f"`tape.watch({name})` inside the `with` block, or mean it to be a `tf.Variable`?")

    def _rebinding(self, name: str):
        """(the binding that made `name` a variable, a later one rebinding it to itself), in the caller's scope."""
        if self.caller is None:
            return None
        found = bindings(self.caller, name)
        made = next((b for b in found if b.makes_variable), None)
        later = next((b for b in found if made and b.lineno > made.lineno and name in b.reads), None)
        return (made, later) if later else None

    def _unread(self, name: str, var: Any) -> Entry:
        """A variable no op of the run read: was the loss built from a tensor computed from it before?"""
        leaves = ancestry(self.record, self.loss_id) - self.made
        for free_name, value in self.free.items():
            if tensor_id(value) in leaves and not hasattr(value, "assign") and self.caller is not None:
                for binding in bindings(self.caller, free_name, self.loss_fn):
                    if any(_owns(self.known.get(read), var) for read in binding.reads):
                        return Entry(name, "None", "outside-tape",
                                     f"The loss uses `{free_name}`, computed from `{name}` before the tape started "
                                     f"recording (line {binding.lineno}: `{binding.text}`), so no recorded op reads "
                                     f"`{name}`. Compute `{free_name}` inside the loss function.")
        if self._seen_by_tape(var):  # read under the tape by an op the recording missed: no cause established
            return Entry(name, "None", None,
                         f"The tape saw `{name}` read, but the recorded ops do not show how the loss uses it, so "
                         f"where its path breaks is not known. Ask `tape.gradient` for the values computed from "
                         f"`{name}` one by one: the first that gives None follows an operation without a gradient.")
        return Entry(name, "None", "not-connected",
                     f"The loss never reads `{name}`: no recorded op used it. Does the loss really depend on "
                     f"`{name}` (a branch not taken, a layer not called, a typo in a name)?")

    def _seen_by_tape(self, var: Any) -> bool:
        """Whether the tape recorded a read of `var` (a Keras variable is watched as the tf.Variable inside)."""
        watched = {id(v) for v in self.tape.watched_variables()}
        return id(var) in watched or id(getattr(var, "value", None)) in watched

    def _state_of_model(self, var: Any) -> bool:
        if self.model is None or getattr(var, "trainable", True):
            return False
        return id(var) in {id(v) for v in self.model.non_trainable_variables}


def _owns(value: Any, var: Any) -> bool:
    """Whether `value` is `var`, or a layer, model or module whose variables include it."""
    if value is var:
        return True
    owned = getattr(value, "variables", None)
    try:
        return owned is not None and any(v is var for v in owned)
    except TypeError:
        return False


def _first_line(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:200] if lines else ''}"


def _missing_op(error: LookupError) -> str:
    return str(error).rsplit("no entry for: ", 1)[-1].strip()


def _required_parameters(fn: Callable) -> int:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 0
    return sum(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)


def _untracked(model: Any, seen: set[int]) -> list[Entry]:
    """Entries for plain tf.Variables stored on the model's layers that Keras 3 does not track."""
    if model is None:
        return []
    tracked = {id(v) for v in model.variables}
    layers = [model] + list(getattr(model, "_flatten_layers", lambda: [])())
    entries, reported = [], set()
    for layer in layers:
        for attr, value in vars(layer).items():
            if isinstance(value, tf.Variable) and id(value) not in tracked | seen | reported:
                reported.add(id(value))
                name = f"{layer.name}.{attr}"
                entries.append(Entry(name, "untracked", "untracked-variable",
                                     f"`{name}` is a plain `tf.Variable` on a Keras 3 layer, which Keras does not "
                                     "track: it is missing from `model.trainable_variables`, so your step never "
                                     "asks for its gradient and the optimizer never updates it. Did you mean "
                                     "`self.add_weight(...)` in the layer?"))
    return entries
