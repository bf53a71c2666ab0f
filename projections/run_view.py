"""The consolidated run view of appendix D and the step log of appendix A, from events only.

Folding a prefix of a run's events gives the view as it stood at that version, which is
what audit replay needs; no tool, model or clock is involved.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from controlroom.domain.events import DomainEvent
from controlroom.domain.run_events import (
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
        self.apply_data(event.type_name, json.loads(event.stored_json()))

    def apply_data(self, type_name: str, data: dict[str, Any]) -> None:
        """Fold one event given as its stored JSON: the projector reads the log this way,
        without building pydantic objects, and replay goes through here too."""
        self.version = data["originator_version"]
        if self.run:
            self.run["updated_at"] = data["timestamp"]
        handler = _HANDLERS.get(type_name)
        if handler is not None:
            handler(self, data, data["timestamp"])

    def _on_started(self, e: dict[str, Any], at: str) -> None:
        task = e["task"]
        self.run = {
            "run_id": e["originator_id"],
            "recipe_id": e["recipe_id"],
            "session_id": e["session_id"],
            "trace_id": e["trace_id"],
            "status": "running",
            "phase": None,
            "current_step_index": 0,
            "total_steps": e["total_steps"],
            "created_at": at,
            "updated_at": at,
            "completed_at": None,
            "task": {
                "description": task["description"],
                "session_plan_task_id": task["session_plan_task_id"],
                "initial_args": task["args"],
            },
            "recipe_fingerprint": e["fingerprint"],
            "routing": e["routing"],
            "error": None,
        }

    def _on_step_started(self, e: dict[str, Any], at: str) -> None:
        self.run.update(phase=e["phase"], current_step_index=e["step_index"])
        self.steps.append(
            {
                "step_index": e["step_index"],
                "step_id": e["step_id"],
                "phase": e["phase"],
                "tool": e["tool"],
                "agent_archetype": e["agent_archetype"],
                "agent_id": None,
                "status": "running",
                "output_slot": e["output_slot"],
                "receipt_id": None,
                "input_slot_refs": [],
                "output_hash": None,
                "output_preview": None,
                "started_at": at,
                "completed_at": None,
                "error": None,
            }
        )

    def _on_receipt(self, e: dict[str, Any], at: str) -> None:
        self._step(e["step_id"])["receipt_id"] = e["receipt_id"]

    def _on_agent(self, e: dict[str, Any], at: str) -> None:
        self._step(e["step_id"]).update(
            agent_id=e["agent_id"],
            tier=e["tier"],
            provider=e["provider"],
            model=e["model"],
            prompt_hash=e["prompt_hash"],
            usage=e["usage"],
            latency_ms=e["latency_ms"],
        )

    def _on_slot(self, e: dict[str, Any], at: str) -> None:
        self.slots[e["slot"]] = {
            "type": e["kind"],
            "receipt_id": e["receipt_id"],
            "agent_id": e["agent_id"],
            "text": e["text"],
            "sha256": e["sha256"],
            "summary": e["summary"],
        }

    def _on_step_completed(self, e: dict[str, Any], at: str) -> None:
        self._step(e["step_id"]).update(
            status="done",
            output_hash=e["output_hash"],
            output_preview=e["output_preview"],
            input_slot_refs=e["input_slot_refs"],
            completed_at=at,
        )

    def _on_step_failed(self, e: dict[str, Any], at: str) -> None:
        self._step(e["step_id"]).update(status="failed", error=e["error"], completed_at=at)

    def _on_dod(self, e: dict[str, Any], at: str) -> None:
        self.dod = {"passed": e["passed"], "results": e["results"]}

    def _on_completed(self, e: dict[str, Any], at: str) -> None:
        self._finish("done", None, at)

    def _on_failed(self, e: dict[str, Any], at: str) -> None:
        self._finish("failed", e["error"], at)

    def _on_cancelled(self, e: dict[str, Any], at: str) -> None:
        for step in self.steps:
            if step["status"] == "running":
                step["status"] = "cancelled"
        self._finish("cancelled", f"cancelled: {e['reason']}", at)

    def _on_resumed(self, e: dict[str, Any], at: str) -> None:
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


Handler = Callable[[RunView, dict[str, Any], str], None]
_HANDLERS: dict[str, Handler] = {
    RunStarted.type_name: RunView._on_started,
    StepStarted.type_name: RunView._on_step_started,
    ReceiptIssued.type_name: RunView._on_receipt,
    AgentResponded.type_name: RunView._on_agent,
    SlotWritten.type_name: RunView._on_slot,
    StepCompleted.type_name: RunView._on_step_completed,
    StepFailed.type_name: RunView._on_step_failed,
    DodChecked.type_name: RunView._on_dod,
    RunCompleted.type_name: RunView._on_completed,
    RunFailed.type_name: RunView._on_failed,
    RunCancelled.type_name: RunView._on_cancelled,
    RunResumed.type_name: RunView._on_resumed,
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
