"""Stopping a tool mid-way: a tool runs in a worker thread, which nothing can interrupt from
outside. When its run is being stopped (SIGTERM, Ctrl-C, a server shutting down, a cancelled
run) the thread would keep reading and the process would wait for it. So the performer
hands the thread a stop flag, and a tool calls `checkpoint()` between pieces of work (the
workspace does, at every folder it lists and every file it reads): once the flag is up,
the next checkpoint raises `ToolStoppedError` and the thread ends. Nothing is recorded for
the step; `controlroom resume` performs it again.

Outside a stoppable call (a test, `controlroom workspace check`, a conference round)
`checkpoint()` does nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import ParamSpec, TypeVar

from controlroom.domain.errors import ControlRoomError

P = ParamSpec("P")
T = TypeVar("T")

#: The stop flag of the tool call running in this thread (context), if any. A context
#: variable rather than an argument: the `Tool.run(args, workspace)` port, and with it every
#: plugin, stays as it is.
_STOP: ContextVar[threading.Event | None] = ContextVar("controlroom_tool_stop", default=None)


class ToolStoppedError(ControlRoomError):
    """The run of this tool call is being stopped; the tool gave up at a checkpoint."""

    def __init__(self) -> None:
        super().__init__("the tool was stopped: its run is being stopped")


def checkpoint() -> None:
    """A place where a long tool may be stopped: raises `ToolStoppedError` once the run
    of the current tool call is being stopped, else returns at once (one context-variable
    read)."""
    stop = _STOP.get()
    if stop is not None and stop.is_set():
        raise ToolStoppedError()


def call_stoppable(
    stop: threading.Event, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """`function(*args, **kwargs)`, whose checkpoints raise once `stop` is set. Meant to be
    the callable a worker thread runs (`asyncio.to_thread(call_stoppable, stop, ...)`)."""
    token = _STOP.set(stop)
    try:
        return function(*args, **kwargs)
    finally:
        _STOP.reset(token)
