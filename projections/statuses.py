"""The statuses a run's view can have; light to import (the CLI's parser offers them)."""

from __future__ import annotations

from typing import Literal, get_args

#: `damaged`: the run's stored events do not fold (one is missing, out of order or
#: unreadable); `damage` says which. Every other run is unaffected.
RunStatus = Literal["pending", "running", "done", "failed", "cancelled", "damaged"]
RUN_STATUSES: tuple[str, ...] = get_args(RunStatus)
