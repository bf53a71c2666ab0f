"""Settings, parsed once from the environment at start-up into a typed, frozen object.

Modules take what they need from here (through the Context or a constructor); nothing
deeper reads the environment while work is under way. A bad value is a clear error that
names the variable, before anything is recorded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from controlroom.domain.errors import StoreConfigError
from controlroom.eventstore.config import (
    DEFAULT_MAX_EVENT_BYTES,
    MAX_EVENT_BYTES_VAR,
    STORE_VAR,
    max_event_bytes,
)
from controlroom.eventstore.store import CRASH_AFTER_COMMIT_VAR
from controlroom.projections import analytics_limits
from controlroom.projections.analytics_limits import AnalyticsResources
from controlroom.tools.workspace import DEFAULT_MAX_FILE_BYTES, MAX_FILE_BYTES_VAR

AGENT_TIMEOUT_VAR = "CONTROLROOM_AGENT_TIMEOUT_S"
MAX_RUNS_VAR = "CONTROLROOM_MAX_CONCURRENT_RUNS"
PHASE_A_VAR = "CONTROLROOM_PHASE_A_AT_ONCE"
SSE_PING_VAR = "CONTROLROOM_SSE_PING_S"
TOKEN_VAR = "CONTROLROOM_API_TOKEN"
LEASE_VAR = "CONTROLROOM_LEASE_S"
CHECKPOINT_KEY_VAR = "CONTROLROOM_CHECKPOINT_KEY"
CHECKPOINT_KEY_FILE_VAR = "CONTROLROOM_CHECKPOINT_KEY_FILE"
CHECKPOINT_EVERY_VAR = "CONTROLROOM_CHECKPOINT_EVERY_S"
#: A bearer token shorter than this is guessable; one of only spaces is no token at all.
MIN_TOKEN_CHARS = 16


class SettingsError(StoreConfigError):
    """A setting from the environment is not usable."""


@dataclass(frozen=True)
class Settings:
    #: `CONTROLROOM_STORE`: unset (the workspace's SQLite file), `sqlite:///…`, `memory`.
    store: str = ""
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
    #: Overrides every provider's own `timeout_s` for one agent call.
    agent_timeout_s: float | None = None
    #: Runs executing at once in one process: model calls are I/O-bound, so many overlap.
    max_concurrent_runs: int = 64
    #: Runs of one process in their phase A at once, earliest first (engine/phase_a_order.py).
    phase_a_at_once: int = 8
    sse_ping_s: float = 15.0
    api_token: str | None = None
    #: How long a process's claim on a run holds without renewal; it renews at half.
    lease_s: float = 30.0
    #: Test-only fault injection: SIGKILL after this many durable commits.
    crash_after_commit: int | None = None
    #: The Ed25519 key that signs audit checkpoints: 64 hex characters, or a file holding
    #: them or a PEM private key. Never stored in the log.
    checkpoint_key: str | None = None
    checkpoint_key_file: str | None = None
    #: The server takes a signed checkpoint this often (seconds) when a key is set.
    checkpoint_every_s: float | None = None
    #: Workspace files bigger than this (bytes) are skipped with a warning, never read: a
    #: log or an export among the manuscript's files would take the tools minutes.
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    #: What analytics may use: DuckDB's memory, threads and spill space for a query, the
    #: answer's size, its threads and waiting requests (`CONTROLROOM_ANALYTICS_*`).
    analytics: AnalyticsResources = field(default_factory=AnalyticsResources)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ

        def number(name: str, default: float, minimum: float) -> float:
            raw = env.get(name, "").strip()
            if not raw:
                return default
            try:
                value = float(raw)
            except ValueError:
                raise SettingsError(f"{name}='{raw}' is not a number") from None
            if value < minimum:
                raise SettingsError(f"{name} must be at least {minimum:g}")
            return value

        def size(name: str, default: str) -> str:
            raw = env.get(name, "").strip()
            if raw and not analytics_limits.is_size(raw):
                raise SettingsError(f"{name}='{raw}' is not a size such as 512MB or 2GB")
            return raw or default

        defaults = AnalyticsResources()
        analytics = AnalyticsResources(
            memory_limit=size(analytics_limits.MEMORY_LIMIT_VAR, defaults.memory_limit),
            threads=int(number(analytics_limits.THREADS_VAR, defaults.threads, 1)),
            temp_limit=size(analytics_limits.TEMP_LIMIT_VAR, defaults.temp_limit),
            max_result_bytes=int(
                number(analytics_limits.MAX_RESULT_BYTES_VAR, defaults.max_result_bytes, 1024)
            ),
            workers=int(number(analytics_limits.WORKERS_VAR, defaults.workers, 1)),
            queue=int(number(analytics_limits.QUEUE_VAR, defaults.queue, 0)),
        )
        timeout = number(AGENT_TIMEOUT_VAR, 0.0, 0.0)
        every = number(CHECKPOINT_EVERY_VAR, 0.0, 1.0)
        crash = env.get(CRASH_AFTER_COMMIT_VAR, "").strip()
        return cls(
            store=env.get(STORE_VAR, "").strip(),
            max_event_bytes=max_event_bytes(env.get(MAX_EVENT_BYTES_VAR)),
            agent_timeout_s=timeout or None,
            max_concurrent_runs=int(number(MAX_RUNS_VAR, 64, 1)),
            phase_a_at_once=int(number(PHASE_A_VAR, 8, 1)),
            sse_ping_s=number(SSE_PING_VAR, 15.0, 0.1),
            api_token=_token(env.get(TOKEN_VAR)),
            lease_s=number(LEASE_VAR, 30.0, 1.0),
            crash_after_commit=int(crash) if crash.isdigit() else None,
            checkpoint_key=env.get(CHECKPOINT_KEY_VAR, "").strip() or None,
            checkpoint_key_file=env.get(CHECKPOINT_KEY_FILE_VAR, "").strip() or None,
            checkpoint_every_s=every or None,
            max_file_bytes=int(number(MAX_FILE_BYTES_VAR, DEFAULT_MAX_FILE_BYTES, 1024)),
            analytics=analytics,
        )


def _token(raw: str | None) -> str | None:
    """Unset: no token. Set, it must be a real secret: an empty or blank value would
    otherwise count as "a token is set" and let the server listen beyond loopback."""
    if raw is None:
        return None
    token = raw.strip()
    if not token:
        raise SettingsError(f"{TOKEN_VAR} is set but empty; unset it, or set a token")
    if len(token) < MIN_TOKEN_CHARS:
        raise SettingsError(
            f"{TOKEN_VAR} is {len(token)} characters; use at least {MIN_TOKEN_CHARS} "
            "(for example: python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return token
