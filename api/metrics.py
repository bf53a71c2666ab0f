"""`GET /metrics`: the Prometheus text format, for the tools operators already run.

Every counter is read from the analytics projection (`projections/analytics_sql.py`), the
same tables and views the reports read, so a counter equals the analytics figure for the
same history by construction, and survives a restart, a second server or a rebuild: nothing
is counted in this process's memory. (Counters derived from the log only ever grow, as
Prometheus expects; a rebuild of the analytics file gives the same numbers again.) Gauges
say how things are now: runs by status (the queue's depth: `pending`), each projection's
lag, the server's open SSE streams.

The endpoint needs the API's bearer token like every other route, unless
`CONTROLROOM_METRICS_OPEN=1` opens it (a scraper on a trusted network that cannot send a
token). Rendering uses the official `prometheus-client`, with the process's own metrics
(CPU, memory, open files) beside ours.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Final

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import CollectorRegistry
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from controlroom.api import sse
from controlroom.api.errors import HttpError
from controlroom.api.faults import RETRY_AFTER_S
from controlroom.projections.analytics_pool import AnalyticsBusyError
from controlroom.projections.analytics_query import AnalyticsQueryError, QueryLimits

if TYPE_CHECKING:
    from controlroom.api.server import Server
    from controlroom.projections.models import ProjectionStatus

#: `1` (or true/yes/on): `/metrics` is served without the bearer token.
OPEN_VAR: Final = "CONTROLROOM_METRICS_OPEN"
PATH: Final = "/metrics"
PREFIX: Final = "controlroom"

#: Step durations' histogram buckets, in seconds (a tool step takes milliseconds, a model's
#: step seconds to minutes, a step waiting for a person or child runs hours).
STEP_BUCKETS: Final = (
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 3600.0,
)  # fmt: skip

_BUCKET_ROWS = ", ".join(f"({b!r})" for b in STEP_BUCKETS)

#: One query over the analytics views and tables, every family's rows together (one turn at
#: the file): (family, four label values, value). Missing labels read as ''.
METRICS_SQL: Final = f"""
SELECT 'runs_started' AS family, coalesce(recipe_id, '') AS a, '' AS b, '' AS c, '' AS d,
    CAST(count(*) AS DOUBLE) AS value
FROM runs WHERE started_at IS NOT NULL GROUP BY ALL
UNION ALL
SELECT 'runs_finished', coalesce(recipe_id, ''), status, '', '', count(*)
FROM runs WHERE status <> 'running' GROUP BY ALL
UNION ALL
SELECT 'run_resumes', coalesce(recipe_id, ''), '', '', '', sum(resumes)
FROM runs GROUP BY ALL
UNION ALL
SELECT 'run_claims', coalesce(recipe_id, ''), '', '', '', sum(claims)
FROM runs GROUP BY ALL
UNION ALL
SELECT 'dod_results', coalesce(r.recipe_id, ''), CAST(d.passed AS VARCHAR), '', '', count(*)
FROM dod_results d LEFT JOIN runs r USING (run_id) GROUP BY ALL
UNION ALL
SELECT 'step_bucket', coalesce(s.recipe_id, ''), coalesce(s.kind, ''), CAST(b.le AS VARCHAR),
    '', count(*) FILTER (WHERE s.duration_ms <= b.le * 1000)
FROM steps s, (VALUES {_BUCKET_ROWS}) b(le) WHERE s.duration_ms IS NOT NULL GROUP BY ALL
UNION ALL
SELECT 'step_count', coalesce(recipe_id, ''), coalesce(kind, ''), '', '', count(*)
FROM steps WHERE duration_ms IS NOT NULL GROUP BY ALL
UNION ALL
SELECT 'step_sum', coalesce(recipe_id, ''), coalesce(kind, ''), '', '', sum(duration_ms) / 1000
FROM steps WHERE duration_ms IS NOT NULL GROUP BY ALL
UNION ALL
SELECT 'model_calls', coalesce(provider, ''), coalesce(model, ''),
    coalesce(agent_archetype, ''), '', count(*)
FROM agent_calls GROUP BY ALL
UNION ALL
SELECT 'model_tokens', coalesce(provider, ''), coalesce(model, ''),
    coalesce(agent_archetype, ''), 'input', coalesce(sum(input_tokens), 0)
FROM agent_calls GROUP BY ALL
UNION ALL
SELECT 'model_tokens', coalesce(provider, ''), coalesce(model, ''),
    coalesce(agent_archetype, ''), 'output', coalesce(sum(output_tokens), 0)
FROM agent_calls GROUP BY ALL
UNION ALL
SELECT 'model_cost', coalesce(provider, ''), coalesce(model, ''),
    coalesce(agent_archetype, ''), '', coalesce(sum(cost_usd), 0)
FROM agent_calls GROUP BY ALL
UNION ALL
SELECT 'model_failed_attempts', coalesce(provider, ''), coalesce(model, ''), coalesce(kind, ''),
    CASE WHEN will_retry THEN 'true' ELSE 'false' END, count(*)
FROM model_attempts GROUP BY ALL
UNION ALL
SELECT 'escalations', coalesce(r.recipe_id, ''), coalesce(e.payload->>'$.rung.kind', ''), '', '',
    count(*)
FROM events e LEFT JOIN runs r ON r.run_id = e.aggregate_id
WHERE e.event_type = 'FlowDecided' AND json_type(e.payload->'$.rung') = 'OBJECT' GROUP BY ALL
"""

#: family → (metric name, help, label names, kind).
_FAMILIES: Final = {
    "runs_started": ("runs_started", "Runs started, by recipe", ("recipe",)),
    "runs_finished": (
        "runs_finished",
        "Runs that ended, by recipe and outcome (done, failed, cancelled)",
        ("recipe", "outcome"),
    ),
    "run_resumes": ("run_resumes", "Runs resumed after their process stopped", ("recipe",)),
    "run_claims": (
        "run_claims",
        "Claims of runs by a process (a worker or server taking a run to advance it)",
        ("recipe",),
    ),
    "dod_results": (
        "dod_results",
        "Definition-of-done verdicts, by recipe and whether they passed",
        ("recipe", "passed"),
    ),
    "model_calls": (
        "model_calls",
        "Model calls (each reply once, where it was paid: a fork's copies of its source's "
        "replies are not counted again)",
        ("provider", "model", "role"),
    ),
    "model_tokens": (
        "model_tokens",
        "Tokens of model calls, by type (input, output)",
        ("provider", "model", "role", "type"),
    ),
    "model_cost": (
        "model_cost_usd",
        "What model calls cost, in US dollars (priced models only)",
        ("provider", "model", "role"),
    ),
    "model_failed_attempts": (
        "model_failed_attempts",
        "Failed attempts at a model call; retried=true: asked again (a retry)",
        ("provider", "model", "kind", "retried"),
    ),
    "escalations": (
        "escalations",
        "Escalation-ladder rungs climbed (rollback, escalate, consult, triage, human, ...)",
        ("recipe", "rung"),
    ),
}

Row = tuple[str, str, str, str, str, float]


def is_open(env: dict[str, str] | None = None) -> bool:
    value = (env if env is not None else os.environ).get(OPEN_VAR, "").strip().lower()
    return value in ("1", "true", "yes", "on")


def counter_families(rows: Iterable[Row]) -> list[Metric]:
    """The analytics rows as Prometheus counters and the step-duration histogram."""
    counters: dict[str, CounterMetricFamily] = {}
    buckets: dict[tuple[str, str], dict[float, float]] = defaultdict(dict)
    counts: dict[tuple[str, str], float] = {}
    sums: dict[tuple[str, str], float] = {}
    for family, a, b, c, d, value in rows:
        if family == "step_bucket":
            buckets[(a, b)][float(c)] = float(value)
        elif family == "step_count":
            counts[(a, b)] = float(value)
        elif family == "step_sum":
            sums[(a, b)] = float(value or 0.0)
        elif family in _FAMILIES:
            name, help_text, labels = _FAMILIES[family]
            metric = counters.get(family)
            if metric is None:
                metric = CounterMetricFamily(f"{PREFIX}_{name}", help_text, labels=labels)
                counters[family] = metric
            metric.add_metric([a, b, c, d][: len(labels)], float(value or 0.0))
    # Every family is listed, also before its first sample: a dashboard finds its series.
    for family, (name, help_text, labels) in _FAMILIES.items():
        counters.setdefault(
            family, CounterMetricFamily(f"{PREFIX}_{name}", help_text, labels=labels)
        )
    histogram = HistogramMetricFamily(
        f"{PREFIX}_step_duration_seconds",
        "Duration of finished step instances, by recipe and step kind",
        labels=("recipe", "kind"),
    )
    for key in sorted(counts):
        found = buckets.get(key, {})
        series = [(_le(b), found.get(b, 0.0)) for b in STEP_BUCKETS]
        series.append(("+Inf", counts[key]))
        histogram.add_metric(list(key), series, sum_value=sums.get(key, 0.0))
    return [*counters.values(), histogram]


def _le(bound: float) -> str:
    return repr(float(bound))


def gauge_families(
    runs_by_status: dict[str, int], lags: Iterable[ProjectionStatus], sse_clients: int
) -> list[Metric]:
    runs = GaugeMetricFamily(
        f"{PREFIX}_runs", "Runs by status now (the runs view)", labels=("status",)
    )
    for status, count in sorted(runs_by_status.items()):
        runs.add_metric([status], count)
    queue = GaugeMetricFamily(
        f"{PREFIX}_queue_depth",
        "Runs queued for a worker (pending: started over HTTP with --no-execute, or released)",
        value=runs_by_status.get("pending", 0),
    )
    lag = GaugeMetricFamily(
        f"{PREFIX}_projection_lag_events",
        "Events recorded after a projection's position (traces: not yet exported)",
        labels=("projection",),
    )
    head = GaugeMetricFamily(f"{PREFIX}_log_head_position", "The event log's last position")
    heads = []
    for projection in lags:
        lag.add_metric([projection.name], projection.lag)
        heads.append(projection.head)
    head.add_metric([], max(heads, default=0))
    clients = GaugeMetricFamily(
        f"{PREFIX}_sse_clients", "Live SSE streams open on this server", value=sse_clients
    )
    return [runs, queue, lag, head, clients]


class _Families:
    """A registry-like source of ready families, for `generate_latest`."""

    def __init__(self, families: list[Metric], process: CollectorRegistry) -> None:
        self._families, self._process = families, process

    def collect(self) -> Iterator[Metric]:
        yield from self._families
        yield from self._process.collect()


def _process_registry() -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


_PROCESS = _process_registry()


def _now_gauges(server: Server) -> list[Metric]:
    """What is true now: runs by status, every projection's lag (in a thread)."""
    views = server.views
    views.catch_up()
    with views.lock:
        rows = views.conn.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall()
    statuses: list[ProjectionStatus] = [*views.status()]
    statuses.append(server.analytics.status())
    telemetry = getattr(server, "traces", None)
    if telemetry is not None:
        statuses.extend(telemetry.statuses())
    return gauge_families({str(s): int(n) for s, n in rows}, statuses, sse.OPEN_STREAMS)


async def metrics(request: Request) -> Response:
    server: Server = request.app.state.server
    try:
        result = await server.analytics.ask(METRICS_SQL, QueryLimits(max_rows=1_000_000))
    except (AnalyticsBusyError, AnalyticsQueryError) as exc:
        # Busy, or a long catch-up past the query's time: the next scrape comes soon.
        headers = {"Retry-After": str(RETRY_AFTER_S)}
        raise HttpError(503, "analytics_busy", str(exc), headers=headers) from None
    rows: list[Any] = result.rows
    families = counter_families(tuple(row) for row in rows)
    families.extend(await run_in_threadpool(_now_gauges, server))
    body = generate_latest(_Families(families, _PROCESS))
    return Response(body, media_type=CONTENT_TYPE_LATEST)
