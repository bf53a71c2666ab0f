"""The STATUS.md export (seed 002, step 7) as an aggregate: each write of the status file is
recorded with the file's hash before and after, as a `write_file` step's is.

One `StatusReport` per exported path. Before the file is touched its intent is committed
(`StatusExportIntended`: the hash found, the hash to write, the status position rendered),
then the file is written and `StatusExported` recorded. So a process killed half-way is
resolved by the file's hash alone (written, not written, or changed by someone else), and
the file is never overwritten unless it holds what the last export wrote (or nothing):
otherwise `StatusExportFailed` says why, and the file is left as it is.

Pure: the engine (`engine/status_export.py`) reads the file, the clock and the status view,
and passes them in.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Literal

from pydantic import Field

from controlroom.domain.aggregate import Aggregate
from controlroom.domain.canonical import sha256_text
from controlroom.domain.events import DomainEvent

#: Where the status is exported, relative to the workspace.
STATUS_PATH = "control-room-reports/STATUS.md"


def status_report_id(path: str) -> str:
    return "sts_" + sha256_text(f"status_report:{path}")[:24]


class StatusExportIntended(DomainEvent):
    """The status as of log `position` is about to be written to `path`."""

    type_name: ClassVar[str] = "StatusExportIntended"
    path: str
    #: The file's hash when it was read; None: there was no file.
    sha256_before: str | None
    sha256_intended: str
    bytes: int
    #: The position of the last status-changing event the text shows.
    position: int


class StatusExported(DomainEvent):
    """The status file holds the status as of `position` (written now, or found written:
    `already_applied`)."""

    type_name: ClassVar[str] = "StatusExported"
    path: str
    sha256_before: str | None
    sha256_after: str
    bytes: int
    position: int
    already_applied: bool = False


class StatusExportFailed(DomainEvent):
    """The status as of `position` was not written: the file was changed by someone else
    since the last export (`conflict`), or the path was refused (a link, a folder, Control
    Room's own state; `refused`). The file is left as it was."""

    type_name: ClassVar[str] = "StatusExportFailed"
    path: str
    kind: Literal["conflict", "refused"]
    reason: str
    position: int
    #: The file's hash as found (None: no file, or unreadable).
    found: str | None = None
    #: The hashes the export could accept, by what they are.
    expected: dict[str, str | None] = Field(default_factory=dict)


STATUS_EXPORT_EVENTS = frozenset(
    {StatusExportIntended.type_name, StatusExported.type_name, StatusExportFailed.type_name}
)


class StatusReport(Aggregate):
    def __init__(self, aggregate_id: str) -> None:
        super().__init__(aggregate_id)
        self.path = ""
        #: The hash the last export left in the file (None: never exported).
        self.sha256: str | None = None
        #: The status position last exported or failed (the export is done up to there).
        self.position = 0
        self.pending: StatusExportIntended | None = None
        self.last_failure: StatusExportFailed | None = None
        #: Every failure since the last export (their issues are closed by the next export).
        self.failures: list[StatusExportFailed] = []

    @classmethod
    def for_path(cls, path: str) -> StatusReport:
        report = cls(status_report_id(path))
        report.path = path
        return report

    def intend(
        self, at: datetime, before: str | None, intended: str, size: int, position: int
    ) -> None:
        self._trigger(
            StatusExportIntended,
            at,
            path=self.path,
            sha256_before=before,
            sha256_intended=intended,
            bytes=size,
            position=position,
        )

    def exported(
        self,
        at: datetime,
        before: str | None,
        after: str,
        size: int,
        position: int,
        *,
        already_applied: bool = False,
    ) -> None:
        self._trigger(
            StatusExported,
            at,
            path=self.path,
            sha256_before=before,
            sha256_after=after,
            bytes=size,
            position=position,
            already_applied=already_applied,
        )

    def failed(
        self,
        at: datetime,
        kind: Literal["conflict", "refused"],
        reason: str,
        position: int,
        found: str | None = None,
        expected: dict[str, str | None] | None = None,
    ) -> None:
        self._trigger(
            StatusExportFailed,
            at,
            path=self.path,
            kind=kind,
            reason=reason[:2000],
            position=position,
            found=found,
            expected=expected or {},
        )

    def apply(self, event: DomainEvent) -> None:
        if isinstance(event, StatusExportIntended):
            self.path = event.path
            self.pending = event
        elif isinstance(event, StatusExported):
            self.path = event.path
            self.sha256 = event.sha256_after
            self.position = max(self.position, event.position)
            self.pending = None
            self.last_failure = None
            self.failures = []
        elif isinstance(event, StatusExportFailed):
            self.path = event.path
            self.position = max(self.position, event.position)
            self.pending = None
            self.last_failure = event
            self.failures.append(event)
