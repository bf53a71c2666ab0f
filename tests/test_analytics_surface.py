"""The analytics surface: the safe SQL, its limits, a kill mid-batch, the CLI and HTTP."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.service import RunRequest, RunService
from controlroom.projections.analytics import CRASH_IN_BATCH_VAR, AnalyticsProjection
from controlroom.projections.analytics_query import AnalyticsQueryError, QueryLimits
from controlroom.projections.analytics_sql import REPORTS
from tests.analytics_contract import dump
from tests.conftest import DEMO_LEFTOVERS, EXAMPLE, FIXTURES
from tests.live import live_server

CLI = str(Path(sys.executable).parent / "controlroom")


def record(workspace: Path, *tasks: str) -> None:
    ctx = Context.open(workspace)
    service = RunService(ctx)
    for task in tasks:
        asyncio.run(service.execute(service.start(RunRequest(task, {}))))
    Followers(ctx.store).catch_up()
    ctx.close()


@pytest.fixture(scope="module")
def analytics(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AnalyticsProjection]:
    """One store and analytics file for the read-only tests of this module."""
    root = tmp_path_factory.mktemp("analytics")
    workspace = root / "novel"
    shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns(*DEMO_LEFTOVERS))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CONTROLROOM_HOME", str(root / "home"))
        env.delenv("CONTROLROOM_STORE", raising=False)
        record(workspace, "Draft scene 4", "consistency check", "prose review")
        ctx = Context.open(workspace)
        with AnalyticsProjection.for_workspace(ctx.store, workspace) as projection:
            projection.catch_up()
            yield projection
        ctx.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        ("INSERT INTO events SELECT * FROM events", "writes"),
        ("UPDATE runs_x SET status = 'done'", "writes"),
        ("DELETE FROM events", "writes"),
        ("CREATE TABLE stolen AS SELECT * FROM events", "creating"),
        ("CREATE TEMP TABLE t AS SELECT 1", "creating"),
        ("DROP TABLE events", "dropping"),
        ("ALTER TABLE events ADD COLUMN x INT", "altering"),
        ("COPY events TO '/tmp/leak.csv'", "COPY"),
        ("COPY (SELECT 1) TO '/tmp/leak.parquet' (FORMAT parquet)", "COPY"),
        ("EXPORT DATABASE '/tmp/leak'", "EXPORT"),
        ("ATTACH '/tmp/other.duckdb' AS other", "ATTACH"),
        ("DETACH analytics", "DETACH"),
        ("INSTALL httpfs", "INSTALL"),
        ("LOAD httpfs", "INSTALL and LOAD"),
        ("SET threads = 1", "SET"),
        ("RESET threads", "SET"),
        ("SET VARIABLE x = 1", "SET"),
        ("PRAGMA show_tables", "PRAGMA"),
        ("CALL pragma_version()", "CALL"),
        ("CHECKPOINT", "CALL"),
        ("VACUUM", "VACUUM"),
        ("BEGIN TRANSACTION", "transaction"),
        ("SELECT 1; DROP TABLE events", "one statement per query"),
        ("SELECT 1; SELECT 2", "one statement per query"),
        ("SELECT * FROM read_csv('/etc/passwd')", "cannot read or write files"),
        ("SELECT * FROM read_text('/etc/hostname')", "cannot read or write files"),
        ("SELECT * FROM glob('/*')", "cannot read or write files"),
        ("SELECT * FROM read_parquet('https://example.com/x.parquet')", "cannot read or write"),
        ("", "empty"),
        ("   ;  ", "no statement"),
    ],
)
def test_every_forbidden_form_is_refused_clearly_and_the_file_stays_intact(
    analytics: AnalyticsProjection, sql: str, says: str
) -> None:
    before = digest(analytics.path)
    with pytest.raises(AnalyticsQueryError) as refused:
        analytics.query(sql)
    assert says in str(refused.value)
    assert digest(analytics.path) == before
    assert analytics.query("SELECT count(*) FROM events").rows[0][0] > 0


def test_a_query_past_its_time_limit_is_stopped_with_a_clear_message(
    analytics: AnalyticsProjection,
) -> None:
    slow = "SELECT count(*) FROM range(100000000000) a"
    with pytest.raises(AnalyticsQueryError) as stopped:
        analytics.query(slow, QueryLimits(timeout_s=0.3))
    assert stopped.value.code == "query_timeout" and "0.3s" in str(stopped.value)
    assert analytics.query("SELECT 42").rows == [[42]]


def test_rows_past_the_limit_are_cut_and_the_result_says_so(
    analytics: AnalyticsProjection,
) -> None:
    result = analytics.query("SELECT * FROM range(100)", QueryLimits(max_rows=7))
    assert (result.row_count, result.truncated) == (7, True)
    assert result.note is not None and "first 7 rows" in result.note
    whole = analytics.query("SELECT * FROM range(7)", QueryLimits(max_rows=7))
    assert (whole.truncated, whole.note) == (False, None)


def test_select_forms_that_only_read_are_allowed(analytics: AnalyticsProjection) -> None:
    for sql in (
        "WITH r AS (SELECT * FROM runs) SELECT count(*) FROM r",
        "FROM events LIMIT 1",
        "DESCRIBE events",
        "SHOW TABLES",
        "SUMMARIZE runs",
        "SELECT 1;",
    ):
        assert analytics.query(sql).columns, sql


def test_every_report_answers(analytics: AnalyticsProjection) -> None:
    for name in REPORTS:
        result = analytics.report(name)
        assert result.columns, name
    outcomes = {row[0]: row[1] for row in analytics.report("run_outcomes").rows}
    assert outcomes == {"creative_draft_scene": 1, "analytical_consistency": 1,
                        "analytical_prose": 1}  # fmt: skip


def test_a_projection_killed_mid_batch_resumes_without_losing_or_duplicating(
    workspace: Path,
) -> None:
    record(workspace, "Draft scene 4", "consistency check", "prose review", "canon update")
    script = (
        "import sys; from pathlib import Path; "
        "from controlroom.engine.context import Context; "
        "from controlroom.projections.analytics import AnalyticsProjection; "
        "ctx = Context.open(Path(sys.argv[1])); "
        "AnalyticsProjection.for_workspace(ctx.store, ctx.workspace.root).catch_up(batch_size=9)"
    )
    killed = subprocess.run(
        [sys.executable, "-c", script, str(workspace)],
        env={**os.environ, CRASH_IN_BATCH_VAR: "3"},
        capture_output=True,
        timeout=60,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    ctx = Context.open(workspace)
    try:
        with AnalyticsProjection.for_workspace(ctx.store, workspace) as analytics:
            assert analytics.status().position == 18  # two batches of 9 committed
            head = ctx.store.max_position()
            assert analytics.catch_up(batch_size=9) == head - 18
            rows = analytics.query("SELECT count(*), count(DISTINCT position) FROM events").rows
            assert rows == [[head, head]]
            resumed = dump(analytics)
            analytics.rebuild()
            assert dump(analytics) == resumed
    finally:
        ctx.close()


def test_two_processes_catching_up_at_once_take_turns_and_load_each_event_once(
    workspace: Path,
) -> None:
    record(workspace, "Draft scene 4", "consistency check", "prose review")
    script = (
        "import sys; from pathlib import Path; "
        "from controlroom.engine.context import Context; "
        "from controlroom.projections.analytics import AnalyticsProjection; "
        "ctx = Context.open(Path(sys.argv[1])); "
        "print(AnalyticsProjection.for_workspace(ctx.store, ctx.workspace.root)"
        ".catch_up(batch_size=5))"
    )
    both = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(workspace)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    loaded = [int(p.communicate(timeout=60)[0]) for p in both]
    ctx = Context.open(workspace)
    try:
        head = ctx.store.max_position()
        assert sum(loaded) == head  # one loaded everything, or they shared it
        with AnalyticsProjection.for_workspace(ctx.store, workspace) as analytics:
            rows = analytics.query("SELECT count(*), count(DISTINCT position) FROM events").rows
            assert rows == [[head, head]]
    finally:
        ctx.close()


@pytest.mark.e2e
def test_the_cli_answers_sql_reports_a_shell_and_exports(workspace: Path, tmp_path: Path) -> None:
    record(workspace, "Draft scene 4", "consistency check")

    def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CLI, "analytics", *args, "-w", str(workspace)],
            capture_output=True,
            text=True,
            input=stdin,
            timeout=60,
        )

    as_csv = cli("SELECT recipe_id, status FROM runs ORDER BY recipe_id", "--csv")
    assert as_csv.returncode == 0, as_csv.stderr
    assert as_csv.stdout.splitlines() == [
        "recipe_id,status",
        "analytical_consistency,failed",
        "creative_draft_scene,done",
    ]
    as_json = json.loads(cli("SELECT count(*) AS n FROM runs", "--json").stdout)
    assert as_json["columns"] == ["n"] and as_json["rows"] == [[2]]
    assert "slowest_steps" in cli("report").stdout
    report = cli("report", "dod_failures")
    assert report.returncode == 0 and "slot_field_equals" in report.stdout
    refused = cli("DROP TABLE events")
    assert refused.returncode == 64 and "read-only" in refused.stderr
    unknown = cli("report", "nope")
    assert unknown.returncode == 64 and "unknown report 'nope'" in unknown.stderr
    cut = cli("SELECT * FROM range(5)", "--max-rows", "2")
    assert cut.returncode == 0 and "first 2 rows" in cut.stderr

    shell = cli("shell", stdin="SELECT count(*)\n  AS n FROM runs;\nDELETE FROM runs;\n.quit\n")
    assert "n" in shell.stdout and "error: analytics queries are read-only" in shell.stdout

    exported = cli("export", "--parquet", str(tmp_path / "parquet"))
    assert exported.returncode == 0, exported.stderr
    assert (tmp_path / "parquet" / "events.parquet").stat().st_size > 0
    assert (tmp_path / "parquet" / "runs.parquet").exists()
    status = cli("status")
    assert status.returncode == 0 and "lag 0" in status.stdout


@pytest.mark.e2e
def test_http_reports_and_queries_need_the_token_and_are_typed(workspace: Path) -> None:
    record(workspace, "consistency check")
    with live_server(workspace, token="s3cret") as base:
        with httpx.Client(base_url=base, timeout=30) as anonymous:
            assert anonymous.get("/api/analytics/reports/run_outcomes").status_code == 401
            sql = {"sql": "SELECT 1"}
            assert anonymous.post("/api/analytics/query", json=sql).status_code == 401
        headers = {"Authorization": "Bearer s3cret"}
        with httpx.Client(base_url=base, timeout=30, headers=headers) as client:
            report = client.get("/api/analytics/reports/run_outcomes")
            assert report.status_code == 200, report.text
            assert report.json()["rows"][0][:3] == ["analytical_consistency", 1, 0]
            listed = client.get("/api/analytics/reports").json()
            assert {r["name"] for r in listed} == set(REPORTS)
            assert client.get("/api/analytics/reports/nope").status_code == 404

            answer = client.post(
                "/api/analytics/query",
                json={"sql": "SELECT status, count(*) AS n FROM runs GROUP BY ALL", "max_rows": 5},
            )
            assert answer.status_code == 200, answer.text
            assert answer.json()["rows"] == [["failed", 1]]
            refused = client.post("/api/analytics/query", json={"sql": "ATTACH 'x.db'"})
            assert refused.status_code == 400
            assert refused.json()["error"]["code"] == "refused_sql"
            assert "ATTACH" in refused.json()["error"]["message"]
            bad = client.post("/api/analytics/query", json={"sql": "SELECT 1", "max_rows": 0})
            assert bad.status_code == 400 and bad.json()["error"]["field"] == "max_rows"

            document = client.get("/openapi.json").json()
            query = document["paths"]["/api/analytics/query"]["post"]
            assert query["requestBody"]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/AnalyticsQueryBody"
            }
            assert "AnalyticsResult" in document["components"]["schemas"]
            assert "/api/analytics/reports/{name}" in document["paths"]


def test_a_store_written_by_release_0_1_is_analysed_like_any_other(tmp_path: Path) -> None:
    workspace = tmp_path / "legacy"
    (workspace / ".control-room").mkdir(parents=True)
    shutil.copy(FIXTURES / "store_v0_1" / "events.sqlite", workspace / ".control-room")
    ctx = Context.open(workspace)
    try:
        with AnalyticsProjection.for_workspace(ctx.store, workspace) as analytics:
            assert analytics.catch_up() == ctx.store.max_position()
            statuses = dict(map(tuple, analytics.query("SELECT run_id, status FROM runs").rows))
            assert statuses == {
                "run_37f33d5ebba3c308": "done",
                "run_a2bba5b868e9e337": "failed",
                "run_745917163ef65f86": "cancelled",
                "run_26583f907aa56940": "running",
            }
            kinds = analytics.query("SELECT DISTINCT kind FROM steps ORDER BY kind").rows
            assert kinds == [["agent"], ["tool"]]  # read from the phase: older events
            names = analytics.query(
                "SELECT DISTINCT aggregate_type, topic LIKE 'domain.%' FROM events ORDER BY 1"
            ).rows
            assert names == [["issue", True], ["run", True]]
    finally:
        ctx.close()
