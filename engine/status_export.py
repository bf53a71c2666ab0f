"""STATUS.md, exported on each change of the status (seed 002, step 7), through the write-file
step's guarantees.

`StatusExporter` is a follower: after the read models catch up (`engine/followers.py`), it
compares the status projection's position (the last event that changed any pipeline) with
the position its `StatusReport` aggregate last exported. When the status moved, it renders
STATUS.md (`projections/status_markdown.py`) and writes it as a `write_file` step writes:

- the file is opened through folders held open, never through a link, never into Control
  Room's own state (`engine/pinned_write.py`);
- it is overwritten only if it holds what the last export wrote (or there is no file): a
  file changed by someone else since is left alone, and `StatusExportFailed` (kind
  `conflict`, with the hashes) is recorded instead; a refused path likewise (`refused`);
- the intent (hash found, hash to write) is committed before the file is touched, the
  result after: a process killed in between is resolved by the file's hash on the next
  pass (written: recorded as `already_applied`; not written: written now; neither: a
  conflict), never redone blindly;
- two processes exporting at once are kept apart by the aggregate's version: one records
  the intent, the other's save is refused and it stands down (and leaves an intent younger
  than `STALE_INTENT_S` to the process that recorded it).

So each change of the status is exported once, by one process, in `run`, `resume`, `serve`
and `worker` alike (each runs the followers). Changes recorded between two passes are
exported together: the file shows the status as of the last of them.

`StatusExportIssuePolicy` makes a failed export visible: it opens a `file_conflict` issue
(once per cause), and closes it when an export succeeds again.
"""

from __future__ import annotations

import hashlib
import logging
import time
from pathlib import Path

from eventsourcing.persistence import IntegrityError

from controlroom.domain.canonical import sha256_text
from controlroom.domain.errors import FileWriteConflictError, WorkspaceError
from controlroom.domain.events import DomainEvent
from controlroom.domain.issue import Issue
from controlroom.domain.status_report import (
    STATUS_PATH,
    StatusExported,
    StatusExportFailed,
    StatusReport,
    status_report_id,
)
from controlroom.engine.pinned_write import PinnedFile, Protected
from controlroom.engine.policies import Unit
from controlroom.engine.ports import Clock, SystemClock
from controlroom.eventstore.store import EventStore
from controlroom.projections.status_markdown import render_status
from controlroom.projections.views import Views
from controlroom.tools.workspace import STATE_DIR

log = logging.getLogger("controlroom.status")
#: An intent younger than this is taken for another process's write in progress, and left
#: to it; an older one, for a write killed half-way, and resolved by the file's hash.
STALE_INTENT_S = 30.0


class StatusExporter:
    name = "export.status"

    def __init__(
        self,
        store: EventStore,
        views: Views,
        root: Path,
        *,
        path: str = STATUS_PATH,
        clock: Clock | None = None,
    ) -> None:
        self.store, self.views, self.root, self.path = store, views, root, path
        self.clock = clock or SystemClock()
        #: The status position this exporter last looked at in full, and when (monotonic):
        #: a pass that finds it unchanged reads nothing else (the server passes five times a
        #: second), except every `STALE_INTENT_S`, to resolve an intent a process left.
        self._looked: tuple[int, float] | None = None

    def catch_up(self, *, retry: bool = False) -> int:
        """Export the status if it changed since the last export (or, with `retry`, if the
        last export failed); returns how many events were recorded."""
        recorded = 0
        for _ in range(3):  # a write found done after a crash, then the newer status
            try:
                done = self._pass(retry)
            except IntegrityError:
                return recorded  # another process is exporting this change
            if not done:
                return recorded
            recorded += done
            retry, self._looked = False, None  # look again: a newer status may be due
        return recorded

    def _pass(self, retry: bool) -> int:
        now = time.monotonic()
        looked = self._looked
        if (
            not retry
            and looked is not None
            and looked[0] == self.views.pipelines.position()
            and now - looked[1] < STALE_INTENT_S
        ):
            return 0
        position, details = self.views.pipelines.snapshot()
        self._looked = (position, now)
        report = self.store.load(StatusReport, status_report_id(self.path))
        report = report or StatusReport.for_path(self.path)
        again = retry and report.last_failure is not None
        if report.pending is None and position <= report.position and not again:
            return 0
        if not details:
            return 0
        at = self.clock.now()
        pending = report.pending
        if pending is not None and (at - pending.timestamp).total_seconds() < STALE_INTENT_S:
            return 0  # another process is writing it
        data = render_status(details, position).encode("utf-8")
        intended = hashlib.sha256(data).hexdigest()
        try:
            return self._write(report, data, intended, position)
        except FileWriteConflictError as exc:
            report.failed(
                at, "conflict", str(exc), position, found=exc.found, expected=exc.expected
            )
        except WorkspaceError as exc:
            report.failed(at, "refused", str(exc), position)
        recorded = len(self.store.save(report))
        log.warning("%s not exported: %s", self.path, report.last_failure)
        return recorded

    def _write(self, report: StatusReport, data: bytes, intended: str, position: int) -> int:
        parts = [p for p in self.path.split("/") if p]
        with PinnedFile(self.root, parts, self._protected(), self.path) as target:
            now = target.sha256()
            pending = report.pending
            if pending is not None:
                # Killed after its intent was committed: the file's hash says what happened.
                if now == pending.sha256_intended:
                    target.remove_temp(pending.sha256_intended)
                    report.exported(
                        self.clock.now(),
                        pending.sha256_before,
                        pending.sha256_intended,
                        pending.bytes,
                        pending.position,
                        already_applied=True,
                    )
                    return len(self.store.save(report))
                if now != pending.sha256_before:
                    raise FileWriteConflictError(
                        self.path,
                        now,
                        {
                            "as the export read it": pending.sha256_before,
                            "what the export meant to write": pending.sha256_intended,
                        },
                        "outcome unknown: after the export recorded its intent the file came "
                        "to hold neither what it read nor what it meant to write",
                    )
            elif now is not None and now != report.sha256:
                if now == intended:  # already holds exactly this status
                    report.exported(
                        self.clock.now(), now, now, len(data), position, already_applied=True
                    )
                    return len(self.store.save(report))
                raise FileWriteConflictError(
                    self.path,
                    now,
                    {"as the last export left it": report.sha256},
                    "the file was changed by someone else since the last export (remove it, "
                    "or move it away, to let Control Room write it again)",
                )
            before = now
            if not target.writable():
                raise WorkspaceError(f"'{self.path}' is read-only: not replaced")
            report.intend(self.clock.now(), before, intended, len(data), position)
            recorded = len(self.store.save(report))  # IntegrityError: another process won
            target.replace_with(data, before)
        report.exported(self.clock.now(), before, intended, len(data), position)
        return recorded + len(self.store.save(report))

    def _protected(self) -> Protected:
        store_file = self.store.sqlite_file
        return Protected.of([self.root / STATE_DIR], [] if store_file is None else [store_file])


def default_exporters(store: EventStore, projections: object) -> list[StatusExporter]:
    """The followers that write into the workspace, for views that know it."""
    if isinstance(projections, Views) and projections.workspace is not None:
        return [StatusExporter(store, projections, projections.workspace)]
    return []


def status_issue_id(failure: StatusExportFailed) -> str:
    cause = failure.found if failure.kind == "conflict" else failure.reason
    return (
        "iss_" + sha256_text(f"{failure.originator_id}:status_export:{failure.kind}:{cause}")[:24]
    )


class StatusExportIssuePolicy:
    """A failed STATUS.md export opens a `file_conflict` issue (once per cause: the same
    edited file found again opens none); the next successful export closes them."""

    name = "policy.status_export_issues"
    follows = frozenset({StatusExportFailed.type_name, StatusExported.type_name})

    def react(self, event: DomainEvent, unit: Unit) -> None:
        if isinstance(event, StatusExportFailed):
            issue_id = status_issue_id(event)
            if unit.get(Issue, issue_id) is not None:
                return
            what = (
                "was changed by someone else"
                if event.kind == "conflict"
                else "cannot be written there"
            )
            unit.add(
                Issue.open(
                    issue_id,
                    event.timestamp,
                    kind="file_conflict",
                    title=f"STATUS.md not exported: '{event.path}' {what}",
                    detail=event.reason,
                    run_id=None,
                    session_id=None,
                    recipe_id=None,
                    check={"path": event.path, "export": event.kind},
                    evidence={
                        "path": event.path,
                        "found": event.found,
                        "expected": event.expected,
                        "position": event.position,
                    },
                )
            )
        elif isinstance(event, StatusExported):
            for failure in self.failures_before(unit, event):
                issue = unit.get(Issue, status_issue_id(failure))
                if issue is not None and issue.status == "open":
                    issue.close(
                        event.timestamp,
                        f"STATUS.md was exported again (log position {event.position})",
                        by=self.name,
                    )
                    unit.add(issue)

    @staticmethod
    def failures_before(unit: Unit, exported: StatusExported) -> list[StatusExportFailed]:
        """The failures recorded between the previous export and this one."""
        failures: list[StatusExportFailed] = []
        for record in unit.store.stream_records(exported.originator_id):
            if not isinstance(record, DomainEvent):
                continue
            if record.originator_version >= exported.originator_version:
                break
            if isinstance(record, StatusExported):
                failures = []
            elif isinstance(record, StatusExportFailed):
                failures.append(record)
        return failures
