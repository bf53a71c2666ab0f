"""The server's periodic checkpoints: with a checkpoint key and
`CONTROLROOM_CHECKPOINT_EVERY_S` set, a signed checkpoint is written to
`<workspace>/.control-room/checkpoints/` whenever the log has grown, for export elsewhere
(copy the folder off the machine: a checkpoint only anchors what an attacker cannot reach).
The key's fingerprint is logged at start, for verifiers to check checkpoints against
(`controlroom audit verify --key-fingerprint`): the key inside a checkpoint proves nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

from starlette.concurrency import run_in_threadpool

from controlroom.engine.context import Context
from controlroom.projections import checkpoints

logger = logging.getLogger(__name__)


class Checkpointer:
    def __init__(self, ctx: Context, every_s: float, folder: Path) -> None:
        self.ctx, self.every_s, self.folder = ctx, every_s, folder
        self.key = checkpoints.load_key(
            ctx.settings.checkpoint_key, ctx.settings.checkpoint_key_file
        )
        self.fingerprint = checkpoints.fingerprint(self.key.public_key())
        self.last_position = -1
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def from_settings(cls, ctx: Context) -> Checkpointer | None:
        settings = ctx.settings
        if not settings.checkpoint_every_s:
            return None
        folder = ctx.workspace.root / ".control-room" / "checkpoints"
        return cls(ctx, settings.checkpoint_every_s, folder)

    def take_if_grown(self) -> Path | None:
        """Blocking: one checkpoint when the log moved since the last one."""
        if self.ctx.store.max_position() == self.last_position:
            return None
        taken = checkpoints.take(self.ctx.store, self.key)
        path = self.folder / f"checkpoint-{taken['position']:012d}.json"
        checkpoints.write(taken, path)
        self.last_position = taken["position"]
        return path

    def start(self) -> None:
        logger.info(
            "signing checkpoints in %s with key %s; verify them with --key-fingerprint %s",
            self.folder,
            self.fingerprint,
            self.fingerprint,
        )
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _loop(self) -> None:
        while True:
            try:
                await run_in_threadpool(self.take_if_grown)
            except Exception:  # a full disk must not end the server: try again later
                logger.exception("could not write a checkpoint; retrying later")
            await asyncio.sleep(self.every_s)
