"""Hooks the engine calls while it performs steps. Keyword-only arguments throughout, so
new facts can be passed later without breaking a hook (they arrive in `**future`)."""

from __future__ import annotations

from typing import Protocol


class PartialHook(Protocol):
    """A model's partial output as it streams: transient, never stored."""

    def __call__(
        self, *, run_id: str, step_id: str, attempt: int, text: str, **future: object
    ) -> None: ...


def ignore_partial(*, run_id: str, step_id: str, attempt: int, text: str, **future: object) -> None:
    return None
