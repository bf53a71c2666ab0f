"""The catch-up loop: everything that follows the log, in one place.

Tracked policies react first (their new events are part of the log the projections then
read), then every named projection catches up, then the exporters write what the views say
into the workspace (STATUS.md: `engine/status_export.py`), each change once. The CLI runs
it after a command that wrote, the server runs it continuously off its event loop, and
workers run it too.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

from controlroom.engine.policies import Policy, PolicyRunner, bundled_policies
from controlroom.eventstore.store import EventStore


class CatchesUp(Protocol):
    def catch_up(self) -> int: ...


class Followers:
    def __init__(
        self,
        store: EventStore,
        projections: CatchesUp | None = None,
        policies: Sequence[Policy] | None = None,
        exporters: Sequence[CatchesUp] | None = None,
    ) -> None:
        self.policies = PolicyRunner(store, bundled_policies() if policies is None else policies)
        self.projections = projections
        if exporters is None:
            from controlroom.engine.status_export import default_exporters

            exporters = default_exporters(store, projections)
        #: Followers of the views that write into the workspace (views that know it).
        self.exporters = list(exporters)
        # One catch-up at a time in this process; other processes are kept apart by the
        # tracking rows themselves.
        self._lock = threading.Lock()

    def catch_up(self) -> int:
        """Returns how many events the policies recorded."""
        with self._lock:
            reacted = self.policies.catch_up()
            if self.projections is not None:
                self.projections.catch_up()
            if sum(exporter.catch_up() for exporter in self.exporters):
                # What an export recorded may call for a reaction (a conflict's issue).
                reacted += self.policies.catch_up()
                if self.projections is not None:
                    self.projections.catch_up()
            return reacted
