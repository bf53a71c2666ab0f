"""The consolidated run view of appendix D and the step log of appendix A, from events only.

One fold serves the runs projection, which keeps its state between batches, and audit
replay, which folds a prefix of one stream: the view as it stood at that version. It reads
each event as its stored JSON and never calls a tool, a model or the clock.

Steps are keyed by instance (`draft`, then `draft#2`), so a recipe step that runs twice is
listed twice. An event type the fold does not know (a new step kind's own events) only
moves the run's version. A stream that does not fold (an event missing or out of order, as
after a stored event was deleted by hand, or one that does not fit the run) marks the run
`damaged`, with the reason in `damage`; the fold never raises for one run's events.

A fork's stream holds the source's events up to its cut, copied after its `RunForked`
(engine/fork.py): what those copies cost was paid by the source, not by the fork. A reply
folded from a copy is charged to its step (`spent_usd`: what the step cost where it ran)
and to the fork's `copied_cost_usd`, never to its `cost_usd`; a step whose events are all
copies is marked `copied`, so its tokens are not the fork's either.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import orjson

from controlroom.projections.loop_turns import fold_turn, new_loop

if TYPE_CHECKING:  # the quick reads fold no event and import no pydantic
    from controlroom.domain.events import DomainEvent

#: The fold's view of one step: the step log entry, extended as the step's events arrive.
Step = dict[str, Any]


class RunView:
    """Mutable accumulator: `apply_data` one stored event at a time, then read the views."""

    def __init__(self) -> None:
        self.run: dict[str, Any] = {}
        self.steps: list[Step] = []
        self.slots: dict[str, dict[str, Any]] = {}
        #: Artifact texts folded by this object, by slot. Not part of `to_state`: the runs
        #: projection keeps each text once, in a table of its own.
        self.texts: dict[str, str] = {}
        self.dod: dict[str, Any] | None = None
        self.version = 0
        #: Whether the event being folded is one a fork copied from its source.
        self._copy = False

    @property
    def damage(self) -> str | None:
        found: str | None = self.run.get("damage")
        return found

    @property
    def status(self) -> str:
        found: str = self.run.get("status", "pending")
        return found

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
        self.apply_data(event.type_name, orjson.loads(event.stored_json()))

    def apply_data(self, type_name: str, data: dict[str, Any]) -> None:
        """Fold one event given as its stored JSON (upcast to the current shape)."""
        version: int = data["originator_version"]
        if self.damage is None:
            expected = self.version + 1
            if version != expected:
                problem = "is missing" if version > expected else "is out of order"
                found = f"event v{version}" if version > expected else f"v{version} again"
                self.mark_damaged(
                    data["originator_id"],
                    data.get("timestamp"),
                    f"event v{expected} {problem} (found {found})",
                )
            else:
                try:
                    self._fold(type_name, data)
                except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
                    self.mark_damaged(
                        data["originator_id"],
                        data.get("timestamp"),
                        f"event v{version} ({type_name}) does not fit the run: "
                        f"{type(exc).__name__} {exc}",
                    )
        self.version = max(self.version, version)

    def mark_damaged(self, run_id: str, at: str | None, reason: str) -> None:
        """Stop folding this run: its view cannot be trusted past this point."""
        if not self.run:
            self.run = _skeleton(run_id, at or "")
        self.run.update(status="damaged", damage=reason, phase=None)

    def _fold(self, type_name: str, data: dict[str, Any]) -> None:
        at: str = data["timestamp"]
        if not self.run and type_name != "RunStarted":
            raise ValueError("the run's first event is not RunStarted")
        if self.run:
            self.run["updated_at"] = at
        self._copy = data["originator_version"] <= self.run.get("copied_through", 0)
        handler = _HANDLERS.get(type_name)
        if handler is not None:
            handler(self, data, at)

    # -- one handler per event type ----------------------------------------------------------

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
                "session_plan_task_id": task.get("session_plan_task_id"),
                "initial_args": task.get("args", {}),
            },
            "recipe_fingerprint": e["fingerprint"],
            "routing": e.get("routing"),
            "error": None,
        }
        loop = new_loop(e.get("recipe"))
        if loop is not None:
            self.run["loop"] = loop
        origin = e.get("origin") or {}
        if origin.get("kind") == "parent_step":
            self.run["parent"] = {
                "run_id": origin.get("parent_run_id"),
                "instance_id": origin.get("parent_instance_id"),
                "root_run_id": origin.get("root_run_id"),
                "depth": origin.get("depth", 0),
                "max_depth": origin.get("max_depth"),
            }
        elif origin.get("kind") == "fork":
            self.run["forked_from"] = {
                "run_id": origin.get("source_run_id"),
                "step": origin.get("source_step"),
            }

    def _on_forked(self, e: dict[str, Any], at: str) -> None:
        """A fork's record: the events that follow it, `copied_events` of them, are the
        source's (engine/fork.py), not the fork's spend."""
        self.run["copied_through"] = e["originator_version"] + int(e["copied_events"])

    def _on_eval_fork(self, e: dict[str, Any], at: str) -> None:
        """An eval names each fork it runs (`EvalForkStarted`): its spend is the eval's."""
        forks = self.run.setdefault("eval_forks", [])
        if not any(f["run_id"] == e["fork_run_id"] for f in forks):
            forks.append(
                {"run_id": e["fork_run_id"], "source_run_id": e["source_run_id"],
                 "step": e["from_step"]}
            )  # fmt: skip

    def _on_claimed(self, e: dict[str, Any], at: str) -> None:
        self.run["owner"] = e["owner"]
        self.run["lease_expires_at"] = e.get("lease_expires_at")

    def _on_released(self, e: dict[str, Any], at: str) -> None:
        self.run.update(owner=None, lease_expires_at=None)

    def _on_step_started(self, e: dict[str, Any], at: str) -> None:
        self.run.update(phase=e["phase"], current_step_index=e["step_index"])
        step = {
            "step_index": e["step_index"],
            "step_id": e["step_id"],
            "instance_id": e.get("instance_id") or e["step_id"],
            "kind": e.get("kind") or ("tool" if e["phase"] == "a" else "agent"),
            "phase": e["phase"],
            "tool": e.get("tool"),
            "agent_archetype": e.get("agent_archetype"),
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
        if self._copy:
            step["copied"] = True  # a fork's step taken from its source: not run here
        for index, known in enumerate(self.steps):
            if known["instance_id"] == step["instance_id"]:
                self.steps[index] = step  # the same instance started again
                return
        self.steps.append(step)

    def _on_step_waiting(self, e: dict[str, Any], at: str) -> None:
        self._step(e).update(status="waiting", waiting_for=e.get("reason"))
        awaiting = e.get("awaiting") or {}
        if awaiting.get("kind") == "person":
            self.run["waiting_for_person"] = {
                "instance_id": e["instance_id"],
                "owner": awaiting.get("owner"),
                "issue_id": awaiting.get("issue_id"),
            }

    def _on_decided(self, e: dict[str, Any], at: str) -> None:
        """A ladder's rung (escalate, consult, triage, a person, a gate's rollback): kept
        on the run, and on the step instance it starts. An adaptive loop's turn: kept in
        the run's `loop` (`projections/loop_turns.py`)."""
        if e.get("loop"):
            loop = self.run.get("loop") or {"name": None, "turns": [], "ending": None}
            self.run["loop"] = fold_turn(loop, e, at, self.run.get("recipe_id"))
        rung = e.get("rung")
        if not rung:
            return
        entry = {
            "at": at,
            "kind": rung.get("kind"),
            "subject": rung.get("subject"),
            "instance_id": e.get("instance_id"),
            "from_model": rung.get("from_model"),
            "to_model": rung.get("to_model"),
            "gate": rung.get("gate"),
            "reason": e.get("reason", ""),
        }
        self.run.setdefault("ladder", []).append({k: v for k, v in entry.items() if v is not None})

    def _on_answered(self, e: dict[str, Any], at: str) -> None:
        self._step(e).update(status="answered", completed_at=at, waiting_for=None)
        self.run.pop("waiting_for_person", None)

    def _on_ladder_call(self, e: dict[str, Any], at: str) -> None:
        step = self._step(e)
        step.setdefault("ladder_calls", []).append(
            {
                "which": e["which"],
                "provider": e["provider"],
                "model": e["model"],
                "usage": e.get("usage"),
                "cost_usd": e.get("cost_usd"),
                "output_preview": one_line(e["output"]),
            }
        )
        self._charge(step, e.get("cost_usd"))

    def _on_item_call(self, e: dict[str, Any], at: str) -> None:
        """A checked loop's draft or check: a call paid for, charged to its step."""
        self._charge(self._step(e), e.get("cost_usd"))

    def _on_triage(self, e: dict[str, Any], at: str) -> None:
        self._step(e)["triage"] = {
            k: e.get(k) for k in ("decision", "asked", "confidence", "reason", "overruled")
        }

    def _charge(self, step: Step, cost: float | None) -> None:
        """Every reply paid for counts: the step's and the run's totals. A fork's copy of
        its source's reply was paid by the source: it is the fork's `copied_cost_usd`."""
        if cost is None:
            return
        step["spent_usd"] = round(step.get("spent_usd", 0.0) + cost, 9)
        total = "copied_cost_usd" if self._copy else "cost_usd"
        self.run[total] = round(self.run.get(total, 0.0) + cost, 9)

    def _on_receipt(self, e: dict[str, Any], at: str) -> None:
        self._step(e)["receipt_id"] = e["receipt_id"]

    def _on_agent(self, e: dict[str, Any], at: str) -> None:
        self._step(e).update(
            agent_id=e["agent_id"],
            tier=e["tier"],
            provider=e["provider"],
            model=e["model"],
            prompt_hash=e["prompt_hash"],
            usage=e["usage"],
            latency_ms=e["latency_ms"],
            attempts=e.get("attempts", 1),
            cost_usd=e.get("cost_usd"),
        )
        step = self._step(e)
        if not e.get("repeats_items"):  # a checked loop's drafts and checks are charged each
            self._charge(step, e.get("cost_usd"))
        for key in ("request_ref", "contract"):
            if e.get(key) is not None:
                step[key] = e[key]
        if e.get("micro_step") == "finding":
            self._micro(e, "finding")

    def _on_micro_step(self, e: dict[str, Any], at: str) -> None:
        self._micro(e, e["micro_step"])

    def _micro(self, e: dict[str, Any], name: str) -> None:
        """A T1 agent's calls, in order: triage, finding (the step's reply), evidence."""
        entry = {
            "micro_step": name,
            "prompt_type": e["prompt_type"],
            "output_preview": " ".join(e["output"].split())[:200],
            "usage": e["usage"],
            "latency_ms": e["latency_ms"],
            "request_ref": e.get("request_ref"),
        }
        entry.update((k, e[k]) for k in ("decision", "verified", "problem") if e.get(k) is not None)
        self._step(e).setdefault("micro_steps", []).append(entry)

    def _on_reply_rejected(self, e: dict[str, Any], at: str) -> None:
        step = self._step(e)
        step["rejected_replies"] = step.get("rejected_replies", 0) + 1
        self._charge(step, e.get("cost_usd"))

    def _on_stop_hook(self, e: dict[str, Any], at: str) -> None:
        self._step(e)["stop_hook"] = {
            "contract": e["contract"],
            "attempts": e["attempts"],
            "errors": e["errors"],
        }

    def _on_retried(self, e: dict[str, Any], at: str) -> None:
        self.run["retried"] = self.run.get("retried", 0) + 1
        self.run.update(status="running", error=None, completed_at=None, outcome=None)
        self.dod = None

    def _on_slot(self, e: dict[str, Any], at: str) -> None:
        name = e["slot"]
        self.slots[name] = {
            "type": e["kind"],
            "receipt_id": e.get("receipt_id"),
            "agent_id": e.get("agent_id"),
            "sha256": e["sha256"],
            "summary": e["summary"],
        }
        text = e.get("text")
        if text is not None:
            self.texts[name] = text
        else:
            self.texts.pop(name, None)

    def _on_step_completed(self, e: dict[str, Any], at: str) -> None:
        self._step(e).update(
            status="done",
            output_hash=e["output_hash"],
            output_preview=e["output_preview"],
            input_slot_refs=e["input_slot_refs"],
            completed_at=at,
            waiting_for=None,
        )

    def _on_step_failed(self, e: dict[str, Any], at: str) -> None:
        self._step(e).update(status="failed", error=e["error"], completed_at=at, waiting_for=None)

    def _on_dod(self, e: dict[str, Any], at: str) -> None:
        self.dod = {"passed": e["passed"], "results": e["results"]}

    def _on_completed(self, e: dict[str, Any], at: str) -> None:
        self._finish("done", None, at)
        self.run["outcome"] = e.get("outcome") if e.get("outcome") is not None else 0

    def _on_failed(self, e: dict[str, Any], at: str) -> None:
        self._finish("failed", e["error"], at)
        self.run["outcome"] = e.get("outcome") if e.get("outcome") is not None else 1

    def _on_cancelled(self, e: dict[str, Any], at: str) -> None:
        for step in self.steps:
            if step["status"] in ("running", "waiting"):
                step["status"] = "cancelled"
        self._finish("cancelled", f"cancelled: {e['reason']}", at)
        self.run["outcome"] = 20
        self.run.pop("waiting_for_person", None)

    def _on_children_requested(self, e: dict[str, Any], at: str) -> None:
        self._step(e)["child_recipe_id"] = e["recipe_id"]

    def _on_child_started(self, e: dict[str, Any], at: str) -> None:
        self.run.setdefault("children", []).append(
            {
                "run_id": e["run_id"],
                "instance_id": e["instance_id"],
                "recipe_id": self._step(e).get("child_recipe_id", ""),
                "index": e["index"],
                "attempt": e["attempt"],
                "status": "running",
                "started_at": at,
            }
        )

    def _on_child_ended(self, e: dict[str, Any], at: str) -> None:
        for child in self.run.get("children", []):
            if child["run_id"] == e["run_id"]:
                child.update(status=e["status"], outcome=e["outcome"], ended_at=at)

    def _on_resumed(self, e: dict[str, Any], at: str) -> None:
        self.run["resumed"] = self.run.get("resumed", 0) + 1

    def _step(self, e: dict[str, Any]) -> Step:
        """The step an event is about: by instance when the event names one, else the
        latest instance of its recipe step (receipts and replies name only the step)."""
        instance = e.get("instance_id")
        for step in reversed(self.steps):
            if (step["instance_id"] == instance) if instance else step["step_id"] == e["step_id"]:
                if not self._copy:
                    step.pop("copied", None)  # the fork's cut step: it runs on live
                return step
        raise KeyError(instance or e["step_id"])

    def _finish(self, status: str, error: str | None, at: str) -> None:
        self.run.update(status=status, error=error, phase=None, completed_at=at)

    # -- views -------------------------------------------------------------------------------

    def consolidated(self) -> dict[str, Any]:
        """`GET /api/runs/{id}` (appendix D), as `RunDetail` validates it."""
        view = {k: v for k, v in self.run.items() if k not in _INTERNAL and not _unset(k, v)}
        view["task"] = {"description": self.run["task"]["description"]}
        view["steps"] = [_step_summary(s) for s in self.steps]
        view["cache_summary"] = {
            slot: {"type": v["type"], "preview": one_line(v["summary"])}
            for slot, v in self.slots.items()
        }
        view["dod"] = self.dod
        view["routing"] = self.run.get("routing")
        view["version"] = self.version
        return view

    def step_log(self) -> list[Step]:
        """`GET /api/runs/{id}/steps`: every step instance with its observability fields."""
        return [dict(s) for s in self.steps]


#: Run fields the consolidated view leaves out (`routing` is added back as it is).
_INTERNAL = frozenset({"routing", "copied_through"})


def _unset(key: str, value: object) -> bool:
    """Optional run fields appear in the view only while they have a value."""
    return value is None and key in _OPTIONAL_RUN_FIELDS


_OPTIONAL_RUN_FIELDS = frozenset(
    {
        "owner", "lease_expires_at", "damage", "resumed", "outcome", "cost_usd", "parent",
        "children", "loop", "forks", "copied_cost_usd", "eval_forks",
    }
)  # fmt: skip


def _skeleton(run_id: str, at: str) -> dict[str, Any]:
    """The view of a run whose `RunStarted` could not be read: what its id and time tell."""
    return {
        "run_id": run_id,
        "recipe_id": "",
        "session_id": "",
        "trace_id": "",
        "status": "damaged",
        "phase": None,
        "current_step_index": 0,
        "total_steps": 0,
        "created_at": at,
        "updated_at": at,
        "completed_at": None,
        "task": {"description": "", "session_plan_task_id": None, "initial_args": {}},
        "recipe_fingerprint": "",
        "routing": None,
        "error": None,
    }


def _step_summary(s: Step) -> dict[str, Any]:
    summary = {
        "step_id": s["step_id"],
        "phase": s["phase"],
        "status": s["status"],
        "output_slot": s["output_slot"],
    }
    optional = {
        "instance_id": s["instance_id"] if s["instance_id"] != s["step_id"] else None,
        "kind": s["kind"] if s["kind"] not in ("tool", "agent") else None,
        "tool": s["tool"],
        "agent_archetype": s["agent_archetype"],
        "output_preview": s["output_preview"],
        "error": s["error"],
        "spent_usd": s.get("spent_usd"),
        "copied": s.get("copied"),
    }
    summary.update((k, v) for k, v in optional.items() if v is not None)
    return summary


Handler = Callable[[RunView, dict[str, Any], str], None]
#: Keyed by stored name: the names are the store's stable contract, not the classes.
_HANDLERS: dict[str, Handler] = {
    "RunStarted": RunView._on_started,
    "RunClaimed": RunView._on_claimed,
    "RunForked": RunView._on_forked,
    "EvalForkStarted": RunView._on_eval_fork,
    "RunReleased": RunView._on_released,
    "StepStarted": RunView._on_step_started,
    "StepWaiting": RunView._on_step_waiting,
    "ReceiptIssued": RunView._on_receipt,
    "AgentResponded": RunView._on_agent,
    "AgentMicroStepResponded": RunView._on_micro_step,
    "SlotWritten": RunView._on_slot,
    "StepCompleted": RunView._on_step_completed,
    "StepFailed": RunView._on_step_failed,
    "DodChecked": RunView._on_dod,
    "RunCompleted": RunView._on_completed,
    "RunFailed": RunView._on_failed,
    "RunCancelled": RunView._on_cancelled,
    "RunResumed": RunView._on_resumed,
    "ChildRunsRequested": RunView._on_children_requested,
    "ChildRunStarted": RunView._on_child_started,
    "ChildRunEnded": RunView._on_child_ended,
    "AgentReplyRejected": RunView._on_reply_rejected,
    "StopHook": RunView._on_stop_hook,
    "RunRetried": RunView._on_retried,
    "FlowDecided": RunView._on_decided,
    "HumanAnswered": RunView._on_answered,
    "LadderCallRecorded": RunView._on_ladder_call,
    "TriageDecided": RunView._on_triage,
    "ForEachItemDrafted": RunView._on_item_call,
    "ForEachItemChecked": RunView._on_item_call,
}
#: Event types only a run's stream carries: one of them from an unknown stream is a run
#: whose `RunStarted` is missing.
RUN_EVENT_NAMES = frozenset(_HANDLERS)


def one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def build_run_view(events: Iterable[DomainEvent], at_version: int | None = None) -> RunView:
    view = RunView()
    for event in events:
        if at_version is not None and event.originator_version > at_version:
            break
        view.apply(event)
    return view
