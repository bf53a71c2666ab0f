"""The consolidated run view of appendix D and the step log of appendix A, from events only.

Folding a prefix of a run's events gives the view as it stood at that version, which is
what audit replay needs; no tool, model or clock is involved.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from domain.events import DomainEvent
from domain.run_events import (
    AgentResponded,
    DodChecked,
    ReceiptIssued,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunResumed,
    RunStarted,
    SlotWritten,
    StepCompleted,
    StepFailed,
    StepStarted,
)


def _iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


class RunView:
    """Mutable accumulator; `apply` one event at a time, then read `as_dict`."""

    def __init__(self) -> None:
        self.run: dict[str, Any] = {}
        self.steps: list[dict[str, Any]] = []
        self.slots: dict[str, dict[str, Any]] = {}
        self.dod: dict[str, Any] | None = None
        self.version = 0

    def to_state(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "steps": self.steps,
            "slots": self.slots,
            "dod": self.dod,
            "version": self.version,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> RunView:
        view = cls()
        view.run, view.steps, view.slots = state["run"], state["steps"], state["slots"]
        view.dod, view.version = state["dod"], state["version"]
        return view

    def apply(self, event: DomainEvent) -> None:
        self.version = event.originator_version
        at = _iso(event.timestamp)
        if self.run:
            self.run["updated_at"] = at
        if isinstance(event, RunStarted):
            self.run = {
                "run_id": event.originator_id,
                "recipe_id": event.recipe_id,
                "session_id": event.session_id,
                "trace_id": event.trace_id,
                "status": "running",
                "phase": None,
                "current_step_index": 0,
                "total_steps": event.total_steps,
                "created_at": at,
                "updated_at": at,
                "completed_at": None,
                "task": {
                    "description": event.task.description,
                    "session_plan_task_id": event.task.session_plan_task_id,
                    "initial_args": dict(event.task.args),
                },
                "recipe_fingerprint": event.fingerprint,
                "routing": event.routing.model_dump(mode="json") if event.routing else None,
                "error": None,
            }
        elif isinstance(event, StepStarted):
            self.run.update(phase=event.phase, current_step_index=event.step_index)
            self.steps.append(
                {
                    "step_index": event.step_index,
                    "step_id": event.step_id,
                    "phase": event.phase,
                    "tool": event.tool,
                    "agent_archetype": event.agent_archetype,
                    "agent_id": None,
                    "status": "running",
                    "output_slot": event.output_slot,
                    "receipt_id": None,
                    "input_slot_refs": [],
                    "output_hash": None,
                    "output_preview": None,
                    "started_at": at,
                    "completed_at": None,
                    "error": None,
                }
            )
        elif isinstance(event, ReceiptIssued):
            self._step(event.step_id)["receipt_id"] = event.receipt_id
        elif isinstance(event, AgentResponded):
            step = self._step(event.step_id)
            step.update(
                agent_id=event.agent_id,
                tier=event.tier,
                provider=event.provider,
                model=event.model,
                prompt_hash=event.prompt_hash,
                usage=event.usage.model_dump(),
                latency_ms=event.latency_ms,
            )
        elif isinstance(event, SlotWritten):
            self.slots[event.slot] = {
                "type": event.kind,
                "receipt_id": event.receipt_id,
                "agent_id": event.agent_id,
                "text": event.text,
                "sha256": event.sha256,
                "summary": event.summary,
            }
        elif isinstance(event, StepCompleted):
            self._step(event.step_id).update(
                status="done",
                output_hash=event.output_hash,
                output_preview=event.output_preview,
                input_slot_refs=list(event.input_slot_refs),
                completed_at=at,
            )
        elif isinstance(event, StepFailed):
            self._step(event.step_id).update(status="failed", error=event.error, completed_at=at)
        elif isinstance(event, DodChecked):
            self.dod = {
                "passed": event.passed,
                "results": [r.model_dump(mode="json") for r in event.results],
            }
        elif isinstance(event, RunCompleted):
            self._finish("done", None, at)
        elif isinstance(event, RunFailed):
            self._finish("failed", event.error, at)
        elif isinstance(event, RunCancelled):
            for step in self.steps:
                if step["status"] == "running":
                    step["status"] = "cancelled"
            self._finish("cancelled", f"cancelled: {event.reason}", at)
        elif isinstance(event, RunResumed):
            self.run["resumed"] = self.run.get("resumed", 0) + 1

    def _step(self, step_id: str) -> dict[str, Any]:
        for step in reversed(self.steps):
            if step["step_id"] == step_id:
                found: dict[str, Any] = step
                return found
        raise KeyError(step_id)

    def _finish(self, status: str, error: str | None, at: str) -> None:
        self.run.update(status=status, error=error, phase=None, completed_at=at)

    def consolidated(self) -> dict[str, Any]:
        """`GET /api/runs/{id}` (appendix D)."""
        view = {k: v for k, v in self.run.items() if k not in ("routing",)}
        view["task"] = {"description": self.run["task"]["description"]}
        view["steps"] = [
            {
                k: v
                for k, v in {
                    "step_id": s["step_id"],
                    "phase": s["phase"],
                    "status": s["status"],
                    "tool": s["tool"],
                    "agent_archetype": s["agent_archetype"],
                    "output_slot": s["output_slot"],
                    "output_preview": s["output_preview"],
                    "error": s["error"],
                }.items()
                if v is not None or k in ("step_id", "phase", "status", "output_slot")
            }
            for s in self.steps
        ]
        view["cache_summary"] = {
            slot: {"type": v["type"], "preview": _one_line(v["summary"])}
            for slot, v in self.slots.items()
        }
        view["dod"] = self.dod
        view["routing"] = self.run.get("routing")
        view["version"] = self.version
        return view

    def step_log(self) -> list[dict[str, Any]]:
        """`GET /api/runs/{id}/steps`: every step with its observability fields."""
        return [dict(s) for s in self.steps]

    def slot(self, name: str) -> dict[str, Any] | None:
        """`GET /api/runs/{id}/cache/{slot}`: pointer metadata, or the artifact's full text."""
        found = self.slots.get(name)
        if found is None:
            return None
        if found["type"] == "pointer":
            return {
                "slot": name,
                "type": "pointer",
                "receipt_id": found["receipt_id"],
                "sha256": found["sha256"],
                "summary": found["summary"],
            }
        return {
            "slot": name,
            "type": "artifact",
            "agent_id": found["agent_id"],
            "text": found["text"],
            "sha256": found["sha256"],
            "summary": _one_line(found["summary"]),
        }


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def build_run_view(events: Iterable[DomainEvent], at_version: int | None = None) -> RunView:
    view = RunView()
    for event in events:
        if at_version is not None and event.originator_version > at_version:
            break
        view.apply(event)
    return view
