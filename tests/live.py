"""A real server on 127.0.0.1 for end-to-end tests, and an SSE reader for streams that end."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from controlroom.api.app import create_app
from controlroom.engine.context import Context


@contextmanager
def serve_app(app: Any, log_level: str = "warning", force_exit: bool = False) -> Iterator[str]:
    """Run an ASGI app with uvicorn on a free port of 127.0.0.1; yield its base URL.

    `force_exit` drops open connections at once (for fakes that hang on purpose)."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level=log_level, lifespan="auto")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        server.force_exit = force_exit
        thread.join(timeout=10)
        if thread.is_alive():  # a stream that will not end: stop waiting for it
            server.force_exit = True
            thread.join(timeout=10)


@contextmanager
def live_server(workspace: Path, token: str | None = None) -> Iterator[str]:
    """The Control Room API over a workspace, as `controlroom serve` runs it."""
    ctx = Context.open(workspace)
    try:
        with serve_app(create_app(ctx, token)) as base:
            yield base
    finally:
        ctx.close()


def read_sse(
    client: httpx.Client, url: str, headers: dict[str, str] | None = None, limit: int = 10_000
) -> list[dict[str, Any]]:
    """Every message of a stream, until the server ends it (or `limit` messages)."""
    messages: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    with client.stream("GET", url, headers=headers or {}, timeout=30) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if not line:
                if "data" in current:
                    current["data"] = json.loads(current["data"])
                    messages.append(current)
                    if len(messages) >= limit:
                        break
                current = {}
            elif not line.startswith(":"):
                key, _, value = line.partition(":")
                current[key] = value.removeprefix(" ")
    return messages
