"""SSE delivery latency from commit to client, with 1 and with 100 concurrent subscribers.

The server runs as its own process (`controlroom serve`) on 127.0.0.1, its offline model
pausing 20 ms per call so events arrive spread out as in a real run. Subscribers follow
`/api/events` from the current position; latency is the client's receive time minus the
event's own timestamp (stamped just before its commit, so this slightly overstates).
Target: median under 50 ms with 100 subscribers.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "controlroom")
RUNS = 3
STAMP = re.compile(r'"timestamp": "([^"]+)"')


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def subscriber(
    base: str,
    after: int,
    stop: asyncio.Event,
    out: list[float],
    ready: asyncio.Event,
    expected: int,
) -> None:
    async with (
        httpx.AsyncClient(base_url=base, timeout=60) as client,
        client.stream("GET", "/api/events", params={"after": after}) as response,
    ):
        ready.set()
        seen = 0
        kind = ""
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:") and kind != "partial":  # partials are not stored
                # Only the stamp is needed; a regex keeps the client's own cost small.
                found = STAMP.search(line)
                assert found is not None
                stamp = found.group(1).replace("Z", "+00:00")
                out.append((datetime.now(UTC) - datetime.fromisoformat(stamp)).total_seconds())
                seen += 1
                if seen >= expected or stop.is_set():
                    return


async def measure(base: str, subscribers: int) -> list[float]:
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        after = await current_position(client)
        latencies: list[float] = []
        stop = asyncio.Event()
        readies = [asyncio.Event() for _ in range(subscribers)]
        expected = 35 * RUNS  # events of RUNS creative_draft_scene runs
        tasks = [
            asyncio.create_task(subscriber(base, after, stop, latencies, r, expected))
            for r in readies
        ]
        await asyncio.gather(*(r.wait() for r in readies))
        await asyncio.sleep(0.2)
        for _ in range(RUNS):
            run_id = (
                await client.post("/api/runs", json={"recipe_id": "creative_draft_scene"})
            ).json()["run_id"]
            while (await client.get(f"/api/runs/{run_id}")).json()["status"] == "running":
                await asyncio.sleep(0.05)
        await asyncio.wait_for(asyncio.gather(*tasks), 60)
        return latencies


async def current_position(client: httpx.AsyncClient) -> int:
    runs = (await client.get("/api/runs")).json()
    position = 0
    for run in runs:
        audit = (
            await client.get(f"/api/runs/{run['run_id']}/events", params={"after": 0}, timeout=60)
        ).text
        for line in audit.splitlines():
            if line.startswith("id:"):
                position = max(position, int(line[3:]))
    return position


def main() -> None:
    try:  # the measuring client should not be the bottleneck either
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "novel"
        shutil.copytree(
            REPO / "examples" / "novel", workspace, ignore=shutil.ignore_patterns(".control-room")
        )
        port = free_port()
        env = {**os.environ, "CONTROLROOM_OFFLINE_LATENCY_MS": "20"}
        server = subprocess.Popen(
            [CLI, "serve", "-w", str(workspace), "--port", str(port)],
            env=env,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 20
            while True:
                try:
                    httpx.get(f"{base}/api/runs", timeout=1)
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            for count in (1, 100):
                values = sorted(asyncio.run(measure(base, count)))
                median = statistics.median(values) * 1000
                p99 = values[min(len(values) - 1, int(len(values) * 0.99))] * 1000
                print(
                    f"{count:>3} subscriber(s): {len(values):>6} deliveries, median "
                    f"{median:6.1f} ms, p99 {p99:6.1f} ms"
                )
        finally:
            server.terminate()
            server.wait(timeout=10)
    print("target: median < 50 ms with 100 subscribers")


if __name__ == "__main__":
    main()
