"""`controlroom analytics`: SQL over the whole history, built-in reports, a shell, exports.

    controlroom analytics "SELECT ..." [--json | --csv] [--timeout S] [--max-rows N]
    controlroom analytics report [NAME]         (no NAME: the list of reports)
    controlroom analytics shell                 (statements end with ';'; .tables .reports .quit)
    controlroom analytics export --parquet DIR
    controlroom analytics status | rebuild

The analytics file is caught up with the log before each command (only here and in `serve`:
other commands never pay for it).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import TextIO

from pydantic import ValidationError

from controlroom.domain.errors import BadInputError
from controlroom.engine.context import Context
from controlroom.projections.analytics import AnalyticsProjection
from controlroom.projections.analytics_query import (
    AnalyticsQueryError,
    AnalyticsResult,
    QueryLimits,
)
from controlroom.projections.analytics_sql import REPORTS, TABLE_NAMES, VIEW_NAMES, parse_instant

ACTIONS = ("shell", "report", "export", "status", "rebuild")
MAX_CELL = 60


def run_analytics(ctx: Context, ns: argparse.Namespace) -> int:
    what: str = ns.what.strip()
    if what not in ACTIONS and ns.name is not None:
        raise BadInputError("give the SQL as one argument (quote it)")
    if ns.csv and ns.json:
        raise BadInputError("choose one of --json and --csv")
    if (ns.since or ns.until) and not (what == "report" and ns.name):
        raise BadInputError(
            "--since and --until restrict a report: analytics report NAME --since …"
        )
    since, until = _time_range(ns)  # a bad time is refused before anything is read
    limits = _limits(ns)
    with AnalyticsProjection.for_workspace(
        ctx.store, ctx.workspace.root, ctx.settings.analytics
    ) as analytics:
        if what == "rebuild":
            count = analytics.rebuild()
            print(f"rebuilt analytics from {count} event" + ("" if count == 1 else "s"))
            return 0
        analytics.catch_up()
        if what == "status":
            status = analytics.status()
            if ns.json:
                print(status.model_dump_json(indent=2))
            else:
                print(
                    f"analytics: position {status.position}, head {status.head}, lag {status.lag}"
                )
                print(f"file: {analytics.path}")
            return 0
        if what == "export":
            if not ns.parquet:
                raise BadInputError("export needs --parquet DIR")
            for path in analytics.export_parquet(Path(ns.parquet)):
                print(path)
            return 0
        if what == "report":
            if ns.name is None:
                return _list_reports(ns.json)
            result = analytics.report(ns.name, limits, since, until)
        elif what == "shell":
            return _shell(analytics, limits, ns, sys.stdin, sys.stdout)
        else:
            result = analytics.query(what, limits)
    _print(result, ns, sys.stdout)
    return 0


def _time_range(ns: argparse.Namespace) -> tuple[datetime | None, datetime | None]:
    """`--since` and `--until` as UTC instants (as `GET /api/analytics/reports/{name}`)."""
    found: list[datetime | None] = []
    for flag, text, end in (("--since", ns.since, False), ("--until", ns.until, True)):
        try:
            found.append(parse_instant(text, end=end) if text else None)
        except ValueError:
            raise BadInputError(
                f"{flag} must be an ISO 8601 date or date-time (e.g. 2026-01-31 or "
                f"2026-01-31T09:30:00Z), not {text!r}"
            ) from None
    since, until = found
    if since is not None and until is not None and since > until:
        raise BadInputError("--since must not be after --until")
    return since, until


def _limits(ns: argparse.Namespace) -> QueryLimits:
    try:
        return QueryLimits(timeout_s=ns.timeout, max_rows=ns.max_rows)
    except ValidationError as exc:
        error = exc.errors()[0]
        flag = "--timeout" if error["loc"] == ("timeout_s",) else "--max-rows"
        raise BadInputError(f"{flag}: {error['msg']}") from None


def _list_reports(as_json: bool) -> int:
    if as_json:
        print(json.dumps({name: r.title for name, r in REPORTS.items()}, indent=2))
    else:
        width = max(len(name) for name in REPORTS)
        for name, report in REPORTS.items():
            print(f"{name:<{width}}  {report.title}")
    return 0


def _print(result: AnalyticsResult, ns: argparse.Namespace, out: TextIO) -> None:
    if ns.json:
        print(result.model_dump_json(indent=2), file=out)
    elif ns.csv:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(result.columns)
        writer.writerows([_cell(v, csv=True) for v in row] for row in result.rows)
    else:
        print(render_table(result), file=out)
    if result.note:
        print(f"controlroom: note: {result.note}", file=sys.stderr)


def render_table(result: AnalyticsResult) -> str:
    cells = [[_cell(v) for v in row] for row in result.rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(result.columns)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(result.columns, widths, strict=True)).rstrip(),
        "  ".join("-" * w for w in widths),
    ]
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]
    count = result.row_count
    lines.append(f"({count} row{'' if count == 1 else 's'}, {result.elapsed_ms:.1f} ms)")
    return "\n".join(lines)


def _cell(value: object, csv: bool = False) -> str:
    if value is None:
        return "" if csv else "NULL"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if csv:
        return text
    text = " ".join(text.split())
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _shell(
    analytics: AnalyticsProjection,
    limits: QueryLimits,
    ns: argparse.Namespace,
    stdin: TextIO,
    out: TextIO,
) -> int:
    """Read statements (ending with ';') until end of input or `.quit`; an error is shown
    and the shell goes on."""
    interactive = stdin.isatty()
    if interactive:
        print(
            "Control Room analytics (read-only DuckDB). End statements with ';'. "
            ".tables .reports .quit",
            file=out,
        )
    buffer: list[str] = []
    failures = 0
    while True:
        if interactive:
            print("... " if buffer else "sql> ", end="", file=out, flush=True)
        line = stdin.readline()
        if not line:
            break
        stripped = line.strip()
        if not buffer and stripped in (".quit", ".exit", "\\q"):
            break
        if not buffer and stripped == ".tables":
            print("\n".join((*TABLE_NAMES, *VIEW_NAMES)), file=out)
            continue
        if not buffer and stripped == ".reports":
            _list_reports(False)
            continue
        buffer.append(line)
        if not stripped.endswith(";"):
            continue
        sql, buffer = "".join(buffer), []
        try:
            analytics.catch_up()
            _print(analytics.query(sql, limits), ns, out)
        except AnalyticsQueryError as exc:
            failures += 1
            print(f"error: {exc}", file=out)
    if buffer and "".join(buffer).strip():
        try:
            _print(analytics.query("".join(buffer), limits), ns, out)
        except AnalyticsQueryError as exc:
            failures += 1
            print(f"error: {exc}", file=out)
    return 0 if interactive or not failures else 1
