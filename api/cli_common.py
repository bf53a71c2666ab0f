"""What every `controlroom` command group shares: exit codes, JSON output, `--arg` parsing,
opening the workspace's context and reading its views caught up."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

# Re-exported: the command groups take their exit codes from here.
from controlroom.api import recipe_stamp
from controlroom.api.cli_exit import EXIT_BAD_INPUT as EXIT_BAD_INPUT
from controlroom.api.cli_exit import EXIT_CONFLICT as EXIT_CONFLICT
from controlroom.api.cli_exit import EXIT_DONE as EXIT_DONE
from controlroom.api.cli_exit import EXIT_FAILED as EXIT_FAILED
from controlroom.api.cli_exit import EXIT_HUMAN_INPUT as EXIT_HUMAN_INPUT
from controlroom.api.cli_exit import EXIT_INTERRUPTED as EXIT_INTERRUPTED
from controlroom.api.cli_exit import EXIT_NOT_ROUTABLE as EXIT_NOT_ROUTABLE
from controlroom.api.cli_exit import EXIT_OUTPUT_CLOSED as EXIT_OUTPUT_CLOSED
from controlroom.api.cli_exit import EXIT_PARTIAL as EXIT_PARTIAL
from controlroom.api.cli_exit import EXIT_UNAVAILABLE as EXIT_UNAVAILABLE
from controlroom.domain.errors import BadInputError
from controlroom.domain.run import RunStatus
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.projections.views import Views
from controlroom.recipes.catalog import RecipeCatalog

STATUS_EXIT = {
    RunStatus.DONE: EXIT_DONE,
    RunStatus.FAILED: EXIT_FAILED,
    RunStatus.CANCELLED: EXIT_INTERRUPTED,
}


def emit_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def parse_args_kv(pairs: list[str]) -> dict[str, Any]:
    """`KEY=VALUE`; a VALUE that parses as JSON (a list, a number) is taken as JSON."""
    import orjson

    from controlroom.api.limits import check_args

    args: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise BadInputError(f"--arg '{pair[:80]}' is not KEY=VALUE")
        try:
            # orjson refuses nesting past 1024 levels instead of overflowing the stack.
            args[key.strip()] = orjson.loads(value)
        except orjson.JSONDecodeError:
            args[key.strip()] = value
    return check_args(args, "--arg")


def open_context(ns: argparse.Namespace) -> Context:
    ctx = Context.open(Path(ns.workspace))
    warn_about_recipes(ctx.catalog)
    if not ctx.catalog.problems:  # the quick reads may skip the check while nothing changes
        recipe_stamp.record_sound(ctx.workspace.root)
    return ctx


def warn_about_recipes(catalog: RecipeCatalog) -> None:
    """Broken recipe files never stop reading commands; say which and why, once."""
    if not catalog.problems:
        return
    files = len({p.file for p in catalog.problems})
    print(
        f"controlroom: warning: skipped {files} broken recipe file(s); running what they "
        "define is refused until they are fixed (controlroom recipes validate):",
        file=sys.stderr,
    )
    for problem in catalog.problems:
        print(f"  {problem}", file=sys.stderr)


def read_views(ctx: Context, *, after_command: bool = False) -> Views:
    """The read models, caught up with everything recorded so far. Reads are reads: a
    read-only command runs no policy and records nothing. After a command that wrote
    (`after_command`), the policies react first (so the issue a run's last commit calls
    for is open before its summary is printed), then the read models follow."""
    views = Views.for_store(ctx.store, ctx.workspace.root)
    if after_command:
        Followers(ctx.store, views).catch_up()
        export_traces_once(ctx)
    else:
        views.catch_up()
    return views


def export_traces_once(ctx: Context) -> None:
    """After a command that wrote: one pass of the traces' export, when
    OTEL_EXPORTER_OTLP_ENDPOINT is set (a receiver that is down is tried again later)."""
    from controlroom.projections.traces_config import TelemetryConfig

    if TelemetryConfig.from_env().configured:
        from controlroom.projections.traces_export import export_once

        try:
            export_once(ctx.store)
        except Exception as exc:  # the command's own work is done and recorded: say so only
            logging.getLogger("controlroom.traces").warning("traces not exported: %s", exc)
