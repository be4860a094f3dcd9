"""The gradient oracle: float64 central differences, independent of the tape being checked."""
from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["numeric_gradient", "relative_error"]


def numeric_gradient(f: Callable[[np.ndarray], float], x, h: float = 1e-6) -> np.ndarray:
    """d f / d x by central differences in float64; `x` may be a scalar or an array."""
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    flat, out = x.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        step = h * max(1.0, abs(flat[i]))
        original = flat[i]
        flat[i] = original + step
        upper = float(f(x))
        flat[i] = original - step
        lower = float(f(x))
        flat[i] = original
        out[i] = (upper - lower) / (2 * step)
    return grad


def relative_error(a, b) -> float:
    """max |a - b| / max(1, |b|): a relative error that stays finite near zero."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b))))) if b.size else 0.0
