"""Bounded retries with exponential backoff, for a transient fault in a data source or a metrics sink.

A retry is right only for faults that go away by themselves (a network blip, a busy file server), which
Python raises as `OSError` (`ConnectionError` and `TimeoutError` included). Anything else is a bug and is
raised at once. After the last attempt the error is raised too: the caller chooses the fallback.
"""
from __future__ import annotations

import functools
import time
from typing import Callable, TypeVar

__all__ = ["with_retries"]

T = TypeVar("T")


def with_retries(fn: Callable[..., T], *, attempts: int = 3, backoff: float = 0.05, max_backoff: float = 2.0,
                 retry_on: tuple[type[BaseException], ...] = (OSError,),
                 sleep: Callable[[float], None] = time.sleep) -> Callable[..., T]:
    """`fn` wrapped so that an error in `retry_on` is retried after backoff, 2 x backoff, ... (capped at
    `max_backoff`), for at most `attempts` calls in all; the last attempt's error propagates."""
    if attempts < 1:
        raise ValueError(f"attempts must be 1 or more, not {attempts}")

    @functools.wraps(fn)
    def call(*args, **kwargs) -> T:
        for attempt in range(attempts - 1):
            try:
                return fn(*args, **kwargs)
            except retry_on:
                sleep(min(max_backoff, backoff * 2 ** attempt))
        return fn(*args, **kwargs)

    return call
