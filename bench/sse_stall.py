"""SSE catch-up cannot stall the server: live delivery latency of one client while 50 others
replay a 100,000-event log from position 0, and request latency after clients that drop.

The log is grown by copying a real run's stored events under new run ids (valid events,
so every replayer decodes and encodes them as it would real history). The server runs as
its own process (`controlroom serve`) on 127.0.0.1 with an offline model pausing 20 ms
per call. Latency is the client's receive time minus the event's own timestamp.
Target: a live client's events are delayed by less than a second.

    .venv/bin/python bench/sse_stall.py [EVENTS] [REPLAYERS]
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
from eventsourcing.persistence import StoredEvent

from controlroom.eventstore.store import EventStore

REPO = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "controlroom")
STAMP = re.compile(r'"timestamp": "([^"]+)"')
LIVE_RUNS = 5


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def grow_log(workspace: Path, events: int) -> int:
    subprocess.run([CLI, "run", "structural_canon", "-w", str(workspace), "-q"], check=True)
    store = EventStore.for_workspace(workspace)
    template = list(store.recorder.select_notifications(start=1, limit=1000))
    run_id = str(template[0].originator_id)
    copies, batch = 0, []
    while store.max_position() + len(batch) < events:
        copies += 1
        clone = f"run_{copies:016x}"
        batch.extend(
            StoredEvent(
                clone,
                note.originator_version,
                note.topic,
                note.state.replace(run_id.encode(), clone.encode()),
            )
            for note in template
            if str(note.originator_id) == run_id
        )
        if len(batch) >= 5000:
            store.recorder.insert_events(batch)
            batch = []
    if batch:
        store.recorder.insert_events(batch)
    return store.max_position()


async def replayer(base: str, stop: asyncio.Event, counts: list[int]) -> None:
    async with (
        httpx.AsyncClient(base_url=base, timeout=None) as client,
        client.stream("GET", "/api/events", params={"after": 0}) as response,
    ):
        async for line in response.aiter_lines():
            if line.startswith("id:"):
                counts[0] += 1
            if stop.is_set():
                break


async def live(base: str, after: int, out: list[float], ready: asyncio.Event, want: int) -> None:
    async with (
        httpx.AsyncClient(base_url=base, timeout=None) as client,
        client.stream("GET", "/api/events", params={"after": after}) as response,
    ):
        ready.set()
        kind = ""
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:") and kind != "partial":
                found = STAMP.search(line)
                assert found is not None
                stamp = datetime.fromisoformat(found.group(1).replace("Z", "+00:00"))
                out.append((datetime.now(UTC) - stamp).total_seconds())
                if len(out) >= want:
                    return


async def measure(base: str, head: int, replayers: int) -> tuple[list[float], list[float], int]:
    stop = asyncio.Event()
    counts = [0]
    background = [asyncio.create_task(replayer(base, stop, counts)) for _ in range(replayers)]
    await asyncio.sleep(1.0)  # every replayer is reading old history now
    latencies: list[float] = []
    request_times: list[float] = []
    ready = asyncio.Event()
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        follower = asyncio.create_task(live(base, head, latencies, ready, 20 * LIVE_RUNS))
        await ready.wait()
        for _ in range(LIVE_RUNS):
            started = time.perf_counter()
            run_id = (
                await client.post("/api/runs", json={"recipe_id": "structural_canon"})
            ).json()["run_id"]
            request_times.append(time.perf_counter() - started)
            while True:
                started = time.perf_counter()
                status = (await client.get(f"/api/runs/{run_id}")).json()["status"]
                request_times.append(time.perf_counter() - started)
                if status != "running":
                    break
                await asyncio.sleep(0.1)
        await asyncio.wait_for(follower, 120)
    stop.set()
    for task in background:
        task.cancel()
    await asyncio.gather(*background, return_exceptions=True)
    return latencies, request_times, counts[0]


async def dropped(base: str, clients: int) -> list[float]:
    """Clients that ask for everything from 0 and leave after 20 ms; then how long do
    ordinary requests take?"""

    async def drop() -> None:
        async with httpx.AsyncClient(base_url=base, timeout=None) as client:
            try:
                async with asyncio.timeout(0.02):
                    async with client.stream("GET", "/api/events", params={"after": 0}) as r:
                        async for _ in r.aiter_lines():
                            pass
            except TimeoutError:
                pass

    await asyncio.gather(*(drop() for _ in range(clients)))
    times = []
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        for _ in range(20):
            started = time.perf_counter()
            await client.get("/api/runs", params={"status": "failed"})
            times.append(time.perf_counter() - started)
            await asyncio.sleep(0.05)
    return times


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return (
        f"median {statistics.median(ordered) * 1000:7.1f} ms, p95 {p95 * 1000:7.1f} ms, "
        f"max {ordered[-1] * 1000:7.1f} ms"
    )


def main() -> None:
    events = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    replayers = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "novel"
        shutil.copytree(
            REPO / "examples" / "novel", workspace, ignore=shutil.ignore_patterns(".control-room")
        )
        started = time.perf_counter()
        head = grow_log(workspace, events)
        print(f"log: {head} events (grown in {time.perf_counter() - started:.1f} s)")
        port = free_port()
        env = {**os.environ, "CONTROLROOM_OFFLINE_LATENCY_MS": "20"}
        server = subprocess.Popen(
            [CLI, "serve", "-w", str(workspace), "--port", str(port)],
            env=env,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    httpx.get(f"{base}/api/recipes", timeout=1)
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            for count in (0, replayers):
                head = EventStore.for_workspace(workspace).max_position()
                lat, req, replayed = asyncio.run(measure(base, head, count))
                print(f"live client with {count:>2} replaying from 0: {summary(lat)}")
                print(f"   API requests meanwhile:          {summary(req)}")
                if count:
                    print(f"   replayers received {replayed} events meanwhile")
            times = asyncio.run(dropped(base, 10))
            print(f"requests after 10 clients dropped at 20 ms: {summary(times)}")
        finally:
            server.terminate()
            server.wait(timeout=10)
    print("target: a live client's events delayed by less than 1 s with 50 replayers")


if __name__ == "__main__":
    main()
