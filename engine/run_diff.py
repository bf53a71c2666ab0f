"""`controlroom diff RUN_A RUN_B`: two runs compared step by step, from their events alone.

Per step: the request its agent sent (a diff of system and user text and parameters), its
output (a text diff), its verdicts (a gate's PASS/FAIL, a critic's score, a check's
pass), and its tokens, cost and latency — rejected replies and every other call the step
made counted — then the DoD verdicts and the totals of both runs.

A step's events are those recorded between its `StepStarted` and the next one: steps run
one at a time, so stream order says which step a call belongs to whatever its kind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from controlroom.domain.errors import RunNotFoundError
from controlroom.domain.events import DomainEvent, ModelReplyEvent
from controlroom.domain.run_events import (
    AgentReplyRejected,
    AgentResponded,
    ModelRequestRecorded,
    ReceiptIssued,
    SlotWritten,
    StepCompleted,
    StepFailed,
    StepStarted,
)
from controlroom.engine.replay_test import dod_verdicts
from controlroom.engine.request_text import request_diff, text_diff
from controlroom.engine.service import RunService

#: The keys of a JSON output that are a verdict or a score.
VERDICT_KEYS = ("verdict", "pass", "passed", "score", "scores")


@dataclass
class StepRecord:
    """What one step instance of a run did, as its events tell."""

    step: str
    status: str = "started"
    request_ref: str | None = None
    request: dict[str, Any] | None = None
    output: str = ""
    verdicts: dict[str, Any] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    calls: int = 0

    def figures(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "latency_ms": round(self.latency_ms, 1),
            "verdicts": self.verdicts,
            "request_ref": self.request_ref,
        }


def _verdicts(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return {}
    if not isinstance(value, dict):
        return {}
    return {k: value[k] for k in VERDICT_KEYS if k in value}


def _count(record: StepRecord, event: DomainEvent) -> None:
    if isinstance(event, ModelReplyEvent):
        if getattr(event, "repeats_items", False) or getattr(event, "checked", False):
            return  # repeats a call recorded on its own
        facts = event.call()
        record.calls += 1
        record.input_tokens += facts.input_tokens
        record.output_tokens += facts.output_tokens
        record.cost_usd += facts.cost_usd or 0.0
        record.latency_ms += facts.latency_ms
    elif isinstance(event, AgentReplyRejected):
        # A rejected reply was paid for all the same.
        record.calls += 1
        record.input_tokens += event.usage.input_tokens
        record.output_tokens += event.usage.output_tokens
        record.cost_usd += event.cost_usd or 0.0


def step_records(service: RunService, run_id: str) -> tuple[list[StepRecord], dict[int, bool]]:
    """Each step instance of the run, in the order they ran, and its DoD verdicts."""
    events = service.ctx.store.stream(run_id)
    if not events:
        raise RunNotFoundError(run_id)
    requests = {e.ref: e for e in events if isinstance(e, ModelRequestRecorded)}
    records: dict[str, StepRecord] = {}
    current: StepRecord | None = None
    output_slot = ""
    for event in events:
        if isinstance(event, StepStarted):
            key = event.instance_id or event.step_id
            # A step run again (a retry, a revision loop) is compared as it last ran.
            current = records[key] = StepRecord(key)
            output_slot = event.output_slot
            continue
        if current is None:
            continue
        _count(current, event)
        if isinstance(event, AgentResponded):
            current.output = event.output
            current.request_ref = event.request_ref
        elif isinstance(event, SlotWritten) and event.slot == output_slot and not current.output:
            current.output = event.text if event.text is not None else event.summary
        elif isinstance(event, ReceiptIssued) and not current.output:
            current.output = json.dumps(event.output, indent=2, sort_keys=True, default=str)
        elif isinstance(event, StepCompleted):
            current.status = "completed"
        elif isinstance(event, StepFailed):
            current.status = f"failed: {event.error[:200]}"
    for record in records.values():
        recorded = requests.get(record.request_ref or "")
        if recorded is not None:
            record.request = service.request_body(recorded)
        record.verdicts = _verdicts(record.output)
    return list(records.values()), dod_verdicts(events)


@dataclass
class StepDiff:
    step: str
    a: StepRecord | None
    b: StepRecord | None
    request_diff: str
    output_diff: str

    @property
    def changed(self) -> bool:
        if self.a is None or self.b is None:
            return True
        return bool(
            self.request_diff or self.output_diff or self.a.verdicts != self.b.verdicts
        ) or (self.a.status != self.b.status)

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "changed": self.changed,
            "a": self.a.figures() if self.a else None,
            "b": self.b.figures() if self.b else None,
            "request_diff": self.request_diff,
            "output_diff": self.output_diff,
        }


def _totals(records: list[StepRecord]) -> dict[str, Any]:
    return {
        "calls": sum(r.calls for r in records),
        "input_tokens": sum(r.input_tokens for r in records),
        "output_tokens": sum(r.output_tokens for r in records),
        "cost_usd": round(sum(r.cost_usd for r in records), 6),
        "latency_ms": round(sum(r.latency_ms for r in records), 1),
    }


@dataclass
class RunDiff:
    run_a: str
    run_b: str
    steps: list[StepDiff]
    dod_a: dict[int, bool]
    dod_b: dict[int, bool]
    totals_a: dict[str, Any]
    totals_b: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "run_a": self.run_a,
            "run_b": self.run_b,
            "steps": [s.to_json() for s in self.steps],
            "dod": {"a": self.dod_a, "b": self.dod_b},
            "totals": {"a": self.totals_a, "b": self.totals_b},
        }

    def lines(self) -> list[str]:
        out = [f"diff {self.run_a} {self.run_b}"]
        for step in self.steps:
            mark = "~" if step.changed else "="
            out.append(f"{mark} {step.step}")
            for side, record in (("a", step.a), ("b", step.b)):
                if record is None:
                    out.append(f"    {side}: (not run)")
                    continue
                verdicts = f" verdicts {json.dumps(record.verdicts)}" if record.verdicts else ""
                out.append(
                    f"    {side}: {record.status}; {record.calls} call(s), "
                    f"{record.input_tokens}+{record.output_tokens} tokens, "
                    f"${record.cost_usd:.6f}, {record.latency_ms:.0f} ms{verdicts}"
                )
            for title, diff in (("request", step.request_diff), ("output", step.output_diff)):
                if diff:
                    out.append(f"    {title}:")
                    out += [f"      {line}" for line in diff.splitlines()]
        if self.dod_a != self.dod_b:
            out.append(f"DoD: a {self.dod_a}  b {self.dod_b}")
        else:
            out.append(f"DoD: the same ({sum(self.dod_a.values())}/{len(self.dod_a)} passed)")
        for side, totals in (("a", self.totals_a), ("b", self.totals_b)):
            out.append(
                f"total {side}: {totals['calls']} call(s), {totals['input_tokens']}+"
                f"{totals['output_tokens']} tokens, ${totals['cost_usd']:.6f}, "
                f"{totals['latency_ms']:.0f} ms"
            )
        return out


def diff_runs(service: RunService, run_a: str, run_b: str) -> RunDiff:
    records_a, dod_a = step_records(service, run_a)
    records_b, dod_b = step_records(service, run_b)
    by_a = {r.step: r for r in records_a}
    by_b = {r.step: r for r in records_b}
    order = [r.step for r in records_a] + [r.step for r in records_b if r.step not in by_a]
    steps = []
    for name in order:
        a, b = by_a.get(name), by_b.get(name)
        steps.append(
            StepDiff(
                name,
                a,
                b,
                request_diff(a.request if a else None, b.request if b else None, run_a, run_b),
                text_diff(
                    (a.output if a else "").splitlines(),
                    (b.output if b else "").splitlines(),
                    run_a,
                    run_b,
                ),
            )
        )
    return RunDiff(run_a, run_b, steps, dod_a, dod_b, _totals(records_a), _totals(records_b))
