"""Nondeterminism behind small ports: the clock and id generation."""

from __future__ import annotations

import os
import secrets
import socket
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
    return f"{socket.gethostname()}:{os.getpid()}"


def owner_is_gone(owner: str) -> bool:
    """True when `owner` names a process on this host that no longer runs: its claim is
    dead, whatever its lease says. Owners on other hosts are judged by their lease only."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
