"""The arguments of `controlroom` commands implemented in api/serve_cli.py; light to import:
`controlroom --help` builds every parser without loading what only a command's work needs."""

from __future__ import annotations

import argparse
from typing import Any

from controlroom.api.commands import Command


def add_worker(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("worker", parents=[common], help="execute queued and abandoned runs")
    p.add_argument(
        "--concurrency", type=_count, default=8, help="runs executed at once, 1-10000 (default 8)"
    )
    p.add_argument("--poll", type=_seconds, default=0.5, help="seconds between looks for work")
    p.add_argument(
        "--grace", type=_seconds, default=30.0, help="seconds to finish steps on SIGTERM"
    )
    p.set_defaults(func=Command("controlroom.api.serve_cli", "cmd_worker"))


def add_serve(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("serve", parents=[common], help="serve the HTTP API and SSE feeds")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=_port, default=8765, help="1-65535, or 0 for any free port")
    p.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback host without CONTROLROOM_API_TOKEN",
    )
    p.add_argument(
        "--no-execute",
        action="store_true",
        help="serve the API only: runs started over HTTP are queued for `controlroom worker`",
    )
    p.add_argument("--log-level", default="warning")
    p.set_defaults(func=Command("controlroom.api.serve_cli", "cmd_serve"))


def add_projections(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "projections", parents=[common], help="the read models: how far they are, rebuild"
    )
    p.add_argument("action", choices=["status", "rebuild"])
    p.add_argument("name", nargs="?", help="one projection (rebuild; default: all)")
    p.set_defaults(func=Command("controlroom.api.serve_cli", "cmd_projections"))


def add_analytics(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "analytics", parents=[common], help="SQL over the whole history (DuckDB), reports"
    )
    p.add_argument("what", help="a SELECT, or: report [NAME], shell, export, status, rebuild")
    p.add_argument("name", nargs="?", help="the report's name (report)")
    p.add_argument("--csv", action="store_true", help="rows as CSV")
    p.add_argument("--parquet", metavar="DIR", help="export every table and view to DIR")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per query (default 10)")
    p.add_argument("--max-rows", type=int, default=10_000, help="rows shown (default 10000)")
    p.add_argument(
        "--since", metavar="WHEN", help="a report over runs started from WHEN (ISO 8601, UTC)"
    )
    p.add_argument(
        "--until", metavar="WHEN", help="... and before WHEN (a date alone: that day included)"
    )
    p.set_defaults(func=Command("controlroom.api.serve_cli", "cmd_analytics"))


def _port(raw: str) -> int:
    if not raw.strip().isdigit() or not 0 <= int(raw) <= 65535:
        raise argparse.ArgumentTypeError(
            f"'{raw}' is not a port: use 1 to 65535, or 0 for any free port"
        )
    return int(raw)


def _count(raw: str) -> int:
    text = raw.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 5 and 1 <= int(text) <= 10_000):
        raise argparse.ArgumentTypeError(f"'{raw[:40]}' is not a count from 1 to 10000")
    return int(text)


def _seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 86_400:  # NaN fails this too
        raise argparse.ArgumentTypeError(f"'{raw[:40]}' is not a number of seconds (0-86400)")
    return value
