"""`controlroom telemetry status | export` (api/telemetry_args.py says what each does)."""

from __future__ import annotations

import argparse
import datetime as dt
import time
from typing import Any

from controlroom.api.cli_common import emit_json
from controlroom.api.cli_exit import EXIT_DONE, EXIT_UNAVAILABLE
from controlroom.api.metrics import OPEN_VAR, is_open
from controlroom.domain.errors import BadInputError
from controlroom.engine.context import Context
from controlroom.projections.traces_config import CAPTURE_CONTENT_VAR, TelemetryConfig
from controlroom.projections.traces_export import (
    ExportFailedError,
    TraceExport,
    traces_exist,
)


def run_telemetry(ctx: Context, ns: argparse.Namespace) -> int:
    if ns.action == "export":
        return _export(ctx, ns)
    report = status_report(ctx)
    if ns.json:
        emit_json(report)
    else:
        print(render(report))
    return EXIT_DONE


def status_report(ctx: Context) -> dict[str, Any]:
    config = TelemetryConfig.from_env()
    traces: dict[str, Any] = {
        "configured": config.configured,
        "endpoint": config.endpoint,
        "protocol": config.protocol,
        "service_name": config.service_name,
        "header_names": list(config.header_names),
        "capture_content": config.capture_content,
        "disabled": config.disabled,
        "missing": config.missing_packages() if config.configured else None,
        "position": None,
    }
    if config.configured or traces_exist(ctx.store):
        with TraceExport.for_store(ctx.store, config) as export:
            status, state = export.status(), export.state()
        traces.update(
            position=status.position,
            head=status.head,
            lag=status.lag,
            exported_spans=state["exported_spans"],
            last_export_at=_when(state["last_export_at"]),
            failures=state["failures"],
            last_error=state["last_error"],
            last_error_at=_when(state["last_error_at"]),
            next_try_in_s=max(0.0, round(float(state["retry_at"]) - time.time(), 1))
            if state["failures"]
            else None,
        )
    return {
        "traces": traces,
        "metrics": {"path": "/metrics", "token_required": not is_open()},
    }


def render(report: dict[str, Any]) -> str:
    t, m = report["traces"], report["metrics"]
    lines = []
    if t["configured"]:
        lines.append(
            f"traces:    exported to {t['endpoint']} over {t['protocol']} "
            f"as service '{t['service_name']}'"
        )
        if t["header_names"]:
            lines.append(f"headers:   {', '.join(t['header_names'])} (values not shown)")
        if t["missing"]:
            lines.append(f"exporter:  not installed: {t['missing']}")
    elif t["disabled"]:
        lines.append(f"traces:    not exported: {t['disabled']}")
    else:
        lines.append("traces:    not exported (set OTEL_EXPORTER_OTLP_ENDPOINT to export them)")
    content = "captured" if t["capture_content"] else "not captured"
    lines.append(f"content:   prompts and replies {content} ({CAPTURE_CONTENT_VAR})")
    if t["position"] is not None:
        lines.append(
            f"position:  {t['position']} of {t['head']} (lag {t['lag']}); "
            f"{t['exported_spans']} span(s) exported"
            + (f", last at {t['last_export_at']}" if t["last_export_at"] else "")
        )
        if t["failures"]:
            lines.append(
                f"failing:   {t['failures']} export(s) in a row, last at {t['last_error_at']}: "
                f"{t['last_error']}; next try in {t['next_try_in_s']} s (nothing is lost)"
            )
    token = "the API token required" if m["token_required"] else f"open ({OPEN_VAR})"
    lines.append(f"metrics:   GET {m['path']} on `controlroom serve`, {token}")
    return "\n".join(lines)


def _export(ctx: Context, ns: argparse.Namespace) -> int:
    config = TelemetryConfig.from_env()
    if not config.configured:
        raise BadInputError(config.disabled or "set OTEL_EXPORTER_OTLP_ENDPOINT to export traces")
    missing = config.missing_packages()
    if missing is not None:
        raise BadInputError(f"no OTLP exporter is installed: {missing}")
    with TraceExport.for_store(ctx.store, config) as export:
        try:
            sent = export.export(force=True)
            failed = None
        except ExportFailedError as exc:
            sent, failed = export.sent, str(exc)
        status = export.status()
    result = {"exported_spans": sent, "position": status.position, "lag": status.lag,
              "error": failed}  # fmt: skip
    if ns.json:
        emit_json(result)
    elif failed:
        print(
            f"controlroom: the receiver did not take the traces ({failed}); {sent} span(s) "
            f"sent before; lag {status.lag} (nothing is lost: the next export resumes)"
        )
    else:
        print(f"exported {sent} span(s); position {status.position}, lag {status.lag}")
    return EXIT_UNAVAILABLE if failed else EXIT_DONE


def _when(epoch: float | None) -> str | None:
    if not epoch:
        return None
    return dt.datetime.fromtimestamp(float(epoch), dt.UTC).isoformat(timespec="seconds")
