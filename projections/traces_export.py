"""The traces projection's exporter: spans over OTLP, at the projection's tracked position.

`TraceExport` runs the traces projection (`projections/traces.py`) over a database of its
own (`traces.sqlite` beside a SQLite log, so a slow receiver never holds the views' write
lock; the log's own database on PostgreSQL, where each projection has a lock of its own),
and sends each batch's finished spans with the official OpenTelemetry SDK: a
`TracerProvider` whose id generator hands out the ids the projection derived, a processor
that collects the ended spans, and the OTLP exporter (HTTP/protobuf, or gRPC), which reads
the standard `OTEL_EXPORTER_OTLP_*` variables itself.

A batch commits with its position only once the receiver took its spans. A receiver that is
down or refuses fails the batch: the position stays, nothing is lost, and the pass is tried
again after a pause that doubles up to five minutes (`trace_export`, shared by every process
of the store), so a command's end or a server loop does not wait on a dead receiver each
time; once the receiver is back, the backlog drains in order. A process killed between the
export and the commit sends that batch again on its next pass, with the same ids: a receiver
that keys spans by id (Phoenix) keeps one of each.

Used by `serve` and `worker` (a loop of their own: never the catch-up loop reads wait for),
by every command that wrote (one pass at its end), by `controlroom telemetry export` and by
`projections rebuild traces` (which sends every span again, same ids).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Self

from controlroom.eventstore.store import EventStore
from controlroom.projections.base import BATCH, Projections
from controlroom.projections.db import Db, PostgresDb
from controlroom.projections.models import ProjectionStatus
from controlroom.projections.traces import NAME, Span, TracesProjection
from controlroom.projections.traces_config import GRPC, TelemetryConfig

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

log = logging.getLogger("controlroom.traces")

FILE_NAME: Final = "traces.sqlite"
#: The pause after a failed export: doubles from `FIRST_PAUSE_S` up to `MAX_PAUSE_S`.
FIRST_PAUSE_S: Final = 10.0
MAX_PAUSE_S: Final = 300.0
#: How often a server or worker looks for spans to export.
INTERVAL_S: Final = 1.0
#: The longest a command's own end-of-command export waits for the receiver (a server, a
#: worker and `telemetry export` wait the OTLP timeout, 10 s unless set).
COMMAND_TIMEOUT_S: Final = 5.0
_STATE: Final = """CREATE TABLE IF NOT EXISTS trace_export (
    name TEXT PRIMARY KEY, failures INTEGER NOT NULL, retry_at DOUBLE PRECISION NOT NULL,
    last_error TEXT, last_error_at DOUBLE PRECISION, exported_spans INTEGER NOT NULL,
    last_export_at DOUBLE PRECISION)"""
_STATE_LOCK: Final = "traces.export"
#: Test-only fault injection: the process kills itself (SIGKILL) right after its Nth batch
#: of spans was taken by the receiver, before the batch's position commits. Unset normally.
CRASH_AFTER_SEND_VAR: Final = "CONTROLROOM_TRACES_CRASH_AFTER_SEND"


class ExportFailedError(RuntimeError):
    """The receiver did not take a batch's spans (down, refusing, too slow)."""


class TraceExport:
    def __init__(
        self,
        store: EventStore,
        where: Path | Db | None,
        config: TelemetryConfig | None = None,
        exporter: SpanExporter | None = None,
        *,
        timeout_s: float | None = None,
    ) -> None:
        self.store = store
        #: Each export request's time limit (None: the OTLP variables', else 10 s).
        self.timeout_s = timeout_s
        self.config = config or TelemetryConfig.from_env()
        self.projection = TracesProjection(
            self._send, capture_content=self.config.capture_content, texts=store.text
        )
        self.projections = Projections(store, where, [self.projection])
        self.conn = self.projections.conn
        self._exporter = exporter
        self._sdk: _Sdk | None = None
        #: Spans sent by this object (the tests' and the CLI's count).
        self.sent = 0
        #: Events the last `rebuild` read.
        self.rebuilt_events = 0
        self._sends = 0
        raw = os.environ.get(CRASH_AFTER_SEND_VAR, "").strip()
        self._crash_after = int(raw) if raw.isdigit() else None
        with self.projections.lock, self.conn.transaction([_STATE_LOCK]):
            self.conn.create(_STATE)

    @classmethod
    def for_store(
        cls,
        store: EventStore,
        config: TelemetryConfig | None = None,
        *,
        timeout_s: float | None = None,
    ) -> TraceExport:
        return cls(store, traces_location(store), config, timeout_s=timeout_s)

    # -- following the log -------------------------------------------------------------------

    def catch_up(self, *, force: bool = False) -> int:
        """Export every span that ended since the position; returns how many were sent.
        After a failure, passes within the pause do nothing (`force`: try now anyway).
        A failure is recorded and logged, not raised: `export` raises it."""
        try:
            return self.export(force=force)
        except ExportFailedError:
            return 0

    def export(self, *, force: bool = True, batch_size: int = BATCH) -> int:
        """`catch_up`, raising `ExportFailedError` when the receiver failed."""
        if not force and self._pausing():
            return 0
        if self.projections._read.get(NAME, (0, -1))[1] == self.store.max_position():
            return 0  # read up to the head already: no transaction at all
        before = self.sent
        try:
            with self.projections.lock:
                while True:
                    with self.conn.transaction([NAME]):
                        _, done, read = self.projections._advance(self.projection, batch_size)
                    self.projections._read[NAME] = read
                    if done:
                        break
        except ExportFailedError as exc:
            self._failed(str(exc))
            raise
        except Exception as exc:
            self._failed(f"{type(exc).__name__}: {exc}")
            raise ExportFailedError(str(exc)) from exc
        if self.sent > before or self._state()["failures"]:
            self._succeeded(self.sent - before)
        return self.sent - before

    def rebuild(self) -> int:
        """Replay the whole log into the projection, sending every span again (same ids);
        returns how many spans were sent. A failure leaves the old position."""
        before = self.sent
        try:
            self.rebuilt_events = self.projections.rebuild(NAME)
        except Exception as exc:
            self._failed(f"{type(exc).__name__}: {exc}")
            raise ExportFailedError(str(exc)) from exc
        self._succeeded(self.sent - before)
        return self.sent - before

    def status(self) -> ProjectionStatus:
        return self.projections.status()[0]

    def statuses(self) -> list[ProjectionStatus]:
        return [self.status()]

    def state(self) -> dict[str, Any]:
        """The export's own record: failures in a row, the last error, spans exported."""
        with self.projections.lock:
            return self._state()

    def close(self) -> None:
        if self._sdk is not None:
            self._sdk.shutdown()
        self.projections.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------------

    def _send(self, spans: list[Span]) -> None:
        """The projection's sink: raises unless the receiver took every span."""
        if self._sdk is None:
            self._sdk = _Sdk(self.config, self._exporter, self.timeout_s)
        self._sdk.export(spans)
        self.sent += len(spans)
        self._sends += 1
        if self._crash_after is not None and self._sends >= self._crash_after:
            os.kill(os.getpid(), signal.SIGKILL)  # test-only: sent, not yet committed

    def _state(self) -> dict[str, Any]:
        row = self.conn.execute(
            "SELECT failures, retry_at, last_error, last_error_at, exported_spans, "
            "last_export_at FROM trace_export WHERE name = ?",
            (NAME,),
        ).fetchone()
        keys = ("failures", "retry_at", "last_error", "last_error_at", "exported_spans",
                "last_export_at")  # fmt: skip
        if row is None:
            return dict(zip(keys, (0, 0.0, None, None, 0, None), strict=True))
        return dict(zip(keys, row, strict=True))

    def _pausing(self) -> bool:
        with self.projections.lock:
            return bool(self._state()["retry_at"] > time.time())

    def _write_state(self, state: dict[str, Any]) -> None:
        columns = ("name", "failures", "retry_at", "last_error", "last_error_at",
                   "exported_spans", "last_export_at")  # fmt: skip
        with self.projections.lock, self.conn.transaction([_STATE_LOCK]):
            self.conn.execute(
                self.conn.upsert("trace_export", columns, ("name",)),
                (NAME, *(state[c] for c in columns[1:])),
            )

    def _failed(self, error: str) -> None:
        with self.projections.lock:
            state = self._state()
        failures = int(state["failures"]) + 1
        pause = min(MAX_PAUSE_S, FIRST_PAUSE_S * 2 ** (failures - 1))
        now = time.time()
        state.update(failures=failures, retry_at=now + pause, last_error=error[:2000],
                     last_error_at=now)  # fmt: skip
        self._write_state(state)
        log.warning("traces not exported (%s); the backlog waits, next try in %.0f s", error, pause)

    def _succeeded(self, count: int) -> None:
        with self.projections.lock:
            state = self._state()
        state.update(
            failures=0,
            retry_at=0.0,
            exported_spans=int(state["exported_spans"]) + count,
            last_export_at=time.time() if count else state["last_export_at"],
        )
        self._write_state(state)


def traces_location(store: EventStore) -> Path | Db | None:
    """`traces.sqlite` beside a SQLite log, the log's own database on PostgreSQL, memory
    for a store in memory."""
    dbname = store.env.get("SQLITE_DBNAME") if store.backend == "sqlite" else None
    if dbname:
        return Path(dbname).with_name(FILE_NAME)
    if store.backend == "postgres":
        return PostgresDb(store.env)
    return None


def traces_exist(store: EventStore) -> bool:
    """Whether this store's traces were ever followed (on PostgreSQL: assumed so)."""
    where = traces_location(store)
    return isinstance(where, Path) and where.exists()


def export_for(store: EventStore, *, timeout_s: float | None = None) -> TraceExport | None:
    """The store's exporter when telemetry is configured and installed, else None (a
    configured endpoint without the packages says so once, in the log)."""
    config = TelemetryConfig.from_env()
    if not config.configured:
        return None
    missing = config.missing_packages()
    if missing is not None:
        log.warning("OTEL_EXPORTER_OTLP_ENDPOINT is set but no exporter is installed: %s", missing)
        return None
    if timeout_s is not None:
        timeout_s = min(timeout_s, config.timeout_s)
    return TraceExport.for_store(store, config, timeout_s=timeout_s)


def export_once(store: EventStore) -> int:
    """One pass at a command's end (after its commits): nothing unless configured."""
    export = export_for(store, timeout_s=COMMAND_TIMEOUT_S)
    if export is None:
        return 0
    with export:
        return export.catch_up()


async def export_forever(export: TraceExport, interval_s: float = INTERVAL_S) -> None:
    """A server's or worker's loop: a pass every `interval_s`, off the event loop."""
    while True:
        try:
            await asyncio.to_thread(export.catch_up)
        except Exception:  # keep going; the position is where the last batch left it
            log.exception("trace export pass failed")
        await asyncio.sleep(interval_s)


# -- OpenTelemetry ---------------------------------------------------------------------------


class _Sdk:
    """The official SDK, used as a recorder of given spans: a provider whose ids are the
    projection's, spans started and ended at their recorded times, collected on end and
    sent in one export call."""

    def __init__(
        self, config: TelemetryConfig, exporter: SpanExporter | None, timeout_s: float | None
    ) -> None:
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SpanExportResult
        from opentelemetry.sdk.trace.sampling import ALWAYS_ON

        self._ok = SpanExportResult.SUCCESS
        self.ids = _given_ids()
        self.collected = _collector()
        base = {} if _service_name_from_env() else {SERVICE_NAME: config.service_name}
        resource = Resource.create(base)
        self.provider = TracerProvider(resource=resource, id_generator=self.ids, sampler=ALWAYS_ON)
        self.provider.add_span_processor(self.collected)
        from controlroom import __version__

        self.tracer = self.provider.get_tracer("controlroom.traces", __version__)
        self.exporter = exporter or _exporter(config, timeout_s)

    def export(self, spans: Sequence[Span]) -> None:
        from opentelemetry import trace
        from opentelemetry.context import Context
        from opentelemetry.trace import (
            Link,
            NonRecordingSpan,
            SpanContext,
            SpanKind,
            Status,
            StatusCode,
            TraceFlags,
        )

        sampled = TraceFlags(TraceFlags.SAMPLED)
        self.collected.ended.clear()
        for span in spans:
            context = Context()
            if span.parent_id is not None:
                parent = SpanContext(span.trace_id, span.parent_id, False, sampled)
                context = trace.set_span_in_context(NonRecordingSpan(parent), context)
            self.ids.next(span.trace_id, span.span_id)
            links = [
                Link(SpanContext(link.trace_id, link.span_id, False, sampled), link.attributes)
                for link in span.links
            ]
            started = self.tracer.start_span(
                span.name,
                context=context,
                kind=SpanKind[span.kind],
                attributes=span.attributes,
                links=links,
                start_time=span.start_ns,
                record_exception=False,
                set_status_on_exception=False,
            )
            for event in span.events:
                started.add_event(event.name, event.attributes, event.time_ns)
            if span.error is not None:
                started.set_status(Status(StatusCode.ERROR, span.error))
            else:
                started.set_status(Status(StatusCode.OK))
            started.end(end_time=span.end_ns)
        ended = list(self.collected.ended)
        self.collected.ended.clear()
        if len(ended) != len(spans):
            raise ExportFailedError(f"{len(spans) - len(ended)} span(s) were not recorded")
        with _exporter_log() as said:
            try:
                result = self.exporter.export(ended)
            except Exception as exc:
                raise ExportFailedError(f"{type(exc).__name__}: {exc}") from exc
        if result != self._ok:
            why = f": {said[0]}" if said else ""
            raise ExportFailedError(f"the receiver did not take {len(ended)} span(s){why}")

    def shutdown(self) -> None:
        self.exporter.shutdown()


@contextlib.contextmanager
def _exporter_log() -> Iterator[list[str]]:
    """The OTLP exporter's own warnings during one export, kept (the first says why)
    instead of printed: a command's output stays clean while a receiver is down, and the
    reason goes into the one line `_failed` logs and `telemetry status` shows."""
    said: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage()[:500])

    logger = logging.getLogger("opentelemetry.exporter")
    handler, propagate = Keep(logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield said
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def _service_name_from_env() -> bool:
    return bool(os.environ.get("OTEL_SERVICE_NAME", "").strip())


def _exporter(config: TelemetryConfig, timeout_s: float | None) -> SpanExporter:
    """The official OTLP exporter, configured by the OTEL_EXPORTER_OTLP_* variables it
    reads itself (endpoint, headers, certificates, compression, timeout)."""
    if config.protocol == GRPC:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )

        grpc: SpanExporter = GrpcExporter(timeout=timeout_s)
        return grpc
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(timeout=timeout_s)


def _given_ids() -> Any:
    """An id generator that hands out the ids the projection derived, one span at a time
    (a class made when the SDK is first used: this module imports no OpenTelemetry)."""
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    class GivenIds(IdGenerator):
        def __init__(self) -> None:
            self.trace_id = 0
            self.span_id = 0

        def next(self, trace_id: int, span_id: int) -> None:
            self.trace_id, self.span_id = trace_id, span_id

        def generate_span_id(self) -> int:
            return self.span_id

        def generate_trace_id(self) -> int:
            return self.trace_id

    return GivenIds()


def _collector() -> Any:
    """A span processor that keeps the spans that ended, for one export call."""
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

    class Collect(SpanProcessor):
        def __init__(self) -> None:
            self.ended: list[ReadableSpan] = []

        def on_end(self, span: ReadableSpan) -> None:
            self.ended.append(span)

    return Collect()
