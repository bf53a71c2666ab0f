"""The event loop every command runs its coroutines on: uvloop where it is installed.

`controlroom serve` has always run on uvloop, because uvicorn picks it up when present; the
worker and the commands that execute runs in the foreground (`run`, `resume`, `retry`,
`plan run`, `conference`) used the standard library's loop. One loop for all of them, so
a run costs the same wherever it executes and the benchmarks measure what serves. On the
main job at 50 runs at once the loop's own work (callbacks, timers, wake-ups from the
tool and commit threads) is about a tenth of the CPU; uvloop does it in C.

`CONTROLROOM_EVENT_LOOP=asyncio` falls back to the standard loop (to rule the loop out when
chasing a problem).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, Final, TypeVar

from controlroom.engine.settings import SettingsError

T = TypeVar("T")

LOOP_VAR: Final = "CONTROLROOM_EVENT_LOOP"


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop, or None (the standard one) when it is absent or not wanted."""
    choice = os.environ.get(LOOP_VAR, "").strip().lower()
    if choice not in ("", "uvloop", "asyncio"):
        raise SettingsError(f"{LOOP_VAR}='{choice}' is not understood; use 'uvloop' or 'asyncio'")
    if choice == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise SettingsError(f"{LOOP_VAR}=uvloop, but uvloop is not installed") from None
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on the chosen loop."""
    try:
        factory = loop_factory()
    except SettingsError:
        main.close()  # never to be awaited: no "never awaited" warning on top of the error
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)


def loop_name() -> str:
    factory = loop_factory()
    return "asyncio" if factory is None else "uvloop"
