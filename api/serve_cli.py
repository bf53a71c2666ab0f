"""The long-running processes and the read models they keep: `controlroom serve`, `worker`,
`projections`, `analytics`.

controlroom serve [--host HOST] [--port PORT] [--insecure] [--no-execute]
controlroom worker [--concurrency N] [--poll SECONDS] [--grace SECONDS]
controlroom projections status | rebuild [NAME]
controlroom analytics SELECT… | report [NAME] | shell | export | status | rebuild
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import os
import signal
import socket
import sys
from typing import Any

from controlroom.api.cli_common import (
    EXIT_DONE,
    EXIT_FAILED,
    EXIT_UNAVAILABLE,
    emit_json,
    open_context,
)
from controlroom.domain.errors import BadInputError, ControlRoomError
from controlroom.engine import event_loop
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.projections.traces_export import export_for, export_forever
from controlroom.projections.views import Views

LOOPBACK = ("127.0.0.1", "::1", "localhost")
#: The traces projection's name (`projections/traces.py`).
TRACES = "traces"


def cmd_serve(ns: argparse.Namespace) -> int:
    import uvicorn

    from controlroom.api.app import TOKEN_VAR, create_app
    from controlroom.api.origin_guard import ServedHosts, allowed_hosts
    from controlroom.engine.settings import Settings

    token = Settings.from_env().api_token  # a blank or short token is refused here (64)
    hosts = ServedHosts.bound_to(ns.host, allowed_hosts(os.environ))  # likewise
    if ns.host not in LOOPBACK and not token and not ns.insecure:
        raise BadInputError(
            f"refusing to listen on {ns.host} without {TOKEN_VAR}; set a token, or pass "
            "--insecure to accept anyone on the network"
        )
    try:
        listener = _listen(ns.host, ns.port)
    except socket.gaierror as exc:
        raise BadInputError(f"cannot listen on '{ns.host}': {exc.strerror}") from None
    except OSError as exc:
        hint = (
            "; another process is listening there: pick another --port, or --port 0 for any "
            "free port"
            if exc.errno == errno.EADDRINUSE
            else ""
        )
        print(
            f"controlroom: error: cannot listen on {ns.host}:{ns.port}: {exc.strerror}{hint}",
            file=sys.stderr,
        )
        return EXIT_UNAVAILABLE
    with listener:
        ctx = open_context(ns)
        app = create_app(ctx, token, execute=not ns.no_execute, hosts=hosts)
        config = uvicorn.Config(app, log_level=ns.log_level, loop=event_loop.loop_name())
        server = uvicorn.Server(config)
        port = listener.getsockname()[1]
        host = f"[{ns.host}]" if ":" in ns.host else ns.host
        print(f"serving {ctx.workspace.root} on http://{host}:{port}", file=sys.stderr)
        try:
            server.run(sockets=[listener])
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM, re-raised by uvicorn after shutdown
            pass
        except SystemExit as exc:  # uvicorn's way to say the app failed to start
            print(
                f"controlroom: error: the server did not start (uvicorn exit {exc.code})",
                file=sys.stderr,
            )
            return EXIT_FAILED
    return EXIT_DONE


def _listen(host: str, port: int) -> socket.socket:
    """The server's listening socket, bound before anything starts: a taken port is a
    clear error here, not a server that resumed runs and then quit (uvicorn binds only
    after the app's start-up, and exits 3 when it cannot). Port 0 picks a free port."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock


def cmd_worker(ns: argparse.Namespace) -> int:
    from controlroom.engine.worker import Worker

    ctx = open_context(ns)
    views = Views.for_store(ctx.store, ctx.workspace.root)
    followers = Followers(ctx.store, views)

    def unfinished() -> list[str]:
        return [r.run_id for r in views.query.runs(status="running")]

    worker = Worker(
        ctx,
        unfinished,
        followers,
        concurrency=ns.concurrency,
        poll_s=ns.poll,
        grace_s=ns.grace,
    )

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        traces = export_for(ctx.store)  # OTEL_EXPORTER_OTLP_ENDPOINT set: a loop of its own
        exporting = asyncio.create_task(export_forever(traces)) if traces else None
        try:
            await worker.run(stop)
        finally:
            if exporting is not None and traces is not None:
                exporting.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await exporting
                with contextlib.suppress(Exception):  # what the last runs recorded
                    await asyncio.to_thread(traces.catch_up)
                traces.close()

    print(
        f"worker {worker.owner}: up to {worker.concurrency} runs at once from "
        f"{ctx.workspace.root} (SIGTERM or Ctrl-C stops it gracefully)",
        file=sys.stderr,
    )
    event_loop.run(main())
    views.close()
    print(f"worker {worker.owner}: stopped after taking {worker.taken} run(s)", file=sys.stderr)
    return EXIT_DONE


def cmd_projections(ns: argparse.Namespace) -> int:
    """`status`: each projection's position, the log's head, the lag between them.
    `rebuild [NAME]`: empty one projection (or all) and replay the log into it."""
    ctx = open_context(ns)
    counts: dict[str, int] = {}
    if ns.action == "rebuild" and ns.name == TRACES:
        # Sends every span again (the same ids): only when named, never with the others.
        counts, statuses = _rebuild_traces(ctx)
    else:
        with Views.for_store(ctx.store, ctx.workspace.root) as views:
            if ns.action == "rebuild":
                names = [views.get(ns.name).name] if ns.name else views.names()
                counts = {name: views.rebuild(name) for name in names}
            elif ns.name:
                raise BadInputError("projections status takes no name")
            statuses = views.status()
    if ns.action == "status":
        statuses.extend(_analytics_status(ctx))
        statuses.extend(_traces_status(ctx))
    if ns.json:
        emit_json([s.model_dump(mode="json") for s in statuses])
    elif ns.action == "rebuild":
        for s in statuses:
            if s.name in counts:
                events = f"{counts[s.name]} event" + ("" if counts[s.name] == 1 else "s")
                print(f"rebuilt {s.name} from {events} (position {s.position})")
    else:
        print(f"{'projection':<12} {'position':>9} {'head':>9} {'lag':>9}")
        for s in statuses:
            print(f"{s.name:<12} {s.position:>9} {s.head:>9} {s.lag:>9}")
    return EXIT_DONE


def _traces_status(ctx: Context) -> list[Any]:
    """The traces' export beside the others, when configured or followed before (its lag:
    events whose spans the receiver has not taken yet)."""
    from controlroom.projections.traces_config import TelemetryConfig
    from controlroom.projections.traces_export import TraceExport, traces_exist

    if not (TelemetryConfig.from_env().configured or traces_exist(ctx.store)):
        return []
    with TraceExport.for_store(ctx.store) as traces:
        return [traces.status()]


def _rebuild_traces(ctx: Context) -> tuple[dict[str, int], list[Any]]:
    from controlroom.projections.traces_config import TelemetryConfig
    from controlroom.projections.traces_export import ExportFailedError, TraceExport

    config = TelemetryConfig.from_env()
    if not config.configured:
        raise BadInputError(
            "traces are exported only with OTEL_EXPORTER_OTLP_ENDPOINT set "
            "(controlroom telemetry status)"
        )
    missing = config.missing_packages()
    if missing is not None:
        raise BadInputError(f"no OTLP exporter is installed: {missing}")
    with TraceExport.for_store(ctx.store, config) as traces:
        try:
            traces.rebuild()
        except ExportFailedError as exc:
            raise ControlRoomError(
                f"the receiver did not take the traces ({exc}); nothing was lost: the "
                "export resumes from where it was"
            ) from None
        status = traces.status()
        return {TRACES: traces.rebuilt_events}, [status]


def _analytics_status(ctx: Context) -> list[Any]:
    """The DuckDB analytics projection beside the others, once it exists (it is created
    by the first `controlroom analytics` or a server; never made here just to be listed)."""
    from controlroom.projections.analytics import AnalyticsProjection, analytics_path

    if not analytics_path(ctx.workspace.root).exists():
        return []
    with AnalyticsProjection.for_workspace(ctx.store, ctx.workspace.root) as analytics:
        return [analytics.status()]


def cmd_analytics(ns: argparse.Namespace) -> int:
    """SQL, reports, a shell and Parquet exports over the DuckDB analytics projection."""
    from controlroom.api.analytics_cli import run_analytics

    ctx = open_context(ns)
    return run_analytics(ctx, ns)
