"""Reactions as tracked policies.

A policy has a name, the event types it follows, and a pure decision from an event to
commands on other aggregates. The runner here reads the log after the policy's tracking
position, lets the policy decide, and records the new events *and* the position of the
event reacted to in one transaction (the library's process recorder), through the store's
one `save`. A crash between a run's commit and the reaction loses nothing: the next
catch-up, in any process, reacts; and a reaction is never recorded twice, because the
tracking row only moves forward (a second process's attempt fails and is skipped).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from eventsourcing.persistence import IntegrityError, MapperDeserialisationError, Tracking

from controlroom.domain.aggregate import Aggregate
from controlroom.domain.events import EVENT_TYPES, DomainEvent
from controlroom.domain.issue import (
    Issue,
    open_dod_issues,
    open_file_conflict_issue,
    open_stop_hook_issue,
)
from controlroom.domain.outcomes import StepOutcome
from controlroom.domain.run import Run
from controlroom.domain.run_events import DodChecked, StepFailed, StopHook
from controlroom.eventstore.store import EventStore

log = logging.getLogger("controlroom.policies")
A = TypeVar("A", bound=Aggregate)


class Unit:
    """What one reaction reads and changes: aggregates loaded from the store (or made in
    this reaction), and the ones with new events to record together."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._changed: dict[str, Aggregate] = {}

    def get(self, cls: type[A], aggregate_id: str) -> A | None:
        found = self._changed.get(aggregate_id)
        if isinstance(found, cls):
            return found
        return self.store.load(cls, aggregate_id)

    def add(self, aggregate: Aggregate) -> None:
        self._changed[aggregate.id] = aggregate

    @property
    def changed(self) -> list[Aggregate]:
        return list(self._changed.values())


class Policy(Protocol):
    name: str
    #: Stored names of the event types the policy reacts to.
    follows: frozenset[str]

    def react(self, event: DomainEvent, unit: Unit) -> None:
        """Decide what the event calls for; add changed aggregates to the unit."""
        ...


class DodIssuePolicy:
    """A failed Definition of Done check opens an issue, exactly once."""

    name = "policy.dod_issues"
    follows = frozenset({DodChecked.type_name})

    def react(self, event: DomainEvent, unit: Unit) -> None:
        assert isinstance(event, DodChecked)
        if event.passed:
            return
        run = unit.get(Run, event.originator_id)
        if run is None or run.recipe is None:
            return
        for issue in open_dod_issues(
            run.id,
            run.recipe.recipe_id,
            run.session_id,
            event.timestamp,
            list(event.results),
            lambda issue_id: unit.get(Issue, issue_id),
        ):
            unit.add(issue)


class AgentOutputIssuePolicy:
    """STOP_HOOK (an agent's replies broke their contract every time) opens an issue of its
    own kind, "agent output invalid", exactly once, with the raw replies as evidence."""

    name = "policy.agent_output_issues"
    follows = frozenset({StopHook.type_name})

    def react(self, event: DomainEvent, unit: Unit) -> None:
        assert isinstance(event, StopHook)
        run = unit.get(Run, event.originator_id)
        if run is None or run.recipe is None:
            return
        issue = open_stop_hook_issue(
            event,
            run.recipe.recipe_id,
            run.session_id,
            lambda issue_id: unit.get(Issue, issue_id) is not None,
        )
        if issue is not None:
            unit.add(issue)


class FileConflictIssuePolicy:
    """A `write_file` step that would have overwritten someone else's file (or cannot tell
    whether its own write happened) opens a "file conflict" issue, exactly once."""

    name = "policy.file_conflict_issues"
    follows = frozenset({StepFailed.type_name})

    def react(self, event: DomainEvent, unit: Unit) -> None:
        assert isinstance(event, StepFailed)
        if event.error_type != "FileWriteConflictError":
            return
        run = unit.get(Run, event.originator_id)
        if run is None or run.recipe is None:
            return
        issue = open_file_conflict_issue(
            event,
            run.file_intents.get(event.instance_id or event.step_id),
            run.recipe.recipe_id,
            run.session_id,
            lambda issue_id: unit.get(Issue, issue_id) is not None,
        )
        if issue is not None:
            unit.add(issue)


def bundled_policies() -> list[Policy]:
    from controlroom.engine.child_policies import ChildCancelPolicy, ChildRunsPolicy
    from controlroom.engine.conference_policy import ConferenceClosePolicy
    from controlroom.engine.iterations import IterationArchivePolicy
    from controlroom.engine.ladder_policies import HumanAnswerPolicy, NeedsHumanIssuePolicy
    from controlroom.engine.plan_policies import (
        FollowUpIssuePolicy,
        PlanProgressPolicy,
        PlanRunsPolicy,
        ReviewOutcomePolicy,
    )
    from controlroom.engine.status_export import StatusExportIssuePolicy

    return [
        DodIssuePolicy(),
        AgentOutputIssuePolicy(),
        FileConflictIssuePolicy(),
        PlanRunsPolicy(),
        PlanProgressPolicy(),
        ReviewOutcomePolicy(),
        FollowUpIssuePolicy(),
        ConferenceClosePolicy(),
        NeedsHumanIssuePolicy(),
        HumanAnswerPolicy(),
        IterationArchivePolicy(),
        StatusExportIssuePolicy(),
        ChildRunsPolicy(),
        ChildCancelPolicy(),
    ]


#: How far past its tracked position a policy may have read, finding nothing it follows,
#: before that position is recorded (a commit). Below it the runner only remembers how far
#: it read: an idle pass records nothing, and a new process rereads at most this many events
#: (through the store's index on event types: eventstore/sqlite_recorder.py, pg_recorder.py).
SKIP_AHEAD = 500


class PolicyRunner:
    def __init__(self, store: EventStore, policies: Sequence[Policy], batch: int = 500) -> None:
        self.store = store
        self.policies = list(policies)
        self.batch = batch
        #: How far each policy has read the log, in this process: at least its tracked
        #: position, more when what it read past that held nothing it follows.
        self._read_to: dict[str, int] = {}

    def catch_up(self) -> int:
        """React to everything recorded since each policy's position; returns how many new
        events the reactions recorded. Repeats while reactions cause more reactions.

        A pass reads the log's head once; a policy that has read that far reads nothing
        (an idle pass is one query), and one that has not reads only the events of the
        types it follows."""
        total = 0
        while True:
            # Read up to the head as it is now; commits are made visible in position order (a
            # table lock on PostgreSQL, one writer on SQLite), so nothing below it comes later.
            head = self.store.max_position()
            recorded = sum(self._catch_up(policy, head) for policy in self.policies)
            total += recorded
            if not recorded:
                return total

    def status(self) -> list[tuple[str, int]]:
        return [(p.name, self.position(p.name)) for p in self.policies]

    def position(self, name: str) -> int:
        """How far the policy has read: its tracked position, or further in this process."""
        return max(self._read_to.get(name, 0), self.store.tracked_position(name))

    def _catch_up(self, policy: Policy, head: int) -> int:
        if self._read_to.get(policy.name, 0) >= head:
            return 0
        topics = EVENT_TYPES.topics_for(policy.follows)
        recorded = 0
        tracked = self.store.tracked_position(policy.name)
        position = max(tracked, self._read_to.get(policy.name, 0))
        while position < head:
            notes = self.store.recorder.select_notifications(
                start=position,
                limit=self.batch,
                stop=head,
                topics=topics,
                inclusive_of_start=False,
            )
            if not notes:
                # Nothing it follows up to the head: remembered, so the next pass does not
                # read the same stretch again; recorded only when the stretch is long (each
                # record is a commit), so a new process rereads at most SKIP_AHEAD events.
                if head - tracked >= SKIP_AHEAD:
                    self._advance(policy.name, head)
                break
            for note in notes:
                try:
                    event = self.store.mapper.to_domain_event(note)
                except MapperDeserialisationError:
                    log.exception("%s skips unreadable event at position %s", policy.name, note.id)
                    continue
                assert isinstance(event, DomainEvent)
                unit = Unit(self.store)
                policy.react(event, unit)
                if not any(a.pending_count for a in unit.changed):
                    continue
                try:
                    recorded += len(
                        self.store.save(*unit.changed, tracking=Tracking(policy.name, note.id))
                    )
                except IntegrityError:
                    # Another process reacted to this event first: start again after the
                    # position it recorded.
                    break
            else:
                # What it followed in this batch is recorded as read (the reactions recorded
                # their positions with them; the rest is one commit).
                self._advance(policy.name, notes[-1].id)
                tracked = position = notes[-1].id
                if len(notes) < self.batch:
                    break  # nothing more it follows up to the head
                continue
            tracked = position = self.store.tracked_position(policy.name)
            self._read_to.pop(policy.name, None)
            continue
        self._read_to[policy.name] = max(self._read_to.get(policy.name, 0), head)
        return recorded

    def _advance(self, name: str, position: int) -> None:
        if self.store.tracked_position(name) >= position:
            return
        with contextlib.suppress(IntegrityError):  # another process moved it already
            self.store.save(tracking=Tracking(name, position))


class StepDelivery:
    """A policy that completes a waiting step when an event of another aggregate arrives
    (a child run finishing, a human answering). `route` is the pure decision: which run and
    step instance the event is for, and the outcome it delivers; None when it is for none."""

    def __init__(
        self,
        name: str,
        follows: frozenset[str],
        route: Callable[[DomainEvent], tuple[str, str, StepOutcome] | None],
    ) -> None:
        self.name, self.follows, self.route = name, follows, route

    def react(self, event: DomainEvent, unit: Unit) -> None:
        target = self.route(event)
        if target is None:
            return
        run_id, instance, outcome = target
        run = unit.get(Run, run_id)
        # Idempotent: a step no longer waiting (delivered already, run cancelled) records
        # nothing.
        if run is not None and run.deliver(event.timestamp, instance, outcome):
            unit.add(run)
