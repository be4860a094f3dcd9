"""A spy for the busy cue: what the controls and the cue look like while an explorer's action runs."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import pytest


@dataclass(frozen=True)
class Seen:
    """The busy cue's state at one moment: each control's disabled flag and the cue's text."""

    disabled: tuple[bool, ...]
    cue: str

    @property
    def busy(self) -> bool:
        return all(self.disabled) and "⏳" in self.cue

    @property
    def idle(self) -> bool:
        return self.cue == ""


@pytest.fixture
def spy_busy(monkeypatch) -> Callable[[Any, Any, str], list[Seen]]:
    """Wrap `owner.name` so each call records what `explorer.busy` shows at that moment, from inside
    the action (the list it returns grows with every call)."""

    def spy(explorer: Any, owner: Any, name: str) -> list[Seen]:
        seen: list[Seen] = []
        original = getattr(owner, name)

        @functools.wraps(original)
        def recording(*args: Any, **kwargs: Any) -> Any:
            busy = explorer.busy
            seen.append(Seen(tuple(bool(c.disabled) for c in busy.controls), busy.label.value))
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, recording)
        return seen

    return spy


def _now(explorer: Any) -> Seen:
    """What `explorer.busy` shows now (after an action: everything should be back at rest)."""
    busy = explorer.busy
    return Seen(tuple(bool(c.disabled) for c in busy.controls), busy.label.value)


@pytest.fixture
def busy_now() -> Callable[[Any], Seen]:
    """What `explorer.busy` shows at the moment of the call."""
    return _now
