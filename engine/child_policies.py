"""The reactions that run child runs, as tracked policies (their records and their
position commit in one transaction, so a crash never starts a child twice or forgets one).

- `ChildRunsPolicy`: a step asked for child runs, or a child ended -> record it on the
  parent, start the children that may start now (bounded by the step's `max_at_once`, a
  second attempt where seed 004's table says so), and once every child has ended for good,
  complete the parent's step with their manifest or fail it with the code that travels up.
- `ChildCancelPolicy`: a run was cancelled -> its unfinished children are cancelled too
  (each child's own cancellation reaches its children the same way: INTERRUPTED down the
  whole tree).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from controlroom.domain.child_runs import (
    ChildrenOutcome,
    ChildRunEnded,
    ChildRunsRequested,
    ChildRunsSettled,
    ChildRunStarted,
    StartChild,
    next_moves,
)
from controlroom.domain.events import DomainEvent
from controlroom.domain.ladder_spec import Ladder
from controlroom.domain.recipe import Recipe
from controlroom.domain.run import Run
from controlroom.domain.run_events import (
    RoutingDecision,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunOrigin,
    TaskSpec,
)
from controlroom.engine.policies import Unit
from controlroom.eventstore.store import EventStore

TERMINAL = frozenset({RunCompleted.type_name, RunFailed.type_name, RunCancelled.type_name})


class ChildRunsPolicy:
    name = "policy.child_runs"
    follows = frozenset({ChildRunsRequested.type_name, *TERMINAL})

    def react(self, event: DomainEvent, unit: Unit) -> None:
        if isinstance(event, ChildRunsRequested):
            parent = unit.get(Run, event.originator_id)
            if parent is not None:
                self._advance(parent, event.instance_id, event.timestamp, unit)
            return
        child = unit.get(Run, event.originator_id)
        if child is None or child.origin.kind != "parent_step" or not child.is_finished:
            return
        parent_id, instance = child.origin.parent_run_id, child.origin.parent_instance_id
        if not parent_id or not instance:
            return
        parent = unit.get(Run, parent_id)
        if parent is None:
            return
        started = next(
            (s for s in parent.journal_of(instance, ChildRunStarted) if s.run_id == child.id),
            None,
        )
        seen = any(e.run_id == child.id for e in parent.journal_of(instance, ChildRunEnded))
        if started is None or seen:
            return  # not this parent's, or recorded already (a replayed reaction)
        ended = {
            "step_id": started.step_id,
            "instance_id": instance,
            "index": started.index,
            "attempt": started.attempt,
            "run_id": child.id,
            "status": child.status.value,
            "outcome": child.outcome if child.outcome is not None else 1,
            "error": child.error,
            "slots": sorted(child.slot_values),
            "files": files_below(child),
        }
        if parent.record_for_waiting(event.timestamp, instance, [(ChildRunEnded, ended)]):
            unit.add(parent)
            self._advance(parent, instance, event.timestamp, unit)

    def _advance(self, parent: Run, instance: str, at: datetime, unit: Unit) -> None:
        if parent.waiting_on != instance or parent.current is None:
            return
        requests = parent.journal_of(instance, ChildRunsRequested)
        if not requests:
            return
        requested = requests[-1]
        moves = next_moves(
            parent.id,
            instance,
            requested,
            parent.journal_of(instance, ChildRunStarted),
            parent.journal_of(instance, ChildRunEnded),
        )
        step_id = parent.current.step.step_id
        for start in moves.start:
            if unit.get(Run, start.run_id) is None:
                unit.add(self._child(parent, instance, requested, start, at))
            parent.record_for_waiting(
                at,
                instance,
                [
                    (
                        ChildRunStarted,
                        {
                            "step_id": step_id,
                            "instance_id": instance,
                            "index": start.index,
                            "attempt": start.attempt,
                            "run_id": start.run_id,
                        },
                    )
                ],
            )
        settle = moves.settle
        if settle is not None:
            code = settle.outcome if settle.failure else (12 if settle.partial else 0)
            parent.record_for_waiting(
                at,
                instance,
                [
                    (
                        ChildRunsSettled,
                        {
                            "step_id": step_id,
                            "instance_id": instance,
                            "outcome": code,
                            "partial": settle.partial,
                        },
                    )
                ],
            )
            if settle.failure is None:
                parent.deliver(at, instance, ChildrenOutcome.of(settle))
            else:
                parent.deliver_failure(at, instance, settle.failure, settle.outcome)
        if moves.start or settle is not None:
            unit.add(parent)

    def _child(
        self,
        parent: Run,
        instance: str,
        requested: ChildRunsRequested,
        start: StartChild,
        at: datetime,
    ) -> Run:
        recipe = Recipe.model_validate(requested.recipe)
        return Run.start(
            run_id=start.run_id,
            at=at,
            recipe=recipe,
            task=TaskSpec(description=start.description, args=dict(start.args)),
            routing=RoutingDecision(
                routable=True,
                recipe_id=recipe.recipe_id,
                reason=f"started by step '{instance}' of run {parent.id}",
                initial_args=dict(start.args),
            ),
            session_id=parent.session_id,
            # One trace for the whole tree: a child's spans sit under its root's.
            trace_id=parent.trace_id,
            # a child works in its parent's workspace, whichever process starts it
            workspace=parent.workspace,
            origin=RunOrigin(
                kind="parent_step",
                parent_run_id=parent.id,
                parent_instance_id=instance,
                root_run_id=requested.root_run_id,
                depth=requested.depth,
                max_depth=requested.max_depth,
                deadline=requested.deadline,
                policy=self.name,
            ),
            ladders={name: Ladder.model_validate(data) for name, data in requested.ladders.items()},
        )


class ChildCancelPolicy:
    name = "policy.child_cancel"
    follows = frozenset({RunCancelled.type_name})

    def react(self, event: DomainEvent, unit: Unit) -> None:
        assert isinstance(event, RunCancelled)
        run = unit.get(Run, event.originator_id)
        if run is None:
            return
        for child_id in unfinished_children(run):
            child = unit.get(Run, child_id)
            if child is not None and not child.is_finished:
                child.cancel(event.timestamp, f"its parent run {run.id} was cancelled")
                unit.add(child)


def children_of(run: Run) -> list[str]:
    """Every child run `run` started, in the order it started them."""
    return [
        started.run_id
        for instance in run.journal
        for started in run.journal_of(instance, ChildRunStarted)
    ]


def unfinished_children(run: Run) -> list[str]:
    ended = {
        record.run_id
        for instance in run.journal
        for record in run.journal_of(instance, ChildRunEnded)
    }
    return [child for child in children_of(run) if child not in ended]


def files_below(run: Run) -> list[str]:
    """The files `run` wrote, with those its own children's manifests name (so a root's
    manifest lists every file its tree wrote)."""
    files = set(run.files_written)
    for instance in run.journal:
        if run.journal_of(instance, ChildRunsSettled):
            step = next((s for s in run.recipe_steps if instance.split("#")[0] == s.step_id), None)
            value = run.slot_values.get(step.output_slot) if step is not None else None
            if isinstance(value, dict) and isinstance(value.get("files"), list):
                files.update(str(f) for f in value["files"])
    return sorted(files)


def tree_runs(store: EventStore, root: Run) -> Iterator[Run]:
    """The root and every run below it, parents before their children."""
    queue = [root]
    seen = {root.id}
    while queue:
        run = queue.pop(0)
        yield run
        for child_id in children_of(run):
            if child_id in seen:
                continue
            seen.add(child_id)
            child = store.load(Run, child_id)
            if child is not None:
                queue.append(child)
