"""`controlroom telemetry`: where traces and metrics go, and how far the export is.

controlroom telemetry status     the OTLP endpoint, protocol and service name the standard
                                 OTEL_* variables set, whether content is captured, the
                                 traces' position, lag, last error and next try, and /metrics
controlroom telemetry export     export the traces' backlog now (also during a pause after
                                 a failure); exit 69 when the receiver does not take it

Traces are exported only with OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) set:
OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf, or grpc), OTEL_EXPORTER_OTLP_HEADERS,
OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES as every OpenTelemetry SDK reads them;
OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true adds prompts and replies.
"""

from __future__ import annotations

import argparse
from typing import Any

from controlroom.api.commands import Command


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "telemetry",
        parents=[common],
        help="OpenTelemetry traces and Prometheus metrics: where they go, how far",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", choices=["status", "export"])
    p.set_defaults(
        func=Command("controlroom.api.telemetry_cli", "run_telemetry", with_context=True)
    )
