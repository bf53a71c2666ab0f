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

from api.app import create_app
from engine.context import Context


@contextmanager
def live_server(workspace: Path, token: str | None = None) -> Iterator[str]:
    ctx = Context.open(workspace)
    app = create_app(ctx, token)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
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
        thread.join(timeout=10)
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
