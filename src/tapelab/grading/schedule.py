"""The order in which a run sends its queued submissions to the workers: longest first.

A run ends when its last execution does, and while that one runs alone the other workers idle. Sent in
the order they arrived (by file name: student by student), a class of six notebooks ends with some
student's longest notebook alone. So each time a worker is free the coordinator takes the queued
submission whose notebook has run longest on average in this run so far (`timed`, from the results as
they come back); a notebook not yet timed goes before every timed one, the one with the fewest sent first,
so each is timed early (a run starts with one of each). What is left for the end is the short notebooks,
and the workers finish close together (longest processing time first, with the times learnt as the run
goes). Submissions of one notebook keep the order they arrived in, and so do notebooks that tie.
"""
from __future__ import annotations

import math
from collections import deque
from typing import Iterator

__all__ = ["LongestFirst"]


class LongestFirst:
    """Queued candidates (anything with `.assignment` and `.notebook`), in groups by notebook."""

    def __init__(self, candidates=()):
        self._groups: dict[tuple, deque] = {}
        self._seconds: dict[tuple, list[float]] = {}  # notebook -> [total seconds, executions]
        self._taken: dict[tuple, int] = {}  # notebook -> candidates taken
        for cand in candidates:
            self._groups.setdefault(self._key(cand), deque()).append(cand)

    @staticmethod
    def _key(cand) -> tuple:
        return (cand.assignment, cand.notebook)

    def __len__(self) -> int:
        return sum(map(len, self._groups.values()))

    def __iter__(self) -> Iterator:
        """What is queued, notebook by notebook (not the order `take` would give)."""
        return (cand for group in self._groups.values() for cand in group)

    def _priority(self, key: tuple) -> tuple[float, int]:
        """The mean seconds of `key`'s executions; one not yet timed before all, the fewest taken of them first."""
        total, count = self._seconds.get(key, (0.0, 0))
        return (total / count, 0) if count else (math.inf, -self._taken.get(key, 0))

    def _first(self) -> tuple:
        """The group `take` takes from: the highest priority, the first of equals (max keeps it)."""
        if not self._groups:
            raise IndexError("the queue is empty")
        return max(self._groups, key=self._priority)

    def peek(self):
        """The candidate `take` would return now, left queued."""
        return self._groups[self._first()][0]

    def take(self):
        """The queued candidate whose notebook has run longest on average (one not yet timed first), removed."""
        key = self._first()
        group = self._groups[key]
        cand = group.popleft()
        self._taken[key] = self._taken.get(key, 0) + 1
        if not group:
            del self._groups[key]
        return cand

    def timed(self, cand, seconds: object) -> None:
        """One execution of `cand`'s notebook took `seconds` (anything but a finite number >= 0 is ignored)."""
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds < math.inf:
            return
        entry = self._seconds.setdefault(self._key(cand), [0.0, 0])
        entry[0] += seconds
        entry[1] += 1

    def clear(self) -> list:
        """Every queued candidate, removed."""
        taken = list(self)
        self._groups.clear()
        return taken
