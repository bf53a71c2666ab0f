"""Analytics reports named for a figure, and asked for a time range (issue 30).

Every report charts the column it is named for (`figure`), which must be one of the columns
its SQL returns; every report restricted to a range reads the same rows as without one when
the range holds every run, and none when it holds none; over HTTP on 127.0.0.1 the range is
two query parameters, an unreadable time a 400 that says what it wants.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlroom.engine.context import Context
from controlroom.projections.analytics import AnalyticsProjection
from controlroom.projections.analytics_sql import RANGEABLE, REPORTS, Report, ranged_sql
from tests.conftest import DEMO_LEFTOVERS, EXAMPLE
from tests.live import live_server
from tests.test_analytics_surface import record

LONG_AGO = datetime(2000, 1, 1, tzinfo=UTC)
FAR_AHEAD = datetime(2999, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, datetime]]:
    """A copy of the example with three finished runs, and a time before they started."""
    root = tmp_path_factory.mktemp("ranges")
    workspace = root / "novel"
    shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns(*DEMO_LEFTOVERS))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CONTROLROOM_HOME", str(root / "home"))
        env.delenv("CONTROLROOM_STORE", raising=False)
        before = datetime.now(UTC) - timedelta(seconds=1)
        record(workspace, "Draft scene 4", "consistency check", "prose review")
        yield workspace, before


@pytest.fixture(scope="module")
def analytics(recorded: tuple[Path, datetime]) -> Iterator[AnalyticsProjection]:
    workspace, _ = recorded
    ctx = Context.open(workspace)
    with AnalyticsProjection.for_workspace(ctx.store, workspace) as projection:
        projection.catch_up()
        yield projection
    ctx.close()


def test_every_reports_figure_is_a_column_it_returns(tmp_path: Path) -> None:
    """On an empty store (the columns come without rows) and on one with runs."""
    workspace = tmp_path / "empty"
    (workspace / ".control-room").mkdir(parents=True)
    ctx = Context.open(workspace)
    try:
        with AnalyticsProjection.for_workspace(ctx.store, workspace) as empty:
            empty.catch_up()
            for name, report in REPORTS.items():
                result = empty.report(name)
                assert result.rows == []
                assert report.figure in result.columns, (name, report.figure, result.columns)
                at = result.columns.index(report.figure)
                assert re.match(
                    r"(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|DOUBLE|FLOAT|DECIMAL)", (result.types[at])
                ), (name, result.types[at])  # a figure is a number: its length is the bar's
    finally:
        ctx.close()


def test_each_figure_is_the_one_its_title_names() -> None:
    """The figures chosen (not the last numeric column: a failure rate, not a duration)."""
    assert REPORTS["run_outcomes"].figure == "failure_pct"
    assert REPORTS["step_failures"].figure == "failure_pct"
    assert REPORTS["slowest_steps"].figure == "p95_ms"
    assert REPORTS["model_usage"].figure == "cost_usd"
    assert REPORTS["runs_per_day"].figure == "runs"


def test_a_range_holding_every_run_reads_what_no_range_reads_and_one_holding_none_nothing(
    analytics: AnalyticsProjection, recorded: tuple[Path, datetime]
) -> None:
    _, before = recorded
    everything = {name: analytics.report(name) for name in REPORTS}
    assert everything["run_outcomes"].rows and everything["slowest_steps"].rows
    for name, report in REPORTS.items():
        assert report.time_range, name
        assert set(report.ranged) <= RANGEABLE, name
        for source in report.ranged:  # each source restricted is one the report reads
            assert re.search(rf"\b(FROM|JOIN)\s+{source}\b", report.sql), (name, source)
        for since, until in ((before, None), (LONG_AGO, FAR_AHEAD), (None, FAR_AHEAD)):
            same = analytics.query(ranged_sql(report, since, until))
            assert (same.columns, same.rows) == (
                everything[name].columns,
                everything[name].rows,
            ), (name, since, until)
        for since, until in ((FAR_AHEAD, None), (None, LONG_AGO), (LONG_AGO, before)):
            none = analytics.query(ranged_sql(report, since, until))
            assert none.columns == everything[name].columns
            assert none.rows == [], (name, since, until, none.rows)


def test_no_range_is_the_reports_own_sql_and_the_times_are_written_from_datetimes() -> None:
    report = REPORTS["loop_steps"]  # its SQL has a WITH of its own
    assert ranged_sql(report, None, None) == report.sql
    sql = ranged_sql(report, datetime(2026, 1, 31, 10, 0, tzinfo=UTC), None)
    assert "TIMESTAMP '2026-01-31 10:00:00.000000'" in sql
    assert sql.count("WITH ") == 1 and "per_run AS" in sql
    # An offset is turned into UTC, as the tables hold it.
    east = datetime.fromisoformat("2026-01-31T12:00:00+02:00")
    assert "TIMESTAMP '2026-01-31 10:00:00.000000'" in ranged_sql(report, east, None)


def test_a_report_that_cannot_be_restricted_is_refused_a_range_not_answered_whole() -> None:
    whole = Report("Everything", "SELECT count(*) AS n FROM events", figure="n")
    assert not whole.time_range
    assert ranged_sql(whole, None, None) == whole.sql
    with pytest.raises(ValueError, match="cannot be restricted"):
        ranged_sql(whole, LONG_AGO, None)


def _report(client: httpx.Client, name: str, **params: str) -> dict[str, Any]:
    response = client.get(f"/api/analytics/reports/{name}", params=params)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def _z(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


@pytest.mark.e2e
def test_reports_over_http_take_a_time_range(recorded: tuple[Path, datetime]) -> None:
    workspace, before = recorded
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=60) as client:
        assert base.startswith("http://127.0.0.1:")
        listed = {r["name"]: r for r in client.get("/api/analytics/reports").json()}
        assert set(listed) == set(REPORTS)
        for name, summary in listed.items():
            assert summary["figure"] == REPORTS[name].figure
            assert summary["time_range"] is True

        for name in REPORTS:
            whole = _report(client, name)
            assert _report(client, name, since=_z(before))["rows"] == whole["rows"], name
            wide = _report(client, name, since="2000-01-01", until="2999-01-01T00:00:00Z")
            assert wide["rows"] == whole["rows"], name
            assert _report(client, name, since="2999-01-01")["rows"] == [], name
            assert _report(client, name, until=_z(before))["rows"] == [], name

        outcomes = _report(client, "run_outcomes")
        runs = outcomes["columns"].index("runs")
        assert sum(row[runs] for row in outcomes["rows"]) == 3
        # A date alone as the end includes that day: today's runs are in.
        today = datetime.now(UTC).date().isoformat()
        assert _report(client, "run_outcomes", until=today)["rows"] == outcomes["rows"]
        # The counts of a report over a range are those of its runs only.
        per_day = _report(client, "runs_per_day", since="2999-01-01", until="2999-12-31")
        assert per_day["row_count"] == 0

        for params, field in (
            ({"since": "yesterday"}, "since"),
            ({"until": "2026-13-01"}, "until"),
            ({"since": "2026-02-01", "until": "2026-01-01"}, "since"),
        ):
            refused = client.get("/api/analytics/reports/run_outcomes", params=params)
            assert refused.status_code == 400, (params, refused.text)
            error = refused.json()["error"]
            assert error["code"] == "bad_time" and error["field"] == field
        unreadable = client.get("/api/analytics/reports/run_outcomes", params={"since": "soon"})
        assert "ISO 8601" in unreadable.json()["error"]["message"]

        document = client.get("/openapi.json").json()
        parameters = document["paths"]["/api/analytics/reports/{name}"]["get"]["parameters"]
        assert {"since", "until"} <= {p["name"] for p in parameters}
        summary = document["components"]["schemas"]["ReportSummary"]
        assert {"figure", "time_range"} <= set(summary["properties"])


@pytest.mark.e2e
def test_the_cli_takes_the_same_range(recorded: tuple[Path, datetime]) -> None:
    from tests.test_cli_e2e import cli

    ws, _ = recorded
    whole = cli("analytics", "report", "run_outcomes", "-w", str(ws), "--json")
    assert whole.returncode == 0, whole.stderr
    assert json.loads(whole.stdout)["row_count"] > 0
    later = cli(
        "analytics", "report", "run_outcomes", "-w", str(ws), "--json", "--since", "2999-01-01"
    )
    assert later.returncode == 0, later.stderr
    assert json.loads(later.stdout)["row_count"] == 0
    held = cli(
        "analytics", "report", "run_outcomes", "-w", str(ws), "--json",
        "--since", "2000-01-01", "--until", "2999-12-31",
    )  # fmt: skip
    assert json.loads(held.stdout)["rows"] == json.loads(whole.stdout)["rows"]
    bad = cli("analytics", "report", "run_outcomes", "-w", str(ws), "--since", "yesterday")
    assert bad.returncode == 64 and "ISO 8601" in bad.stderr
    backwards = cli(
        "analytics", "report", "run_outcomes", "-w", str(ws),
        "--since", "2026-02-01", "--until", "2026-01-01",
    )  # fmt: skip
    assert backwards.returncode == 64 and "after --until" in backwards.stderr
    misplaced = cli("analytics", "SELECT 1", "-w", str(ws), "--since", "2026-01-01")
    assert misplaced.returncode == 64 and "restrict a report" in misplaced.stderr
