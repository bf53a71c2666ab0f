"""The traces projection: every run as an OpenTelemetry trace, built from its events alone.

A run is a trace: its workflow span (`invoke_workflow {recipe}`) from `RunStarted` to its
terminal event, a span for each step instance (`invoke_agent {role}`, `execute_tool {tool}`,
or `{kind} {step}` for the others), and a span for each model call (`chat {model}`) that
follows the OpenTelemetry GenAI semantic conventions: `gen_ai.operation.name`,
`gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.usage.input_tokens` /
`output_tokens`, `gen_ai.response.finish_reasons`, and, only when
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`, the prompt and the reply
(`gen_ai.input_messages`, `gen_ai.output_messages`). DoD checks, gate verdicts, sentinel and
item checks are `gen_ai.evaluation.result` events; failed model attempts, rejected replies,
flow decisions and escalation rungs are span events. A child run is a span under its parent's
step (runs of one tree share the domain's trace id), with a link from that step; a plan's
runs link to the plan's span; the Chief's calls for a plan and a conference's calls are
traces of their own.

Spans are built when they end, from the recorded times (a model call's start is its reply's
time less its latency), so each is emitted once, complete. Trace and span ids are derived
from the run's trace id, the aggregate's id and the event's version: a rebuild, a resumed
run or a second exporter sends the same ids again, never different ones, and a receiver that
keys spans by id (Phoenix does) keeps one of each.

The fold keeps, per aggregate, what its open spans need (`trace_state`: open steps, their
events, the run's usage); finished runs keep a small row (their trace, their tree's usage:
a parent's `gen_ai.aggregated_usage.*` adds its children's, while its own calls carry
`gen_ai.usage.*` once). The spans of a batch go to `sink` before the batch commits: a sink
that fails rolls the batch back, so the position does not move and nothing is lost.

Nothing here imports OpenTelemetry: `projections/traces_export.py` turns these spans into
OTLP.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

import orjson

# Every bundled event type is registered before any is read: which events are model calls
# (`ModelReplyEvent`s) must not depend on what else this process happened to import, or
# two exporters would build different spans from the same log.
from controlroom.domain import conference as _conference  # noqa: F401
from controlroom.domain import flow_events as _flow_events  # noqa: F401
from controlroom.domain import issue as _issue  # noqa: F401
from controlroom.domain import ladder as _ladder  # noqa: F401
from controlroom.domain import model_calls as _model_calls  # noqa: F401
from controlroom.domain import packet_steps as _packet_steps  # noqa: F401
from controlroom.domain import plan_events as _plan_events  # noqa: F401
from controlroom.domain import recipe as _recipe  # noqa: F401  (its step kinds' events)
from controlroom.domain import run_events as _run_events  # noqa: F401
from controlroom.domain.events import EVENT_TYPES, ModelReplyEvent, UnknownEventTypeError
from controlroom.domain.texts import TextMissingError, join_body, referred_texts
from controlroom.projections.base import Projection, Recorded
from controlroom.projections.db import Db
from controlroom.projections.traces_config import CAPTURE_CONTENT_VAR as CAPTURE_CONTENT_VAR

log = logging.getLogger("controlroom.traces")

NAME = "traces"
#: The standard switch of GenAI instrumentations for prompt and reply content.

#: Longest text attribute (a prompt, a reply, an error) sent; longer ones are cut.
MAX_TEXT = 16_000
_IDS_PER_QUERY = 500

Attributes = dict[str, Any]


@dataclass
class SpanEvent:
    name: str
    time_ns: int
    attributes: Attributes = field(default_factory=dict)


@dataclass
class SpanLink:
    trace_id: int
    span_id: int
    attributes: Attributes = field(default_factory=dict)


@dataclass
class Span:
    """One finished span, ready for any exporter."""

    trace_id: int
    span_id: int
    parent_id: int | None
    name: str
    #: OpenTelemetry's SpanKind by name: INTERNAL or CLIENT.
    kind: str
    start_ns: int
    end_ns: int
    attributes: Attributes
    events: list[SpanEvent] = field(default_factory=list)
    links: list[SpanLink] = field(default_factory=list)
    #: None: OK; else the error's description (status ERROR).
    error: str | None = None


Sink = Callable[[list[Span]], None]


# -- ids ---------------------------------------------------------------------------------------


def _digest(*parts: str) -> bytes:
    return hashlib.sha256(":".join(("controlroom", *parts)).encode()).digest()


def trace_id_of(key: str) -> int:
    """A 128-bit trace id from the domain's trace id (or an aggregate's id); never 0."""
    return int.from_bytes(_digest("trace", key)[:16], "big") or 1


def span_id_of(aggregate_id: str, key: str) -> int:
    """A 64-bit span id from the aggregate it belongs to and a key unique within it."""
    return int.from_bytes(_digest("span", aggregate_id, key)[:8], "big") or 1


def time_ns(value: str | datetime) -> int:
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def _text(value: object) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    if len(text) > MAX_TEXT:
        return text[:MAX_TEXT] + f"… [{len(text) - MAX_TEXT} more chars]"
    return text


def _clean(attributes: Attributes) -> Attributes:
    """OpenTelemetry takes str, bool, int, float and lists of one of them; never None."""
    return {k: v for k, v in attributes.items() if v is not None}


# -- the events a model call is counted from (as analytics' agent_calls counts them) ----------


def is_counted_call(name: str, data: dict[str, Any]) -> bool:
    """Whether this event records a model call of its own (the rules of
    `analytics_sql.LOADS`: a checked loop's repeat and a loop's last item are not)."""
    if name == "AgentReplyRejected":
        return True
    try:
        cls = EVENT_TYPES.get(name)
    except UnknownEventTypeError:
        return False
    if not issubclass(cls, ModelReplyEvent):
        return False
    if name == "AgentResponded":
        return not data.get("repeats_items", False)
    if name == "ForEachItemCompleted":
        checked = bool(data.get("checked", False))
        return not checked and int(data.get("index", 0)) < int(data.get("total", 0)) - 1
    return True


@dataclass(frozen=True)
class CallSummary:
    role: str
    provider: str
    model: str
    tier: str
    input_tokens: int
    output_tokens: int
    latency_ms: float
    cost_usd: float | None
    attempts: int
    estimated: bool


def call_summary(name: str, data: dict[str, Any]) -> CallSummary:
    """What any model-call event says of its call (the fields its class's `call()` reads)."""
    if name == "AgentReplyRejected":
        usage = data.get("usage") or {}
        return CallSummary(
            "",
            str(data.get("provider", "")),
            str(data.get("model", "")),
            "",
            int(usage.get("input_tokens", 0)),
            int(usage.get("output_tokens", 0)),
            0.0,
            data.get("cost_usd"),
            1,
            bool(usage.get("estimated", False)),
        )
    event = EVENT_TYPES.get(name).model_validate(data)
    assert isinstance(event, ModelReplyEvent)
    facts = event.call()
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    estimated = bool((usage or {}).get("estimated", False)) or facts.provider == "offline"
    return CallSummary(
        facts.role,
        facts.provider,
        facts.model,
        facts.tier,
        facts.input_tokens,
        facts.output_tokens,
        facts.latency_ms,
        facts.cost_usd,
        facts.attempts,
        estimated,
    )


# -- the fold ------------------------------------------------------------------------------------


_TERMINAL = {"RunCompleted": "done", "RunFailed": "failed", "RunCancelled": "cancelled"}
_STEP_END = ("StepCompleted", "StepFailed")


#: A stored text by its sha256, None when absent (`EventStore.text`).
TextLookup = Callable[[str], str | None]


class TracesProjection(Projection):
    name: ClassVar[str] = NAME
    #: Every event: a new kind of model call is a span without a change here.
    topics: ClassVar[frozenset[str] | None] = None
    version: ClassVar[int] = 1
    tables: ClassVar[tuple[str, ...]] = ("trace_state", "trace_totals")
    schema: ClassVar[tuple[str, ...]] = (
        """CREATE TABLE IF NOT EXISTS trace_state (
            aggregate_id TEXT PRIMARY KEY, state BLOB NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS trace_totals (
            run_id TEXT PRIMARY KEY, input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL, cost_usd DOUBLE PRECISION NOT NULL,
            calls INTEGER NOT NULL)""",
    )

    def __init__(
        self, sink: Sink, *, capture_content: bool = False, texts: TextLookup | None = None
    ) -> None:
        self.sink = sink
        self.capture_content = capture_content
        #: The store's texts by sha256: a captured request's prompts, which its event
        #: names by hash (domain/texts.py).
        self.texts = texts

    def apply(self, conn: Db, batch: Sequence[Recorded]) -> None:
        wanted = {i.originator_id for i in batch if _wanted(i.type_name)}
        if not wanted:
            return
        states = _load_states(conn, wanted)
        fold = _Fold(conn, states, self.capture_content, self.texts)
        for item in batch:
            if item.originator_id in wanted and _wanted(item.type_name):
                fold.apply(item)
        conn.executemany(
            conn.upsert("trace_state", ("aggregate_id", "state"), ("aggregate_id",)),
            [(key, orjson.dumps(state)) for key, state in states.items() if state is not None],
        )
        if fold.totals:
            conn.executemany(
                conn.upsert(
                    "trace_totals",
                    ("run_id", "input_tokens", "output_tokens", "cost_usd", "calls"),
                    ("run_id",),
                ),
                [(k, *v) for k, v in fold.totals.items()],
            )
        if fold.spans:
            self.sink(fold.spans)  # raises when not delivered: the batch rolls back


_HANDLED = frozenset(
    {
        "RunStarted",
        "StepStarted",
        "StepCompleted",
        "StepFailed",
        "StepWaiting",
        "HumanAnswered",
        "ModelAttemptFailed",
        "AgentReplyRejected",
        "FlowDecided",
        "TriageDecided",
        "DodChecked",
        "ReceiptIssued",
        "ChildRunStarted",
        "ChildRunEnded",
        "RunRetried",
        "RunResumed",
        "ModelRequestRecorded",
        "StopHook",
        "PlanCreated",
        "PlanFinished",
        "TaskRunRequested",
        "RoundOpened",
        "RoundClosed",
        "RoundFailed",
        "SlotWritten",
        *_TERMINAL,
    }
)


#: Model calls that are also a check's verdict (an evaluation event on their step).
_CALLS_WITH_VERDICTS = frozenset({"AgentReplyRejected", "SentinelVerified", "ForEachItemChecked"})
#: The trace a call belongs to when its aggregate's first event is not seen (yet).
_CALL_AGGREGATES = {"ModelCalled": "plan", "AgentCallRecorded": "round"}


def _wanted(name: str) -> bool:
    if name in _HANDLED:
        return True
    try:
        return issubclass(EVENT_TYPES.get(name), ModelReplyEvent)
    except UnknownEventTypeError:
        return False


def _load_states(conn: Db, ids: set[str]) -> dict[str, dict[str, Any] | None]:
    found: dict[str, dict[str, Any] | None] = dict.fromkeys(ids)
    keys = list(ids)
    for start in range(0, len(keys), _IDS_PER_QUERY):
        chunk = keys[start : start + _IDS_PER_QUERY]
        rows = conn.execute(
            "SELECT aggregate_id, state FROM trace_state WHERE aggregate_id IN "
            f"({','.join('?' * len(chunk))})",
            chunk,
        ).fetchall()
        found.update((key, orjson.loads(state)) for key, state in rows)
    return found


def _hex(value: int) -> str:
    return f"{value:x}"


def _int(value: str) -> int:
    return int(value, 16)


class _Fold:
    """One batch's fold: the states it changes, the spans that ended in it."""

    def __init__(
        self,
        conn: Db,
        states: dict[str, dict[str, Any] | None],
        capture_content: bool,
        texts: TextLookup | None = None,
    ) -> None:
        self.conn = conn
        self.states = states
        self.capture = capture_content
        self.texts = texts
        self.spans: list[Span] = []
        #: Finished runs' tree usage: (input, output, cost, calls), by run id.
        self.totals: dict[str, tuple[int, int, float, int]] = {}

    def apply(self, item: Recorded) -> None:
        try:
            data = item.decode()
            self._apply(item, data)
        except Exception:  # one unreadable event costs its own span, never the others'
            log.warning(
                "traces: event v%s (%s) of %s skipped",
                item.version,
                item.type_name,
                item.originator_id,
                exc_info=True,
            )

    # -- runs ------------------------------------------------------------------------------

    def _apply(self, item: Recorded, data: dict[str, Any]) -> None:
        name, key = item.type_name, item.originator_id
        at = time_ns(data["timestamp"])
        state = self.states.get(key)
        if name == "RunStarted":
            self.states[key] = self._run_started(key, data, at)
            return
        if name == "PlanCreated":
            self.states[key] = _root_state("plan", key, "plan", at, _plan_attributes(data))
            return
        if name == "RoundOpened":
            attributes = {
                "controlroom.conference.round_id": key,
                "gen_ai.operation.name": "invoke_workflow",
                "gen_ai.workflow.name": "conference",
                "gen_ai.conversation.id": data.get("session_id"),
            }
            self.states[key] = _root_state(
                "round", key, "invoke_workflow conference", at, attributes
            )
            return
        if is_counted_call(name, data):
            self._model_call(item, data, at, state)
            if name not in _CALLS_WITH_VERDICTS:
                return
        if state is None:
            return  # not (yet) the aggregate of a trace: a damaged or foreign stream
        kind = state["kind"]
        if kind == "run":
            self._run_event(item, data, at, state)
        elif kind == "plan" and name == "PlanFinished":
            outcome = data.get("outcome")
            self._end_root(key, state, at, {"controlroom.plan.outcome": _maybe_text(outcome)}, None)
        elif kind == "plan" and name == "TaskRunRequested":
            state["segment"]["events"].append(
                _event(
                    "controlroom.plan.task_run",
                    at,
                    {
                        "controlroom.plan.task_id": data.get("task_id"),
                        "controlroom.run.id": data.get("run_id"),
                    },
                )
            )
        elif kind == "round" and name in ("RoundClosed", "RoundFailed"):
            reason = data.get("reason") if name == "RoundFailed" else None
            self._end_root(key, state, at, {"controlroom.conference.ending": name}, reason)

    def _run_started(self, run_id: str, data: dict[str, Any], at: int) -> dict[str, Any]:
        recipe = str(data.get("recipe_id", ""))
        origin = data.get("origin") or {}
        domain_trace = str(data.get("trace_id") or run_id)
        attributes: Attributes = {
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.workflow.name": recipe,
            "gen_ai.conversation.id": data.get("session_id"),
            "session.id": data.get("session_id"),
            "openinference.span.kind": "CHAIN",
            "controlroom.run.id": run_id,
            "controlroom.recipe.id": recipe,
            "controlroom.trace_id": domain_trace,
            "controlroom.origin.kind": origin.get("kind"),
            "controlroom.origin.via": origin.get("via"),
            "controlroom.run.depth": origin.get("depth"),
            "controlroom.run.total_steps": data.get("total_steps"),
        }
        if self.capture:
            attributes["controlroom.task.description"] = _text(
                (data.get("task") or {}).get("description", "")
            )
        state = _root_state("run", run_id, f"invoke_workflow {recipe}", at, attributes)
        state["trace"] = _hex(trace_id_of(domain_trace))
        parent_run, parent_step = origin.get("parent_run_id"), origin.get("parent_instance_id")
        if parent_run and parent_step:
            state["parent"] = _hex(span_id_of(parent_run, f"step:{parent_step}"))
            attributes["controlroom.parent_run.id"] = parent_run
        plan = origin.get("plan_id")
        if plan:
            state["links"].append(
                [
                    _hex(trace_id_of(f"plan:{plan}")),
                    _hex(span_id_of(plan, "plan")),
                    {"controlroom.link": "plan", "controlroom.plan.id": plan},
                ]
            )
            attributes["controlroom.plan.id"] = plan
            attributes["controlroom.plan.task_id"] = (data.get("task") or {}).get(
                "session_plan_task_id"
            )
        return state

    def _run_event(
        self, item: Recorded, data: dict[str, Any], at: int, state: dict[str, Any]
    ) -> None:
        name, run_id = item.type_name, item.originator_id
        if state.get("ended") and name not in ("RunRetried",):
            return  # nothing of a finished segment is open any more
        if name == "StepStarted":
            self._step_started(run_id, data, at, state)
        elif name in _STEP_END:
            self._step_ended(run_id, name, data, at, state)
        elif name in _TERMINAL:
            self._run_ended(run_id, name, data, at, state)
        elif name == "RunRetried":
            self._segment(run_id, item.version, data, at, state)
        elif name == "ModelRequestRecorded":
            if self.capture:
                state["requests"][str(data.get("ref"))] = self._as_sent(data.get("body"))
        else:
            self._run_span_event(name, data, at, state)

    def _as_sent(self, body: object) -> object:
        """A recorded request's body with the texts it names by hash put back; as
        recorded when a text cannot be read (the span then carries no prompt text)."""
        if not isinstance(body, dict) or self.texts is None:
            return body
        lookup = self.texts
        found = {d: t for d in referred_texts(body) if (t := lookup(d)) is not None}
        try:
            return join_body(body, found)
        except TextMissingError as exc:
            log.warning("a traced request's prompt is not shown: %s", exc)
            return body

    def _step_started(
        self, run_id: str, data: dict[str, Any], at: int, state: dict[str, Any]
    ) -> None:
        step_id = str(data.get("step_id", ""))
        instance = str(data.get("instance_id") or step_id)
        kind = str(data.get("kind") or ("tool" if data.get("phase") == "a" else "agent"))
        tool, role = data.get("tool"), data.get("agent_archetype")
        attributes: Attributes = {
            "controlroom.step.id": step_id,
            "controlroom.step.instance_id": instance,
            "controlroom.step.index": data.get("step_index"),
            "controlroom.step.kind": kind,
            "controlroom.step.phase": data.get("phase"),
            "controlroom.run.id": run_id,
        }
        if tool:
            name = f"execute_tool {tool}"
            attributes.update(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": tool,
                    "openinference.span.kind": "TOOL",
                }
            )
        elif role:
            name = f"invoke_agent {role}"
            attributes.update(
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": role,
                    "openinference.span.kind": "AGENT",
                }
            )
        else:
            name = f"{kind} {step_id}"
            kinds = {"review_gate": "EVALUATOR", "child_run": "CHAIN"}
            attributes["openinference.span.kind"] = kinds.get(kind, "CHAIN")
        state["steps"][instance] = {
            "span": _hex(span_id_of(run_id, f"step:{instance}")),
            "parent": state["segment"]["span"],
            "name": name,
            "start": at,
            "attributes": attributes,
            "events": state.get("pending", {}).pop(instance, []),
            "links": [],
            "kind": kind,
        }
        state["current"][step_id] = instance

    def _step_ended(
        self, run_id: str, name: str, data: dict[str, Any], at: int, state: dict[str, Any]
    ) -> None:
        step_id = str(data.get("step_id", ""))
        instance = str(data.get("instance_id") or state["current"].get(step_id) or step_id)
        step = state["steps"].pop(instance, None)
        if step is None:
            return
        if state["current"].get(step_id) == instance:
            del state["current"][step_id]
        error = None
        if name == "StepFailed":
            error = f"{data.get('error_type', '')}: {data.get('error', '')}"
            step["attributes"]["error.type"] = data.get("error_type") or "StepFailed"
        if step["kind"] == "review_gate":
            verdict = "PASS" if name == "StepCompleted" else "FAIL"
            explanation = step.pop("verdict", None) if error is None else data.get("error")
            step["events"].append(
                _evaluation(at, f"review_gate:{step_id}", verdict == "PASS", explanation)
            )
        self.spans.append(_span_of(state, step, at, error))

    def _run_ended(
        self, run_id: str, name: str, data: dict[str, Any], at: int, state: dict[str, Any]
    ) -> None:
        status = _TERMINAL[name]
        reason = data.get("error") or data.get("reason")
        for instance in list(state["steps"]):  # a cancel or a failure leaves steps open
            step = state["steps"].pop(instance)
            self.spans.append(_span_of(state, step, at, f"run {status}: {reason or ''}".strip()))
        state["current"] = {}
        usage = state["usage"]
        tree = list(usage)
        for child in state["children"]:
            row = (
                self.totals.get(child)
                or self.conn.execute(
                    "SELECT input_tokens, output_tokens, cost_usd, calls FROM trace_totals "
                    "WHERE run_id = ?",
                    (child,),
                ).fetchone()
            )
            if row is not None:
                tree = [a + b for a, b in zip(tree, row, strict=True)]
        self.totals[run_id] = (int(tree[0]), int(tree[1]), float(tree[2]), int(tree[3]))
        outcome = data.get("outcome")
        if outcome is None:
            outcome = {"done": 0, "failed": 1, "cancelled": 20}[status]
        segment = state["segment"]
        segment["attributes"].update(
            {
                "controlroom.run.status": status,
                "controlroom.run.outcome": outcome,
                "controlroom.usage.input_tokens": usage[0],
                "controlroom.usage.output_tokens": usage[1],
                "controlroom.usage.cost_usd": usage[2],
                "controlroom.usage.model_calls": usage[3],
                # The run's own calls and its child runs': each call's own span carries
                # gen_ai.usage.* once, so a sum over spans counts nothing twice.
                "gen_ai.aggregated_usage.input_tokens": int(tree[0]),
                "gen_ai.aggregated_usage.output_tokens": int(tree[1]),
                "controlroom.aggregated_usage.cost_usd": float(tree[2]),
                "controlroom.aggregated_usage.model_calls": int(tree[3]),
            }
        )
        if status == "failed":
            segment["attributes"]["error.type"] = "RunFailed"
        error = None if status == "done" else f"{status}: {reason or ''}".strip(": ")
        self.spans.append(_span_of(state, segment, at, error))
        state["ended"] = True
        state["requests"] = {}
        state["segment"] = {"span": segment["span"]}  # kept for late events' parents

    def _segment(
        self, run_id: str, version: int, data: dict[str, Any], at: int, state: dict[str, Any]
    ) -> None:
        """A retried run goes on under a span of its own (the run's span has ended)."""
        root = state["run_span"]
        attributes = {
            "controlroom.run.id": run_id,
            "controlroom.retry.step_id": data.get("step_id"),
            "controlroom.retry.previous_error": _maybe_text(data.get("previous_error")),
            "openinference.span.kind": "CHAIN",
        }
        state["segment"] = {
            "span": _hex(span_id_of(run_id, f"retry@{version}")),
            "parent": root,
            "name": f"retry {state['name'].split(' ', 1)[-1]}",
            "start": at,
            "attributes": attributes,
            "events": [],
            "links": [],
        }
        state["ended"] = False

    def _run_span_event(
        self, name: str, data: dict[str, Any], at: int, state: dict[str, Any]
    ) -> None:
        segment = state["segment"]
        step = self._step_of(state, data)
        target = step if step is not None else segment
        if name == "FlowDecided":
            rung = data.get("rung")
            attributes = {
                "controlroom.flow.name": data.get("flow"),
                "controlroom.flow.choice": data.get("choice"),
                "controlroom.flow.after": data.get("after_instance"),
                "controlroom.flow.reason": _maybe_text(data.get("reason")),
                "controlroom.flow.failure_kind": data.get("failure_kind"),
                "controlroom.flow.outcome": data.get("outcome"),
            }
            if rung:
                attributes.update(
                    {
                        f"controlroom.escalation.{k}": v if isinstance(v, int | float) else _text(v)
                        for k, v in rung.items()
                        if v is not None and k != "failure"
                    }
                )
            event = _event(
                "controlroom.escalation.rung" if rung else "controlroom.flow.decision",
                at,
                attributes,
            )
            chosen = data.get("instance_id")
            if chosen:  # on the span of the step instance it starts (seen once it ends)
                state.setdefault("pending", {}).setdefault(str(chosen), []).append(event)
            else:
                segment["events"].append(event)
        elif name == "ModelAttemptFailed":
            target["events"].append(
                _event(
                    "controlroom.model.attempt_failed",
                    at,
                    {
                        "controlroom.attempt": data.get("attempt"),
                        "gen_ai.provider.name": data.get("provider"),
                        "gen_ai.request.model": data.get("model"),
                        "error.type": data.get("kind"),
                        "http.response.status_code": data.get("status"),
                        "controlroom.will_retry": data.get("will_retry"),
                        "controlroom.retry_in_s": data.get("retry_in_s"),
                        "exception.message": _maybe_text(data.get("message")),
                    },
                )
            )
        elif name == "AgentReplyRejected":
            target["events"].append(
                _event(
                    "controlroom.contract.rejected",
                    at,
                    {
                        "controlroom.attempt": data.get("attempt"),
                        "controlroom.contract": data.get("contract"),
                        "controlroom.will_retry": data.get("will_retry"),
                        "controlroom.errors": [_text(e) for e in data.get("errors") or []][:20],
                    },
                )
            )
        elif name == "StopHook":
            target["events"].append(
                _event(
                    "controlroom.stop_hook",
                    at,
                    {
                        "controlroom.contract": data.get("contract"),
                        "controlroom.attempts": data.get("attempts"),
                    },
                )
            )
        elif name == "TriageDecided":
            target["events"].append(
                _event(
                    "controlroom.escalation.triage",
                    at,
                    {
                        "controlroom.triage.decision": data.get("decision"),
                        "controlroom.triage.asked": data.get("asked"),
                        "controlroom.triage.confidence": data.get("confidence"),
                        "controlroom.triage.overruled": _maybe_text(data.get("overruled")),
                    },
                )
            )
        elif name == "DodChecked":
            segment["attributes"]["controlroom.dod.passed"] = bool(data.get("passed"))
            for result in data.get("results") or []:
                check = result.get("check") or {}
                segment["events"].append(
                    _evaluation(
                        at,
                        f"dod:{check.get('check', result.get('index'))}",
                        bool(result.get("passed")),
                        result.get("detail"),
                        {"controlroom.dod.index": result.get("index")},
                    )
                )
        elif name == "SlotWritten" and data.get("agent_id") == "gate" and step is not None:
            step["verdict"] = data.get("summary")
        elif name == "ReceiptIssued":
            target["events"].append(
                _event(
                    "controlroom.tool.receipt",
                    at,
                    {
                        "gen_ai.tool.name": data.get("tool"),
                        "controlroom.receipt.id": data.get("receipt_id"),
                        "controlroom.tool.duration_ms": data.get("duration_ms"),
                        "controlroom.tool.output_sha256": data.get("output_sha256"),
                    },
                )
            )
        elif name == "StepWaiting":
            target["events"].append(
                _event(
                    "controlroom.step.waiting",
                    at,
                    {
                        "controlroom.waiting.reason": _maybe_text(data.get("reason")),
                        "controlroom.waiting.kind": (data.get("awaiting") or {}).get("kind"),
                    },
                )
            )
        elif name == "HumanAnswered":
            target["events"].append(
                _event(
                    "controlroom.human.answered",
                    at,
                    {
                        "controlroom.answer.by": data.get("by"),
                        "controlroom.issue.id": data.get("issue_id"),
                        "controlroom.answer.model": data.get("model"),
                    },
                )
            )
        elif name == "RunResumed":
            segment["events"].append(
                _event(
                    "controlroom.run.resumed",
                    at,
                    {"controlroom.step.index": data.get("step_index")},
                )
            )
        elif name == "ChildRunStarted":
            child = str(data.get("run_id"))
            if child not in state["children"]:
                state["children"].append(child)
            target["events"].append(
                _event(
                    "controlroom.child_run.started",
                    at,
                    {
                        "controlroom.child_run.id": child,
                        "controlroom.child_run.index": data.get("index"),
                        "controlroom.child_run.attempt": data.get("attempt"),
                    },
                )
            )
            if step is not None:
                step["links"].append(
                    [
                        state["trace"],
                        _hex(span_id_of(child, "run")),
                        {"controlroom.link": "child_run", "controlroom.child_run.id": child},
                    ]
                )
        elif name == "ChildRunEnded":
            target["events"].append(
                _event(
                    "controlroom.child_run.ended",
                    at,
                    {
                        "controlroom.child_run.id": data.get("run_id"),
                        "controlroom.child_run.status": data.get("status"),
                        "controlroom.child_run.outcome": data.get("outcome"),
                    },
                )
            )
        elif name in ("SentinelVerified", "ForEachItemChecked"):
            label = "sentinel" if name == "SentinelVerified" else "item_check"
            findings = data.get("blocking") if name == "SentinelVerified" else data.get("findings")
            target["events"].append(
                _evaluation(
                    at,
                    f"{label}:{data.get('step_id')}",
                    bool(data.get("passed")),
                    "\n".join(findings or []) or None,
                )
            )

    def _step_of(self, state: dict[str, Any], data: dict[str, Any]) -> dict[str, Any] | None:
        if state.get("kind") != "run":
            return None
        instance = data.get("instance_id") or state["current"].get(str(data.get("step_id", "")))
        found: dict[str, Any] | None = state["steps"].get(str(instance)) if instance else None
        return found

    # -- model calls ---------------------------------------------------------------------------

    def _model_call(
        self, item: Recorded, data: dict[str, Any], at: int, state: dict[str, Any] | None
    ) -> None:
        name, key = item.type_name, item.originator_id
        call = call_summary(name, data)
        if state is None:  # before its aggregate's first event, or of no trace's aggregate
            kind = _CALL_AGGREGATES.get(name, "aggregate")
            trace, parent = _hex(trace_id_of(f"{kind}:{key}")), _hex(span_id_of(key, kind))
        else:
            trace = state["trace"]
            step = self._step_of(state, data)
            parent = step["span"] if step is not None else state["segment"]["span"]
            if state["kind"] == "run":
                usage = state["usage"]
                usage[0] += call.input_tokens
                usage[1] += call.output_tokens
                usage[2] += call.cost_usd or 0.0
                usage[3] += 1
        start = at - int(call.latency_ms * 1_000_000)
        attributes: Attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": call.provider,
            "gen_ai.request.model": call.model,
            "gen_ai.response.model": call.model,
            "gen_ai.usage.input_tokens": call.input_tokens,
            "gen_ai.usage.output_tokens": call.output_tokens,
            "gen_ai.response.finish_reasons": ["stop"],
            "gen_ai.agent.name": call.role or None,
            "openinference.span.kind": "LLM",
            "controlroom.event": name,
            "controlroom.event.version": item.version,
            "controlroom.aggregate.id": key,
            "controlroom.step.id": data.get("step_id") or data.get("purpose"),
            "controlroom.model.tier": call.tier or None,
            "controlroom.cost_usd": call.cost_usd,
            "controlroom.attempts": call.attempts,
            "controlroom.tokens_estimated": call.estimated,
            "controlroom.prompt_type": data.get("prompt_type"),
            "controlroom.micro_step": data.get("micro_step"),
            "controlroom.ladder.rung": data.get("rung"),
            "controlroom.ladder.which": data.get("which"),
        }
        error = None
        if name == "AgentReplyRejected":
            attributes["error.type"] = "contract"
            error = f"the reply broke the contract '{data.get('contract')}'"
        if self.capture:
            self._content(attributes, data, state)
        self.spans.append(
            Span(
                trace_id=_int(trace),
                span_id=span_id_of(key, f"call@{item.version}"),
                parent_id=_int(parent),
                name=f"chat {call.model}",
                kind="CLIENT",
                start_ns=min(start, at),
                end_ns=at,
                attributes=_clean(attributes),
                error=error,
            )
        )

    def _content(
        self, attributes: Attributes, data: dict[str, Any], state: dict[str, Any] | None
    ) -> None:
        """The prompt (the recorded request) and the reply, as the GenAI conventions
        structure messages; only with content capture on."""
        reply = data.get("output", data.get("reply"))
        if isinstance(reply, str):
            attributes["gen_ai.output_messages"] = _text(
                [
                    {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": reply}],
                        "finish_reason": "stop",
                    }
                ]
            )
            attributes["output.value"] = _text(reply)
        ref = data.get("request_ref")
        body = (state or {}).get("requests", {}).get(ref) if ref else None
        if isinstance(body, dict):
            messages, system = _messages(body)
            if system:
                attributes["gen_ai.system_instructions"] = _text(
                    [{"type": "text", "content": system}]
                )
            if messages:
                attributes["gen_ai.input_messages"] = _text(messages)
                attributes["input.value"] = _text(messages[-1]["parts"][0]["content"])

    def _end_root(
        self,
        key: str,
        state: dict[str, Any],
        at: int,
        attributes: Attributes,
        error: str | None,
    ) -> None:
        segment = state["segment"]
        segment["attributes"].update(attributes)
        self.spans.append(_span_of(state, segment, at, error))
        self.states[key] = None  # nothing of it stays open
        self.conn.execute("DELETE FROM trace_state WHERE aggregate_id = ?", (key,))


def _messages(body: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    system = body.get("system") if isinstance(body.get("system"), str) else None
    messages = []
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if not isinstance(content, str):
            content = orjson.dumps(content).decode()
        role = str(message.get("role", "user"))
        if role == "system" and system is None:
            system = content
            continue
        messages.append({"role": role, "parts": [{"type": "text", "content": content}]})
    return messages, system


def _root_state(kind: str, key: str, name: str, at: int, attributes: Attributes) -> dict[str, Any]:
    span = _hex(span_id_of(key, kind))
    return {
        "kind": kind,
        "trace": _hex(trace_id_of(key if kind == "run" else f"{kind}:{key}")),
        "run_span": span,
        "name": name,
        "parent": None,
        "links": [],
        "segment": {
            "span": span,
            "parent": None,
            "name": name,
            "start": at,
            "attributes": attributes,
            "events": [],
            "links": [],
        },
        "steps": {},
        "current": {},
        "usage": [0, 0, 0.0, 0],
        "children": [],
        "requests": {},
        "ended": False,
    }


def _plan_attributes(data: dict[str, Any]) -> Attributes:
    return {
        "gen_ai.operation.name": "invoke_workflow",
        "gen_ai.workflow.name": "plan",
        "gen_ai.conversation.id": data.get("session_id"),
        "openinference.span.kind": "CHAIN",
        "controlroom.plan.tasks": len(data.get("tasks") or []),
        "controlroom.plan.created_by": data.get("created_by"),
    }


def _span_of(state: dict[str, Any], span: dict[str, Any], end: int, error: str | None) -> Span:
    is_root = span["span"] == state["run_span"]
    parent = span.get("parent")
    if is_root:
        parent = state.get("parent")
    links = [*span.get("links", []), *(state["links"] if is_root else [])]
    return Span(
        trace_id=_int(state["trace"]),
        span_id=_int(span["span"]),
        parent_id=_int(parent) if parent else None,
        name=span["name"],
        kind="INTERNAL",
        start_ns=min(span["start"], end),
        end_ns=end,
        attributes=_clean(span["attributes"]),
        events=[SpanEvent(e[0], e[1], e[2]) for e in span["events"]],
        links=[SpanLink(_int(t), _int(s), a) for t, s, a in links],
        error=_text(error) if error else None,
    )


def _event(name: str, at: int, attributes: Attributes) -> list[Any]:
    return [name, at, _clean(attributes)]


def _evaluation(
    at: int, name: str, passed: bool, explanation: object, extra: Attributes | None = None
) -> list[Any]:
    """A `gen_ai.evaluation.result` event (a check's verdict on the span it judged)."""
    return _event(
        "gen_ai.evaluation.result",
        at,
        {
            "gen_ai.evaluation.name": name,
            "gen_ai.evaluation.score.label": "pass" if passed else "fail",
            "gen_ai.evaluation.score.value": 1.0 if passed else 0.0,
            "gen_ai.evaluation.explanation": _maybe_text(explanation),
            **(extra or {}),
        },
    )


def _maybe_text(value: object) -> str | None:
    return None if value is None else _text(value)
