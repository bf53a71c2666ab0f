"""Audit: a run's events with their hashes, views as of any version, and tamper checks.

Everything here reads the event store only. It never calls a tool, a model or the clock,
so replaying a run is possible long after those have changed or gone.

The hash chain shows that a run's events agree with each other, not who wrote them: anyone
who can write to the store can compute it, and append a `RunCompleted` to a failed run
that verifies. Only a signed checkpoint (projections/checkpoints.py) anchors events, so a
check says which events no checkpoint covers (`Uncovered`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controlroom.domain.events import GENESIS_HASH, DomainEvent, parse_topic, stored_content_hash
from controlroom.domain.run_events import RunCancelled, RunCompleted, RunFailed
from controlroom.eventstore.store import EventStore
from controlroom.projections.run_view import RunView, build_run_view

#: The events that end a run: when one is not covered, neither is the run's outcome.
OUTCOME_NAMES = frozenset({RunCompleted.type_name, RunFailed.type_name, RunCancelled.type_name})


@dataclass(frozen=True)
class Problem:
    version: int
    kind: str  # changed | missing | reordered | unreadable
    message: str


@dataclass
class Uncovered:
    """One stream's events that no checkpoint covers: their hash chain shows only that they
    agree with each other, and anyone with write access to the store could have written
    them. `after_position` is the checkpoint's position (None: no checkpoint was read)."""

    stream_id: str
    first_version: int
    last_version: int
    last_type: str
    count: int = 1
    after_position: int | None = None
    first_position: int | None = None
    last_position: int | None = None

    def add(self, version: int, type_name: str, position: int | None = None) -> None:
        self.count += 1
        self.last_version, self.last_type, self.last_position = version, type_name, position

    @property
    def outcome_unproven(self) -> bool:
        return self.last_type in OUTCOME_NAMES

    def describe(self) -> str:
        plural = self.count != 1
        if plural:
            what = f"{self.count} events (v{self.first_version}–v{self.last_version})"
            verb, agree, them = "are", "they agree with each other", "them"
        else:
            what = f"1 event (v{self.last_version}, {self.last_type})"
            verb, agree, them = "is", "it follows the events before it", "it"
        if self.after_position is not None:
            what += f" after position {self.after_position}"
            where, how = "not covered by the checkpoint", "appended"
        else:
            where, how = "not covered by any checkpoint", "written"
        text = (
            f"{self.stream_id}: {what} {verb} {where}: the hash chain shows only that {agree}, "
            f"and anyone with write access to the store could have {how} {them}"
        )
        if self.outcome_unproven:
            text += (
                f"; the last, v{self.last_version}, is {self.last_type}: the run's outcome is "
                "not proven"
            )
        return text


def uncovered(store: EventStore, run_id: str) -> Uncovered | None:
    """A run's events as a check without a checkpoint leaves them: none is covered."""
    first = store.recorder.select_events(run_id, limit=1)
    last = store.recorder.select_events(run_id, desc=True, limit=1)
    if not first or not last:
        return None
    low, high = first[0].originator_version, last[0].originator_version
    return Uncovered(run_id, low, high, parse_topic(last[0].topic)[0], count=high - low + 1)


def audit_trail(events: list[DomainEvent]) -> list[dict[str, Any]]:
    return [
        {
            "version": e.originator_version,
            "type": e.type_name,
            "timestamp": e.timestamp.isoformat().replace("+00:00", "Z"),
            "prev_hash": e.prev_hash,
            "event_hash": e.event_hash,
            "data": e.payload(),
        }
        for e in events
    ]


def replay(store: EventStore, run_id: str, at_version: int | None = None) -> RunView:
    """The run's views rebuilt from its events alone, as they stood at `at_version`."""
    return build_run_view(store.stream(run_id), at_version)


def verify(store: EventStore, run_id: str) -> list[Problem]:
    """Check the stored stream against its hash chain; the first problem comes first."""
    problems: list[Problem] = []
    previous_hash = GENESIS_HASH
    expected_version = 1
    for stored in store.recorder.select_events(run_id):
        version = stored.originator_version
        if version != expected_version:
            problems.append(
                Problem(
                    expected_version,
                    "missing",
                    f"event v{expected_version} is missing (next is v{version})",
                )
            )
        expected_version = version + 1
        try:
            event = store.mapper.to_domain_event(stored)
        except Exception as exc:
            problems.append(
                Problem(version, "unreadable", f"event v{version} cannot be read: {exc}")
            )
            previous_hash = ""
            continue
        assert isinstance(event, DomainEvent)
        name, _ = parse_topic(stored.topic)
        if stored_content_hash(name, stored.state.decode("utf-8")) != event.event_hash:
            problems.append(
                Problem(
                    version,
                    "changed",
                    f"event v{version} ({event.type_name}) was changed: its "
                    "content no longer matches its hash",
                )
            )
        elif previous_hash and event.prev_hash != previous_hash:
            problems.append(
                Problem(
                    version,
                    "reordered",
                    f"event v{version} ({event.type_name}) does not follow the "
                    "event before it: the chain is broken (reordered or an "
                    "event is missing)",
                )
            )
        previous_hash = event.event_hash
    return problems


def export_run(view: RunView, folder: Path) -> list[Path]:
    """The seed's file layout (appendix A): run.json, steps.jsonl, cache.json."""
    folder.mkdir(parents=True, exist_ok=True)
    run = dict(view.run)
    manifest = {
        k: run.get(k)
        for k in (
            "run_id",
            "recipe_id",
            "session_id",
            "status",
            "created_at",
            "updated_at",
            "completed_at",
            "task",
            "current_step_index",
            "total_steps",
            "phase",
            "error",
        )
    }
    steps = [
        {
            k: s.get(k)
            for k in (
                "step_index",
                "step_id",
                "phase",
                "tool",
                "agent_archetype",
                "agent_id",
                "status",
                "output_slot",
                "receipt_id",
                "input_slot_refs",
                "output_hash",
                "output_preview",
                "started_at",
                "completed_at",
                "error",
            )
        }
        for s in view.steps
        if s["status"] in ("done", "failed")
    ]
    cache = {
        name: {
            k: v
            for k, v in {
                "type": slot["type"],
                "receipt_id": slot["receipt_id"],
                "agent_id": slot["agent_id"],
                "text": view.texts.get(name),
                "sha256": slot["sha256"],
                "summary": slot["summary"],
            }.items()
            if v is not None
        }
        for name, slot in view.slots.items()
    }
    written = []
    for name, text in (
        ("run.json", json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"),
        ("steps.jsonl", "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in steps)),
        ("cache.json", json.dumps(cache, indent=2, ensure_ascii=False) + "\n"),
    ):
        path = folder / name
        partial = path.with_suffix(path.suffix + ".tmp")
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)  # atomic, as appendix A asks of cache.json
        written.append(path)
    return written
