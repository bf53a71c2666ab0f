"""Nondeterminism behind small ports: the clock and id generation."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class IdSource(Protocol):
    def new(self, prefix: str) -> str: ...


class RandomIds:
    def new(self, prefix: str) -> str:
        return f"{prefix}_{secrets.token_hex(8)}"


def process_owner() -> str:
    """Names this process as the owner of the runs it advances: `host:pid`."""
    import os
    import socket

    return f"{socket.gethostname()}:{os.getpid()}"
