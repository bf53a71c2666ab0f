"""The traces projection, with the real OpenTelemetry SDK and an in-memory exporter: every run
is one trace with its steps and model calls (the analytics' count), GenAI attributes, checks
and rungs as events, child runs under their parent's step; a failing receiver delays and
loses nothing; a rebuild or a second exporter sends the very same spans."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.service import RunRequest, RunService
from controlroom.engine.tree_driver import drive_tree
from controlroom.projections.analytics import AnalyticsProjection
from controlroom.projections.traces_config import TelemetryConfig
from controlroom.projections.traces_export import TraceExport, export_for, export_once
from controlroom.projections.views import Views
from tests.postgres import postgres_store_spec as postgres_store_spec
from tests.test_metrics import record_mixed_history

CONFIG = TelemetryConfig.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})


class FlakyExporter(InMemorySpanExporter):
    """Refuses the first `failures` exports (a receiver that is down), then takes them."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.calls = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.calls += 1
        if self.failures > 0:
            self.failures -= 1
            return SpanExportResult.FAILURE
        return super().export(spans)


@pytest.fixture
def history(workspace: Path) -> Iterator[Path]:
    ctx = Context.open(workspace)
    try:  # a tree (an orchestrator whose stages are child runs), before the ladder's models
        service = RunService(ctx)
        run = service.start(
            RunRequest("chapter_revision", {"scene_number": 1}, is_recipe_id=True), owner="t"
        )
        run = asyncio.run(service.execute(run))
        followers = Followers(ctx.store, Views.for_store(ctx.store, ctx.workspace.root))
        asyncio.run(drive_tree(ctx, run, followers, "t"))
        followers.catch_up()
    finally:
        ctx.close()
    record_mixed_history(workspace)
    yield workspace


def key(span: ReadableSpan) -> tuple[Any, ...]:
    """Everything a receiver stores of a span."""
    assert span.context is not None
    return (
        span.context.trace_id,
        span.context.span_id,
        span.parent.span_id if span.parent else None,
        span.name,
        span.start_time,
        span.end_time,
        tuple(sorted((k, str(v)) for k, v in (span.attributes or {}).items())),
        tuple((e.name, e.timestamp, tuple(sorted(e.attributes.items()))) for e in span.events),
        tuple(link.context.span_id for link in span.links),
        span.status.status_code,
    )


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def test_every_run_is_one_trace_of_its_steps_and_model_calls(history: Path) -> None:
    ctx = Context.open(history)
    memory = InMemorySpanExporter()
    try:
        with TraceExport(ctx.store, None, CONFIG, memory) as export:
            sent = export.export()
            assert export.status().lag == 0
        spans = list(memory.get_finished_spans())
        assert sent == len(spans)
        views = Views.for_store(ctx.store, history)
        views.catch_up()
        runs = views.query.runs()
        with AnalyticsProjection(ctx.store, history / "a.duckdb") as analytics:
            analytics.catch_up()
            counted = analytics.query("SELECT run_id, count(*) FROM agent_calls GROUP BY 1")
            calls = {str(r[0]): r[1] for r in counted.rows}
            steps: dict[str, list[str]] = {r.run_id: [] for r in runs}
            ended_steps = analytics.query(
                "SELECT run_id, instance_id FROM steps "
                "WHERE status IN ('done', 'failed', 'cancelled')"
            )
            for run_id, instance in ended_steps.rows:
                steps[str(run_id)].append(str(instance))
        views.close()
        notes = ctx.store.recorder.select_notifications(start=0, limit=1_000_000)
        started_children = sum(1 for n in notes if n.topic.endswith("ChildRunStarted"))
    finally:
        ctx.close()

    assert len({(s.context.trace_id, s.context.span_id) for s in spans if s.context}) == len(spans)
    by_id = {s.context.span_id: s for s in spans if s.context}
    workflows = [
        s for s in spans
        if attrs(s).get("gen_ai.operation.name") == "invoke_workflow"
        and s.name.startswith("invoke_workflow")
    ]  # fmt: skip
    ended = [r for r in runs if r.status in ("done", "failed", "cancelled")]
    assert Counter(attrs(s)["controlroom.run.id"] for s in workflows) == Counter(
        r.run_id for r in ended
    )
    assert {r.status for r in runs} - {r.status for r in ended} == {"running"}  # waiting
    for run in ended:
        (span,) = [s for s in workflows if attrs(s)["controlroom.run.id"] == run.run_id]
        assert attrs(span)["controlroom.run.status"] == run.status
        assert attrs(span)["gen_ai.workflow.name"] == run.recipe_id
        assert (span.status.is_ok) == (run.status == "done")
        assert span.start_time is not None and span.end_time is not None
        assert span.start_time <= span.end_time
        trace = span.context.trace_id  # type: ignore[union-attr]
        own = [s for s in spans if attrs(s).get("controlroom.run.id") == run.run_id]
        assert {s.context.trace_id for s in own} == {trace}  # type: ignore[union-attr]
        # Each finished step instance once, under the run (or a retried run's segment).
        step_spans = [s for s in own if "controlroom.step.instance_id" in attrs(s)]
        assert sorted(attrs(s)["controlroom.step.instance_id"] for s in step_spans) == sorted(
            steps[run.run_id]
        ), run.run_id
        for step in step_spans:
            assert step.parent is not None and step.parent.span_id in by_id
        # Each model call once: as many as analytics counts.
        chats = [s for s in spans if attrs(s).get("controlroom.aggregate.id") == run.run_id]
        assert len(chats) == calls.get(run.run_id, 0), run.run_id
        for chat in chats:
            a = attrs(chat)
            assert a["gen_ai.operation.name"] == "chat"
            assert a["gen_ai.provider.name"] and a["gen_ai.request.model"]
            assert isinstance(a["gen_ai.usage.input_tokens"], int)
            assert isinstance(a["gen_ai.usage.output_tokens"], int)
            assert a["gen_ai.response.finish_reasons"] == ("stop",)
            assert "gen_ai.input_messages" not in a and "gen_ai.output_messages" not in a
            assert chat.parent is not None and chat.parent.span_id in by_id
            assert by_id[chat.parent.span_id].context.trace_id == trace  # type: ignore[union-attr]
        # The run's own usage once, its tree's beside it.
        own_in = sum(attrs(c)["gen_ai.usage.input_tokens"] for c in chats)
        assert attrs(span)["controlroom.usage.input_tokens"] == own_in
        assert attrs(span)["gen_ai.aggregated_usage.input_tokens"] >= own_in

    events = Counter(e.name for s in spans for e in s.events)
    assert events["gen_ai.evaluation.result"] > 0  # DoD checks and gate verdicts
    assert events["controlroom.escalation.rung"] > 0  # the ladder
    assert events["controlroom.model.attempt_failed"] > 0  # the retried model call
    assert events["controlroom.flow.decision"] + events["controlroom.escalation.rung"] > 0

    # The tree: each child run's span under its parent's child_run step, in one trace,
    # linked from that step; the parent's aggregated usage counts its children's.
    root = next(s for s in workflows if attrs(s)["gen_ai.workflow.name"] == "chapter_revision")
    children = [s for s in workflows if attrs(s).get("controlroom.parent_run.id")]
    assert len(children) == started_children >= 2
    for child in children:
        assert child.parent is not None
        step = by_id[child.parent.span_id]
        assert attrs(step)["controlroom.step.kind"] == "child_run"
        assert child.context.span_id in {link.context.span_id for link in step.links}  # type: ignore[union-attr]
        assert child.context.trace_id == root.context.trace_id  # type: ignore[union-attr]
    tree = sum(attrs(c)["gen_ai.aggregated_usage.input_tokens"] for c in children)
    assert attrs(root)["gen_ai.aggregated_usage.input_tokens"] == tree + attrs(root).get(
        "controlroom.usage.input_tokens", 0
    )


def test_a_receiver_that_is_down_delays_export_loses_nothing_and_ids_never_change(
    history: Path, tmp_path: Path
) -> None:
    ctx = Context.open(history)
    try:
        reference = InMemorySpanExporter()
        with TraceExport(ctx.store, None, CONFIG, reference) as export:
            export.export()
        expected = sorted(map(key, reference.get_finished_spans()))

        flaky = FlakyExporter(failures=2)
        where = tmp_path / "traces.sqlite"
        with TraceExport(ctx.store, where, CONFIG, flaky) as export:
            assert export.catch_up(force=True) == 0
            status = export.status()
            assert status.position == 0 and status.lag == status.head > 0
            state = export.state()
            assert state["failures"] == 1 and "did not take" in state["last_error"]
            calls = flaky.calls
            assert export.catch_up() == 0 and flaky.calls == calls  # pausing: not tried
            assert export.catch_up(force=True) == 0  # still down
            assert export.state()["failures"] == 2
            assert export.export(batch_size=100) == len(expected)  # back: the backlog drains
            assert export.status().lag == 0 and export.state()["failures"] == 0
        assert sorted(map(key, flaky.get_finished_spans())) == expected

        # A new process, and a rebuild: the same spans, the same ids.
        again = InMemorySpanExporter()
        with TraceExport(ctx.store, where, CONFIG, again) as export:
            assert export.export() == 0  # nothing new
            assert export.rebuild() == len(expected)
        assert sorted(map(key, again.get_finished_spans())) == expected
    finally:
        ctx.close()


def test_prompts_and_replies_only_when_opted_in(history: Path) -> None:
    opted_in = TelemetryConfig.from_env(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
        }
    )
    ctx = Context.open(history)
    memory = InMemorySpanExporter()
    try:
        with TraceExport(ctx.store, None, opted_in, memory) as export:
            export.export()
    finally:
        ctx.close()
    chats = [s for s in memory.get_finished_spans() if s.name.startswith("chat ")]
    with_reply = [s for s in chats if "gen_ai.output_messages" in attrs(s)]
    with_prompt = [s for s in chats if "gen_ai.input_messages" in attrs(s)]
    assert with_reply and with_prompt
    assert '"role":"assistant"' in attrs(with_reply[0])["gen_ai.output_messages"]
    # The requests name their prompts by hash (domain/texts.py): the spans carry the text.
    for span in with_prompt:
        shown = attrs(span)
        assert "content_sha256" not in shown["gen_ai.input_messages"]
        assert "null" not in (shown["gen_ai.input_messages"], shown["input.value"])
        assert len(str(shown["gen_ai.system_instructions"])) > 256


def test_nothing_is_exported_or_kept_unless_configured(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    assert not TelemetryConfig.from_env().configured
    disabled = TelemetryConfig.from_env(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"}
    )
    assert not disabled.configured and disabled.disabled
    ctx = Context.open(workspace)
    try:
        service = RunService(ctx)
        asyncio.run(service.execute(service.start(RunRequest("validate scene", {}))))
        assert export_for(ctx.store) is None
        assert export_once(ctx.store) == 0
        assert not (workspace / ".control-room" / "traces.sqlite").exists()
    finally:
        ctx.close()


def test_ids_are_derived_not_drawn() -> None:
    from controlroom.projections.traces import span_id_of, trace_id_of

    assert trace_id_of("tr_1") == trace_id_of("tr_1") != trace_id_of("tr_2")
    assert 0 < span_id_of("run_1", "run") < 2**64
    assert 0 < trace_id_of("tr_1") < 2**128


def test_on_postgresql_the_export_keeps_its_position_in_the_logs_database(
    workspace: Path, postgres_store_spec: str
) -> None:
    from controlroom.eventstore.config import store_env
    from controlroom.eventstore.store import EventStore

    store = EventStore(env=store_env(workspace, postgres_store_spec))
    try:
        ctx = Context.open(workspace, store=store)
        service = RunService(ctx)
        for task in ("validate scene", "consistency check"):
            asyncio.run(service.execute(service.start(RunRequest(task, {}))))
        with TraceExport.for_store(store, CONFIG) as export:
            export._exporter = FlakyExporter(failures=1)  # down
            assert export.catch_up(force=True) == 0
            assert export.status().lag > 0 and export.state()["failures"] == 1
        taken = InMemorySpanExporter()
        with TraceExport.for_store(store, CONFIG) as export:  # another process, later
            export._exporter = taken
            sent = export.export()
            assert sent > 0 and export.status().lag == 0
            assert export.state()["exported_spans"] == sent
        reference = InMemorySpanExporter()
        with TraceExport(store, None, CONFIG, reference) as export:
            export.export()
        assert sorted(map(key, taken.get_finished_spans())) == sorted(
            map(key, reference.get_finished_spans())
        )
    finally:
        store.close()
