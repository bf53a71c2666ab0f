"""`GET /metrics`: scraped by prometheus-client's own parser, its counters equal the analytics
figures (and the event log's) for the same mixed history, and survive a restart."""

from __future__ import annotations

import asyncio
import json
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from controlroom.api.app import create_app
from controlroom.domain.errors import ModelCallError, ModelError
from controlroom.domain.events import parse_topic
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.service import RunRequest, RunService
from controlroom.projections.analytics import AnalyticsProjection
from tests.analytics_contract import TASKS, context
from tests.fakes import RecordingModel
from tests.live import serve_app
from tests.test_ladder_e2e import LADDER

TOKEN = "metrics-test-token-0123456789"
Samples = dict[str, dict[tuple[tuple[str, str], ...], float]]


def _undrafted(workspace: Path) -> None:
    """Scene 4 not yet written: a draft of it runs its model calls (a written target fails
    before any)."""
    for scene in (workspace / "Story" / "Scenes").glob("SCN-04-*"):
        scene.unlink()


def record_mixed_history(workspace: Path) -> None:
    """Every recipe, failures, a retry, a cancel, a resume, and an escalation ladder."""
    ctx = Context.open(workspace)
    store = ctx.store
    try:
        service = RunService(context(workspace, store))
        for task in TASKS:
            _undrafted(workspace)
            asyncio.run(service.execute(service.start(RunRequest(task, {}))))
        _undrafted(workspace)
        broken = RunService(context(workspace, store, RecordingModel(2, ModelError("fell over"))))
        asyncio.run(broken.execute(broken.start(RunRequest("Draft scene 4", {}))))
        _undrafted(workspace)
        slow = RecordingModel(1, ModelCallError("rate_limited", "slow down", 429))
        retrying = RunService(context(workspace, store, slow))
        asyncio.run(retrying.execute(retrying.start(RunRequest("Draft scene 4", {}))))
        run = service.start(RunRequest("prose review", {}))
        service.cancel(run.id, "changed my mind")
        asyncio.run(service.execute(run))
        _undrafted(workspace)
        crashing = RunService(context(workspace, store, RecordingModel(3, KeyboardInterrupt())))
        run = crashing.start(RunRequest("Draft scene 4", {}))
        with pytest.raises(KeyboardInterrupt):
            asyncio.run(crashing.execute(run))
        asyncio.run(service.resume(run.id))
        Followers(store).catch_up()
    finally:
        ctx.close()
    _undrafted(workspace)
    (workspace / ".control-room" / "models.json").write_text(json.dumps(LADDER))
    ctx = Context.open(workspace)
    try:
        service = RunService(ctx)
        run = service.start(RunRequest("creative_draft_scene", {"scene_number": 4}))
        asyncio.run(service.execute(run))
        Followers(ctx.store).catch_up()
    finally:
        ctx.close()


@pytest.fixture
def history(workspace: Path) -> Iterator[Path]:
    record_mixed_history(workspace)
    yield workspace


def scrape(base: str, token: str | None = TOKEN) -> Samples:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = httpx.get(f"{base}/metrics", headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    samples: Samples = defaultdict(dict)
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[sample.name][tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def by(samples: Samples, name: str, *labels: str) -> dict[tuple[str, ...], float]:
    """A metric's values summed by some of its labels."""
    found: dict[tuple[str, ...], float] = defaultdict(float)
    for key, value in samples.get(name, {}).items():
        named = dict(key)
        found[tuple(named[label] for label in labels)] += value
    return dict(found)


def rows(analytics: AnalyticsProjection, sql: str) -> dict[tuple[Any, ...], float]:
    return {tuple(r[:-1]): float(r[-1]) for r in analytics.query(sql).rows}


def test_the_counters_equal_the_analytics_figures_and_survive_a_restart(
    history: Path,
) -> None:
    ctx = Context.open(history)
    try:
        with serve_app(create_app(ctx, TOKEN)) as base:
            unauthorised = httpx.get(f"{base}/metrics", timeout=30)
            assert unauthorised.status_code == 401
            first = scrape(base)
        with AnalyticsProjection.for_workspace(ctx.store, history) as analytics:
            analytics.catch_up()
            started = rows(analytics, "SELECT recipe_id, count(*) FROM runs GROUP BY ALL")
            finished = rows(
                analytics,
                "SELECT recipe_id, status, count(*) FROM runs WHERE status <> 'running' "
                "GROUP BY ALL",
            )
            usage = analytics.report("model_usage").rows
            retries = analytics.report("retries").rows
            steps = rows(
                analytics,
                "SELECT recipe_id, kind, count(*) FROM steps WHERE duration_ms IS NOT NULL "
                "GROUP BY ALL",
            )
            step_seconds = rows(
                analytics,
                "SELECT recipe_id, kind, sum(duration_ms) / 1000 FROM steps "
                "WHERE duration_ms IS NOT NULL GROUP BY ALL",
            )
            claims = analytics.query("SELECT sum(claims), sum(resumes) FROM runs").rows[0]
        events = ctx.store.recorder.select_notifications(start=0, limit=1_000_000)
    finally:
        ctx.close()

    assert by(first, "controlroom_runs_started_total", "recipe") == {
        (k[0],): v for k, v in started.items()
    }
    assert by(first, "controlroom_runs_finished_total", "recipe", "outcome") == finished
    outcomes = {k[1] for k in finished}
    assert {"done", "failed", "cancelled"} <= outcomes

    calls: dict[tuple[str, ...], float] = defaultdict(float)
    tokens_in: dict[tuple[str, ...], float] = defaultdict(float)
    tokens_out: dict[tuple[str, ...], float] = defaultdict(float)
    for role, provider, model, _tier, n, t_in, t_out, *_ in usage:
        key = (provider, model, role or "")
        calls[key] += n
        tokens_in[key] += t_in or 0
        tokens_out[key] += t_out or 0
    assert by(first, "controlroom_model_calls_total", "provider", "model", "role") == calls
    tokens = by(first, "controlroom_model_tokens_total", "provider", "model", "role", "type")
    assert {k[:3]: v for k, v in tokens.items() if k[3] == "input"} == tokens_in
    assert {k[:3]: v for k, v in tokens.items() if k[3] == "output"} == tokens_out
    assert sum(calls.values()) > 20

    failed = by(first, "controlroom_model_failed_attempts_total", "retried")
    assert failed.get(("true",), 0) == sum(r[6] for r in retries) > 0
    assert failed.get(("false",), 0) == sum(r[7] for r in retries)

    assert by(first, "controlroom_step_duration_seconds_count", "recipe", "kind") == steps
    sums = by(first, "controlroom_step_duration_seconds_sum", "recipe", "kind")
    assert sums.keys() == step_seconds.keys()
    for key, value in step_seconds.items():
        assert sums[key] == pytest.approx(value)
    buckets = by(first, "controlroom_step_duration_seconds_bucket", "recipe", "kind", "le")
    for (recipe, kind), count in steps.items():
        assert buckets[(recipe, kind, "+Inf")] == count
        assert buckets[(recipe, kind, "0.01")] <= buckets[(recipe, kind, "3600.0")] <= count

    # Escalations counted from the log itself: every flow decision that climbed a rung.
    rungs: Counter[str] = Counter()
    for note in events:
        if parse_topic(note.topic)[0] == "FlowDecided":
            rung = json.loads(note.state).get("rung")
            if rung:
                rungs[rung["kind"]] += 1
    assert rungs["escalate"] >= 1
    assert by(first, "controlroom_escalations_total", "rung") == {
        (k,): float(v) for k, v in rungs.items()
    }
    assert sum(first["controlroom_run_claims_total"].values()) == claims[0]
    assert sum(first["controlroom_run_resumes_total"].values()) == claims[1] >= 1

    lags = by(first, "controlroom_projection_lag_events", "projection")
    assert {"runs", "issues", "analytics"} <= {k[0] for k in lags}
    assert first["controlroom_sse_clients"] == {(): 0.0}
    assert "controlroom_queue_depth" in first
    assert "process_cpu_seconds_total" in first or "python_info" in first

    # A new server over the same store: the same counters (nothing was counted in memory).
    ctx = Context.open(history)
    try:
        with serve_app(create_app(ctx, TOKEN)) as base:
            second = scrape(base)
    finally:
        ctx.close()
    for name in (
        "controlroom_runs_started_total",
        "controlroom_runs_finished_total",
        "controlroom_model_calls_total",
        "controlroom_model_tokens_total",
        "controlroom_step_duration_seconds_bucket",
        "controlroom_escalations_total",
    ):
        assert second[name] == first[name], name


def test_metrics_may_be_opened_to_a_scraper_without_the_token(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTROLROOM_METRICS_OPEN", "1")
    ctx = Context.open(workspace)
    try:
        with serve_app(create_app(ctx, TOKEN)) as base:
            samples = scrape(base, token=None)
            assert samples["controlroom_runs_started_total"] == {}
            # Everything else still needs the token.
            assert httpx.get(f"{base}/api/runs", timeout=30).status_code == 401
    finally:
        ctx.close()
