"""Leave the model as diagnose found it: save the state a loss function may change, restore what it changed.

Running a loss in training mode updates BatchNorm's moving statistics and advances dropout's seed
generator; a step may bump a counter. Those are non-trainable variables (Keras lists its seed
generator states among a model's `non_trainable_variables`), and the recorder sees every assignment,
so diagnose saves them before the run and writes back only the ones an assignment op touched.
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from tapelab.diagnose.record import Recorder, tensor_id

__all__ = ["Saved", "stateful"]

_ASSIGNS = ("Assign", "ResourceScatter")


def stateful(values: Iterable[Any]) -> list[Any]:
    """The variables among `values` (a counter may be trainable) and the non-trainable variables of the
    layers, models and metrics there (their trainable weights are the loss's inputs, not its side effects)."""
    found: dict[int, Any] = {}
    for value in values:
        if hasattr(value, "assign") and hasattr(value, "numpy"):
            found.setdefault(id(value), value)
            continue
        owned = getattr(value, "variables", None)
        if owned is None or isinstance(owned, (str, bytes)):
            continue
        try:
            for var in owned:
                if hasattr(var, "assign") and not getattr(var, "trainable", True):
                    found.setdefault(id(var), var)
        except TypeError:  # `variables` that is not a list of variables
            continue
    return list(found.values())


class Saved:
    """The values of `variables` now; `restore(record)` writes back those the recorded run assigned."""

    def __init__(self, variables: Iterable[Any]) -> None:
        self.values = {tensor_id(v): (v, np.array(v.numpy(), copy=True)) for v in variables}

    def restore_all(self) -> None:
        """Write back every saved variable (after a compiled run, whose assignments no recorder sees)."""
        for var, value in self.values.values():
            var.assign(value)

    def restore(self, record: Recorder) -> list[str]:
        """Write back each saved variable an assignment op touched; the names of those restored."""
        touched = {op.input_ids[0] for op in record.ops if op.kind.startswith(_ASSIGNS) and op.input_ids}
        restored = []
        for key in touched & self.values.keys():
            var, value = self.values[key]
            var.assign(value)
            restored.append(getattr(var, "path", None) or var.name)
        return restored
