"""Whether traces are exported, and where to: the standard OpenTelemetry variables, read
without importing OpenTelemetry (light enough for `controlroom telemetry status` and for
every command's end).

- `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`): where spans go.
  Unset: nothing is exported, and nothing is kept for export.
- `OTEL_EXPORTER_OTLP_PROTOCOL` (or `..._TRACES_PROTOCOL`): `http/protobuf` (the default) or
  `grpc` (with the `telemetry-grpc` extra).
- `OTEL_EXPORTER_OTLP_HEADERS` (or `..._TRACES_HEADERS`): `key=value,...` sent with each
  export (an API key); `OTEL_EXPORTER_OTLP_TIMEOUT` etc. as the exporter reads them.
- `OTEL_SERVICE_NAME`: the service the spans are of (default `controlroom`);
  `OTEL_RESOURCE_ATTRIBUTES` adds to it.
- `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`: export nothing.
- `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`: prompts and replies go into
  the spans (off by default: they may hold anything the workspace holds).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

DEFAULT_SERVICE_NAME: Final = "controlroom"
HTTP: Final = "http/protobuf"
GRPC: Final = "grpc"
_HTTP_EXPORTER: Final = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
_GRPC_EXPORTER: Final = "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"
CAPTURE_CONTENT_VAR: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def _first(env: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return value
    return None


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class TelemetryConfig:
    endpoint: str | None
    protocol: str
    service_name: str
    #: The names of the headers sent (never their values: they are usually keys).
    header_names: tuple[str, ...]
    capture_content: bool
    #: Why nothing is exported although an endpoint is set, if so.
    disabled: str | None
    #: Each export request's time limit, in seconds (`OTEL_EXPORTER_OTLP_TIMEOUT`, as the
    #: Python exporters read it).
    timeout_s: float = 10.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TelemetryConfig:
        env = os.environ if env is None else env
        endpoint = _first(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
        protocol = (
            _first(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL") or HTTP
        ).lower()
        headers = _first(env, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
        names = tuple(
            part.split("=", 1)[0].strip() for part in (headers or "").split(",") if "=" in part
        )
        disabled = None
        if _true(env.get("OTEL_SDK_DISABLED")):
            disabled = "OTEL_SDK_DISABLED is true"
        elif (env.get("OTEL_TRACES_EXPORTER") or "").strip().lower() == "none":
            disabled = "OTEL_TRACES_EXPORTER is none"
        elif protocol not in (HTTP, GRPC):
            disabled = f"OTEL_EXPORTER_OTLP_PROTOCOL '{protocol}' is not {HTTP} or {GRPC}"
        raw_timeout = _first(env, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")
        try:
            timeout_s = float(raw_timeout) if raw_timeout else 10.0
        except ValueError:
            timeout_s = 10.0
        return cls(
            timeout_s=timeout_s if timeout_s > 0 else 10.0,
            endpoint=endpoint,
            protocol=protocol,
            service_name=_first(env, "OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME,
            header_names=names,
            capture_content=_true(env.get(CAPTURE_CONTENT_VAR)),
            disabled=disabled,
        )

    @property
    def configured(self) -> bool:
        """An endpoint is set and export is not switched off."""
        return self.endpoint is not None and self.disabled is None

    def missing_packages(self) -> str | None:
        """What to install for this protocol, when it is not installed."""
        module = _GRPC_EXPORTER if self.protocol == GRPC else _HTTP_EXPORTER
        extra = "telemetry-grpc" if self.protocol == GRPC else "telemetry"
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        return None if found else f"pip install 'controlroom[{extra}]'"

    @property
    def active(self) -> bool:
        """Configured, and its exporter installed: spans are exported."""
        return self.configured and self.missing_packages() is None
