"""`controlroom replay-test`: a recorded run as a regression test.

The run is executed again, its recipe as the workspace defines it now, in a scratch copy
of the workspace with a store of its own (the source run and its store are only read),
every model request answered from the source run's own replies by the request's sha256
(`engine/replay_recording.py`). It passes when the replay ends as the source did, with
the same final slots and the same DoD verdicts. A request the recording does not hold
(a prompt template, a recipe, a tool or a model changed) fails it, naming the step, the
recorded and the new request hashes and a diff of the two requests.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controlroom.domain.errors import BadInputError, RunNotFoundError
from controlroom.domain.eval_step import EvalForksStep, EvalForkStarted
from controlroom.domain.events import DomainEvent
from controlroom.domain.recipe import Recipe
from controlroom.domain.run import Run, RunStatus
from controlroom.domain.run_events import (
    AgentMicroStepResponded,
    AgentReplyRejected,
    AgentResponded,
    DodChecked,
    FileWritten,
    HumanAnswered,
    ModelAttemptFailed,
    ModelRequestRecorded,
    ReceiptIssued,
    RunOrigin,
    RunRetried,
    RunStarted,
    SlotWritten,
    StepFailed,
)
from controlroom.domain.texts import StoredText, referred_texts
from controlroom.engine.child_policies import tree_runs
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.ports import process_owner
from controlroom.engine.replay_recording import (
    Recording,
    RequestMiss,
    neutral_key,
    recorded_replies,
    replay_clients,
    run_neutral,
)
from controlroom.engine.request_text import request_diff
from controlroom.engine.service import RunRequest, RunService
from controlroom.engine.tree_driver import drive_tree
from controlroom.eventstore.config import state_dir
from controlroom.eventstore.store import EventStore
from controlroom.models.agents import AgentDirectory, make_client
from controlroom.models.config import load_models_config

#: What a workspace's state folder holds that is not configuration: never copied.
_STATE_FILES = ("*.sqlite", "*.sqlite-*", "*.duckdb", "*.duckdb.wal", "*.lock", "evals")


@dataclass(frozen=True)
class StepMismatch:
    """A request of the replay the recording did not hold."""

    step: str
    recorded_ref: str | None
    new_ref: str
    reason: str
    diff: str

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "recorded_ref": self.recorded_ref,
            "new_ref": self.new_ref,
            "reason": self.reason,
            "diff": self.diff,
        }


@dataclass
class ReplayReport:
    run_id: str
    replay_run_id: str
    recipe_id: str
    status: str
    replay_status: str
    requests: list[StepMismatch] = field(default_factory=list)
    #: Slots whose final content differs: (slot, recorded sha256, replayed sha256).
    slots: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    #: DoD verdicts that differ: (check index, recorded passed, replayed passed).
    dod: list[tuple[int, bool | None, bool | None]] = field(default_factory=list)
    answered: int = 0
    notes: list[str] = field(default_factory=list)
    #: The runs below the root (a tree's child runs), recorded and replayed, in the order
    #: they started: "recipe status" each.
    tree: list[str] = field(default_factory=list)
    replay_tree: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        same_end = self.status == self.replay_status and self.tree == self.replay_tree
        return same_end and not self.requests and not self.slots and not self.dod

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "replay_run_id": self.replay_run_id,
            "recipe_id": self.recipe_id,
            "passed": self.passed,
            "status": self.status,
            "replay_status": self.replay_status,
            "answered_from_recording": self.answered,
            "request_mismatches": [m.to_json() for m in self.requests],
            "slot_mismatches": [
                {"slot": s, "recorded": a, "replayed": b} for s, a, b in self.slots
            ],
            "dod_mismatches": [{"check": i, "recorded": a, "replayed": b} for i, a, b in self.dod],
            "child_runs": {"recorded": self.tree, "replayed": self.replay_tree},
            "notes": self.notes,
        }

    def lines(self) -> list[str]:
        verdict = "PASS" if self.passed else "FAIL"
        out = [
            f"{verdict} {self.run_id} ({self.recipe_id}): recorded {self.status}, "
            f"replayed {self.replay_status}; {self.answered} request(s) answered from the "
            "recording"
        ]
        for miss in self.requests:
            out.append(
                f"  step '{miss.step}': request {miss.new_ref} {miss.reason}; "
                f"recorded request {miss.recorded_ref or '(none for this step)'}"
            )
            out += [f"    {line}" for line in miss.diff.splitlines()]
        for slot, old, new in self.slots:
            out.append(f"  slot '{slot}': recorded {old or '(none)'}, replayed {new or '(none)'}")
        for index, old_passed, new_passed in self.dod:
            out.append(f"  DoD check {index}: recorded {old_passed}, replayed {new_passed}")
        if self.tree or self.replay_tree:
            same = "the same" if self.tree == self.replay_tree else "DIFFERENT"
            out.append(f"  child runs {same}: recorded {self.tree}, replayed {self.replay_tree}")
        out += [f"  note: {note}" for note in self.notes]
        return out


#: Wall-clock figures a slot may quote (an eval report's latencies): measured, never
#: replayed, so slots are compared without them.
_MEASURED = re.compile(r"\b\d+(?:\.\d+)? ?ms\b")


#: What a file write's record says of the file before it: the replay's scratch copy.
_WORKSPACE_STATE = ("sha256_before", "already_applied")


def _calm(text: str) -> str:
    return _MEASURED.sub("<measured>", run_neutral(text))


def final_slots(events: list[DomainEvent], neutral: bool = False) -> dict[str, str]:
    """Each slot's last content hash. `neutral`: a slot whose content names a drawn id, a
    time or a measured duration (a per-run report's path, a task packet's id, an eval's
    latencies) is hashed without them, so a replay, a run of its own, compares equal when
    all else is; and a file written from a slot's text (its receipt names the text's
    sha256) compares as that text does."""
    hashes = {e.slot: e.sha256 for e in events if isinstance(e, SlotWritten)}
    if not neutral:
        return hashes
    receipts = {e.receipt_id: e.output for e in events if isinstance(e, ReceiptIssued)}

    def calmed_hash(text: str) -> str:
        return "neutral:" + hashlib.sha256(_calm(text).encode()).hexdigest()

    # The texts slots held, by their sha256: what a write-file step's record names.
    written = {
        e.sha256: calmed_hash(e.text)
        for e in events
        if isinstance(e, SlotWritten) and e.text is not None and _calm(e.text) != e.text
    }
    for e in events:
        if not isinstance(e, SlotWritten):
            continue
        content = e.text if e.text is not None else receipts.get(e.receipt_id or "")
        record = _as_record(content)
        if isinstance(record, dict) and "path" in record and "sha256" in record:
            # A file written: what it held before is the workspace the replay was given
            # (a scratch copy), not what the run made.
            content = {k: v for k, v in record.items() if k not in _WORKSPACE_STATE}
            if record["sha256"] in written:  # from a calmed text: its hash and size are its
                content |= {"sha256": written[record["sha256"]], "bytes": None}
        shown = content if isinstance(content, str) else json.dumps(content, sort_keys=True)
        calmed = _calm(shown)
        if calmed != shown or record is not content:
            hashes[e.slot] = "neutral:" + hashlib.sha256(calmed.encode()).hexdigest()
    return hashes


def _as_record(content: Any) -> Any:
    """A write-file step's slot text is its record as JSON: read back as the record."""
    if isinstance(content, str) and content.startswith("{") and '"sha256"' in content:
        try:
            return json.loads(content)
        except ValueError:
            return content
    return content


def dod_verdicts(events: list[DomainEvent]) -> dict[int, bool]:
    checked = [e for e in events if isinstance(e, DodChecked)]
    return {r.index: r.passed for r in checked[-1].results} if checked else {}


def scratch_copy(source: Path, target: Path, events: list[DomainEvent]) -> list[str]:
    """The workspace as the run found it, as near as its events tell: a copy without the
    store, the files the run created removed. Returns what could not be put back."""

    def ignore(folder: str, names: list[str]) -> set[str]:
        if Path(folder).resolve() != state_dir(source).resolve():
            return set()
        import fnmatch

        return {n for n in names if any(fnmatch.fnmatch(n, p) for p in _STATE_FILES)}

    shutil.copytree(source, target, ignore=ignore, symlinks=True)
    notes: list[str] = []
    for event in events:
        if not isinstance(event, FileWritten) or event.already_applied:
            continue
        path = target / event.path
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != (
            event.sha256_after
        ):
            continue  # changed since: replayed against what is there now
        if event.sha256_before is None:
            path.unlink()
        else:
            notes.append(f"{event.path} was replaced by the run; replayed against its new text")
    return notes


def _source_request(
    service: RunService, events: list[DomainEvent], step: str, miss: RequestMiss
) -> tuple[str | None, dict[str, Any] | None]:
    """The request the source run sent at that step (the one of the same prompt type when
    the step made several calls), as it was sent."""
    replies = [
        e
        for e in events
        if isinstance(
            e, AgentResponded | AgentReplyRejected | ModelAttemptFailed | AgentMicroStepResponded
        )
        and step in (e.step_id, getattr(e, "instance_id", None))
    ]
    same_type = [e for e in replies if getattr(e, "prompt_type", None) == miss.prompt_type]
    chosen = (same_type or replies)[:1]
    ref = chosen[0].request_ref if chosen else None
    for event in events:
        if isinstance(event, ModelRequestRecorded) and event.ref == ref:
            return ref, service.request_body(event)
    return ref, None


def _step_of(miss: RequestMiss, replay_events: list[DomainEvent], source: list[DomainEvent]) -> str:
    """The step that made the request: the replay's step that failed with it, else the
    source's step of the same prompt type."""
    for event in replay_events:
        if isinstance(event, StepFailed) and miss.ref in event.error:
            return event.instance_id or event.step_id
    for event in source:
        if isinstance(event, AgentResponded) and event.prompt_type == miss.prompt_type:
            return event.step_id
    return f"({miss.agent_archetype}/{miss.prompt_type})"


def _eval_forks(events: list[DomainEvent]) -> list[str]:
    """The forks an eval ran (each named before its first event)."""
    return list(dict.fromkeys(e.fork_run_id for e in events if isinstance(e, EvalForkStarted)))


def _eval_sources(events: list[DomainEvent]) -> list[str]:
    """The runs an eval was given to fork (none for any other run)."""
    started = events[0]
    assert isinstance(started, RunStarted)
    if not any(isinstance(s, EvalForksStep) for s in Recipe.model_validate(started.recipe).steps):
        return []
    return [str(source) for source in started.task.args.get("sources") or []]


def _copy_runs(source: EventStore, target: EventStore, run_ids: list[str]) -> None:
    """Each run's stream, and the texts its events refer to (its requests' prompts, its
    receipts' outputs), written into `target` as recorded."""
    for run_id in run_ids:
        events = source.stream(run_id)
        digests = [
            d for e in events if isinstance(e, ModelRequestRecorded) for d in referred_texts(e.body)
        ] + [d for e in events for d in e.detached_texts().values()]
        for digest, text in source.texts(list(dict.fromkeys(digests))).items():
            if not target.texts([digest]):
                target.save(StoredText.of(events[0].timestamp, text))
        if events:
            target.put_recorded(events)


def _tree_summary(tree: list[Run]) -> list[str]:
    """The runs below a tree's root (`tree_runs`, the root first), in the order they
    started: each "recipe status"."""
    return [f"{run.recipe.recipe_id if run.recipe else '?'} {run.status}" for run in tree[1:]]


async def replay_test(ctx: Context, run_id: str, scratch: Path) -> ReplayReport:
    """Replay `run_id` in `scratch` (a folder that must not exist yet) and compare. A run
    that started child runs is replayed with its tree: each child runs again in the
    replay, its requests answered from the child's own recorded replies."""
    events = ctx.store.stream(run_id)
    if not events or not isinstance(events[0], RunStarted):
        raise RunNotFoundError(run_id)
    started = events[0]
    source_run = ctx.store.load(Run, run_id)
    assert source_run is not None
    if source_run.origin.kind == "parent_step":
        raise BadInputError(
            f"{run_id} is a child run of {source_run.origin.root_run_id}: replay its root, "
            "which replays the whole tree"
        )
    source_tree = list(tree_runs(ctx.store, source_run))
    recorded = [run.id for run in source_tree] + _eval_forks(events)
    tree_events = [e for run in recorded for e in ctx.store.stream(run)]
    notes = scratch_copy(ctx.workspace.root, scratch, tree_events)

    recording = Recording(recorded_replies(tree_events))
    source_bodies = RunService(ctx)
    recording.neutral = {
        neutral_key(source_bodies.request_body(e)): e.ref
        for e in tree_events
        if isinstance(e, ModelRequestRecorded)
    }
    config = load_models_config(scratch)
    agents = AgentDirectory(config, replay_clients(config.all_providers(), recording, make_client))
    # The store is named explicitly: a CONTROLROOM_STORE in the environment (the user's
    # PostgreSQL, say) must never receive the replay's events.
    store = EventStore.for_workspace(
        scratch,
        f"sqlite://{(state_dir(scratch) / 'events.sqlite').resolve()}",
        max_event_bytes=ctx.settings.max_event_bytes,
    )
    replay_ctx = Context.open(scratch, store=store, agents=agents, settings=ctx.settings)
    try:
        # An eval forks runs of its store: the replay's store gets them as recorded.
        _copy_runs(ctx.store, store, _eval_sources(events))
        service = RunService(replay_ctx)
        request = RunRequest(
            started.recipe_id,
            started.task.args,
            description=started.task.description,
            is_recipe_id=True,
            session_plan_task_id=started.task.session_plan_task_id,
            origin=RunOrigin(kind="user", via="replay-test"),
        )
        replayed = await service.execute(service.start(request))
        # What people did to the run, as recorded and in order: each answer given when the
        # replay waits for one, each retry made when the replay has failed where it had.
        for done in [e for e in events if isinstance(e, HumanAnswered | RunRetried)]:
            if isinstance(done, RunRetried):
                if replayed.status != RunStatus.FAILED:
                    break
                replayed = service.retry(replayed.id, done.step_id)
            else:
                waiting = replayed.waiting_on
                if replayed.awaiting.get("kind") != "person" or waiting is None:
                    break
                now = replay_ctx.clock.now()
                if not replayed.answer(now, waiting, done.resolution, done.by, model=done.model):
                    break
                replay_ctx.store.save(replayed)
            replayed = await service.execute(replayed)
        if replayed.awaiting.get("kind") == "child_runs":
            # The children start and end through the tracked policies, as under `run`.
            followers = Followers(replay_ctx.store, exporters=[])
            replayed = await drive_tree(replay_ctx, replayed, followers, process_owner())
        replay_events = replay_ctx.store.stream(replayed.id)
        replay_tree = _tree_summary(list(tree_runs(replay_ctx.store, replayed)))
    finally:
        replay_ctx.close()

    report = ReplayReport(
        run_id=run_id,
        replay_run_id=replayed.id,
        recipe_id=started.recipe_id,
        status=str(source_run.status),
        replay_status=str(replayed.status),
        answered=recording.answered,
        tree=_tree_summary(source_tree),
        replay_tree=replay_tree,
        notes=notes
        + (
            [
                f"{recording.answered_neutral} request(s) named the run's own ids or times "
                "and were matched without them"
            ]
            if recording.answered_neutral
            else []
        ),
    )
    source_service = RunService(ctx)
    for miss in recording.misses:
        step = _step_of(miss, replay_events, events)
        old_ref, old_body = _source_request(source_service, events, step, miss)
        diff = request_diff(old_body, miss.body, f"recorded {old_ref}", f"replayed {miss.ref}")
        report.requests.append(StepMismatch(step, old_ref, miss.ref, miss.reason, diff))
    old_slots = final_slots(events, neutral=True)
    new_slots = final_slots(replay_events, neutral=True)
    for slot in sorted(set(old_slots) | set(new_slots)):
        if old_slots.get(slot) != new_slots.get(slot):
            report.slots.append((slot, old_slots.get(slot), new_slots.get(slot)))
    old_dod, new_dod = dod_verdicts(events), dod_verdicts(replay_events)
    for index in sorted(set(old_dod) | set(new_dod)):
        if old_dod.get(index) != new_dod.get(index):
            report.dod.append((index, old_dod.get(index), new_dod.get(index)))
    return report
