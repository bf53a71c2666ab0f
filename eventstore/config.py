"""Which store to use, from `CONTROLROOM_STORE`.

- unset: a SQLite file at `<workspace>/.control-room/events.sqlite` (embedded, zero setup)
- `sqlite:///absolute/path.sqlite` or `sqlite:relative/path.sqlite`: another SQLite file
- `memory`: in-process only, for tests and throwaway demos
- `postgresql://user:password@host:port/dbname[?pool_size=N&schema=NAME]`: PostgreSQL,
  for several processes and machines (needs the `postgres` extra)
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from controlroom.domain.errors import StoreConfigError
from controlroom.eventstore.postgres import postgres_env

STORE_VAR = "CONTROLROOM_STORE"
MAX_EVENT_BYTES_VAR = "CONTROLROOM_MAX_EVENT_BYTES"
#: Largest serialized event payload accepted. A tool output or agent reply bigger than
#: this is refused with a clear error instead of bloating every replay of the run.
DEFAULT_MAX_EVENT_BYTES = 2 * 1024 * 1024


def state_dir(workspace: Path) -> Path:
    return workspace / ".control-room"


def store_env(workspace: Path, spec: str | None = None) -> dict[str, str]:
    """The eventsourcing environment for the configured store."""
    spec = (os.environ.get(STORE_VAR, "") if spec is None else spec).strip()
    common = {"ORIGINATOR_ID_TYPE": "text"}
    if not spec:
        return {**common, **_sqlite(state_dir(workspace) / "events.sqlite")}
    if spec == "memory":
        return {**common, "PERSISTENCE_MODULE": "eventsourcing.popo"}
    if spec.startswith("sqlite:"):
        raw = spec.removeprefix("sqlite:")
        raw = raw[2:] if raw.startswith("//") else raw
        if not raw:
            raise StoreConfigError(f"{STORE_VAR}='{spec}' names no SQLite file")
        path = Path(raw)
        return {**common, **_sqlite(path if path.is_absolute() else workspace / path)}
    if spec.startswith(("postgres://", "postgresql://")):
        _require_postgres_extra()
        return {**common, **postgres_env(spec)}
    raise StoreConfigError(
        f"{STORE_VAR}='{spec}' is not understood; use 'sqlite:///path', 'postgresql://…', "
        "'memory', or leave unset"
    )


def _require_postgres_extra() -> None:
    """PostgreSQL's driver is an extra: without it, say which, before anything imports it."""
    try:
        missing = any(importlib.util.find_spec(m) is None for m in ("psycopg", "psycopg_pool"))
    except ImportError:
        missing = True
    if missing:
        raise StoreConfigError(
            f"{STORE_VAR} names a PostgreSQL store, which needs the PostgreSQL driver: "
            "pip install 'controlroom[postgres]'"
        )


def _sqlite(path: Path) -> dict[str, str]:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreConfigError(f"cannot create the store folder {path.parent}: {exc}") from exc
    return {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(path)}


def max_event_bytes(configured: str | None = None) -> int:
    raw = (os.environ.get(MAX_EVENT_BYTES_VAR, "") if configured is None else configured).strip()
    if not raw:
        return DEFAULT_MAX_EVENT_BYTES
    try:
        value = int(raw)
    except ValueError:
        raise StoreConfigError(f"{MAX_EVENT_BYTES_VAR}='{raw}' is not a number of bytes") from None
    if value < 1024:
        raise StoreConfigError(f"{MAX_EVENT_BYTES_VAR} must be at least 1024 bytes")
    return value
