"""Traces against a real receiver: Arize Phoenix (`scripts/phoenix` installs it in a venv of
its own), started once for this module on free ports of 127.0.0.1. The CLI runs the main job,
a plan and a failing run, while the receiver is up and while it is down; an export is killed
(SIGKILL) right after Phoenix took a batch and before the batch committed, then resumed, then
the projection is rebuilt. Phoenix's own REST API must then hold every span exactly once: the
same ids, tree, GenAI attributes and counts as the projection builds from the events."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from controlroom.engine.context import Context
from controlroom.projections.traces_config import TelemetryConfig
from controlroom.projections.traces_export import CRASH_AFTER_SEND_VAR, TraceExport
from controlroom.projections.views import Views
from tests.conftest import REPO
from tests.test_cli_e2e import CLI

PHOENIX_VAR = "CONTROLROOM_PHOENIX"
PROJECT = "controlroom-test"
START_S = 240.0

pytestmark = pytest.mark.timeout(600)


def _phoenix_executable() -> str | None:
    given = os.environ.get(PHOENIX_VAR)
    if given:
        return given
    found = shutil.which("phoenix")
    if found:
        return found
    if os.environ.get("CI"):
        # CI installs it (.ci/run runs scripts/phoenix): never a silent skip there.
        done = subprocess.run(
            ["bash", str(REPO / "scripts" / "phoenix")],
            capture_output=True, text=True, check=True, timeout=1200,
        )  # fmt: skip
        return done.stdout.strip().splitlines()[-1]
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Phoenix:
    """A Phoenix server starting on free ports of 127.0.0.1; `ready()` waits for it (it
    takes half a minute or more: the test does what needs no receiver meanwhile)."""

    def __init__(self, executable: str, folder: Path) -> None:
        self.folder = folder
        port = _free_port()
        env = {
            **os.environ,
            "PHOENIX_WORKING_DIR": str(folder),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(port),
            "PHOENIX_GRPC_PORT": str(_free_port()),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        self.log = (folder / "phoenix.log").open("wb")
        self.process = subprocess.Popen(
            [executable, "serve"], env=env, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        self.base = f"http://127.0.0.1:{port}"
        self.started = time.monotonic()
        self.up = False

    def ready(self) -> str:
        while not self.up:
            if self.process.poll() is not None:
                raise RuntimeError(f"Phoenix exited: {self._log_tail()}")
            with contextlib.suppress(httpx.HTTPError):
                self.up = httpx.get(f"{self.base}/healthz", timeout=2).status_code == 200
            if not self.up and time.monotonic() - self.started > START_S:
                raise RuntimeError(f"Phoenix did not start in {START_S:.0f} s: {self._log_tail()}")
            time.sleep(0.25)
        return self.base

    def answering(self) -> bool:
        """Whether the receiver answers now (it starts in the background: `up` says only
        that `ready` saw it)."""
        with contextlib.suppress(httpx.HTTPError):
            return httpx.get(f"{self.base}/healthz", timeout=2).status_code == 200
        return False

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=20)
        self.log.close()

    def _log_tail(self) -> str:
        return (self.folder / "phoenix.log").read_text(errors="replace")[-3000:]


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    executable = _phoenix_executable()
    if executable is None:
        pytest.skip(f"no Phoenix: run scripts/phoenix and set {PHOENIX_VAR} to what it prints")
    server = Phoenix(executable, tmp_path_factory.mktemp("phoenix"))
    try:
        yield server
    finally:
        server.stop()


def cli(workspace: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, *args, "-w", str(workspace)],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )  # fmt: skip


def phoenix_spans(base: str) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 1000}
        if cursor:
            params["cursor"] = cursor
        response = httpx.get(f"{base}/v1/projects/{PROJECT}/spans", params=params, timeout=30)
        if response.status_code == 404:  # the project exists once its first span arrived
            return []
        response.raise_for_status()
        body = response.json()
        spans.extend(body["data"])
        cursor = body.get("next_cursor")
        if not cursor:
            return spans


def settled(base: str, expected: int, timeout_s: float = 60.0) -> list[dict[str, Any]]:
    """Phoenix's spans once it holds `expected` of them (it stores what it took a moment
    after answering), and a little longer: a duplicate would show up too."""
    deadline = time.monotonic() + timeout_s
    while True:
        spans = phoenix_spans(base)
        if len(spans) >= expected or time.monotonic() > deadline:
            time.sleep(1.0)
            return phoenix_spans(base)
        time.sleep(0.25)


def _key(span: dict[str, Any]) -> tuple[str, str]:
    return span["context"]["trace_id"], span["context"]["span_id"]


def expected_spans(workspace: Path) -> dict[tuple[str, str], Any]:
    """What the projection builds from the store's events, by (trace id, span id)."""
    ctx = Context.open(workspace)
    memory = InMemorySpanExporter()
    try:
        config = TelemetryConfig.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
        with TraceExport(ctx.store, None, config, memory) as export:
            export.export()
    finally:
        ctx.close()
    found = {}
    for span in memory.get_finished_spans():
        assert span.context is not None
        found[(f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}")] = span
    return found


@pytest.mark.long
def test_every_run_reaches_phoenix_once_through_a_dead_receiver_a_kill_and_a_rebuild(
    phoenix: Phoenix, workspace: Path
) -> None:
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.base,
        "OTEL_SERVICE_NAME": "controlroom",
        "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={PROJECT}",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
    }
    # While the receiver is not up yet (it refuses connections), the main job and a plan
    # run: every command succeeds, its export fails and waits, nothing is lost.
    done = cli(workspace, env, "run", "Draft scene 4", "-q", "--json")
    assert done.returncode == 0, done.stderr
    first_run = json.loads(done.stdout)["run_id"]
    created = cli(workspace, env, "plan", "create",
                  "Check consistency of scenes 3-4 against canon, and a foreshadowing audit",
                  "--json")  # fmt: skip
    assert created.returncode == 0, created.stderr
    plan_id = json.loads(created.stdout)["plan_id"]
    assert cli(workspace, env, "plan", "approve", plan_id).returncode == 0
    started = cli(workspace, env, "plan", "start", plan_id)
    assert started.returncode == 0, started.stderr
    shown = json.loads(cli(workspace, env, "plan", "show", plan_id, "--json").stdout)
    for task in shown["tasks"]:
        if task["state"] == "needs_scoping":
            answer = [str(task["task_id"]), "1"]
            answered = cli(workspace, env, "plan", "answer", plan_id, *answer)
            assert answered.returncode == 0, answered.stderr
    resumed = cli(workspace, env, "plan", "resume", plan_id, "--json")
    assert json.loads(resumed.stdout)["status"] == "done", resumed.stderr
    # (when Phoenix came up quicker than that, the commands' exports drained the backlog;
    # asked of the receiver itself, since it starts in the background)
    if not phoenix.up and not phoenix.answering():
        status = json.loads(cli(workspace, env, "telemetry", "status", "--json").stdout)
        traces = status["traces"]
        assert traces["lag"] > 0 and traces["failures"] >= 1 and traces["last_error"]
        listed = json.loads(cli(workspace, env, "projections", "status", "--json").stdout)
        (row,) = [r for r in listed if r["name"] == "traces"]
        assert row["lag"] > 0

    # A run that fails (its writer's model answers 500 every time) while its command's
    # receiver is dead (a port nobody listens on): its spans wait in the backlog. (Phoenix
    # may have come up before the plan ended and drained everything; this backlog does not
    # depend on that race.)
    phoenix.ready()
    models = {
        "providers": {"offline": {"type": "offline",
                                  "faults": {"flaky-1": {"fault": "http_500"}}}},
        "roles": {"writer": {"provider": "offline", "model": "flaky-1"}},
    }  # fmt: skip
    settings = workspace / ".control-room" / "models.json"
    settings.write_text(json.dumps(models))
    for drafted in (workspace / "Story" / "Scenes").glob("SCN-04-*"):
        drafted.unlink()  # the main job's scene: drafted again, it would be refused first
    dead = {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    failing = cli(workspace, dead, "run", "Draft scene 4", "-q", "--json")
    assert failing.returncode == 1, (failing.returncode, failing.stderr)
    settings.unlink()
    # An export is killed (SIGKILL) right after Phoenix took the batch, before the batch's
    # position committed; the next one sends it again (the same ids) and drains the rest;
    # a rebuild sends every span once more.
    killed = cli(workspace, {**env, CRASH_AFTER_SEND_VAR: "1"}, "telemetry", "export")
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr)
    assert settled(phoenix.base, 1)
    lagging = json.loads(cli(workspace, env, "projections", "status", "--json").stdout)
    (row,) = [r for r in lagging if r["name"] == "traces"]
    assert row["lag"] > 0  # taken by Phoenix, not committed here
    drained = cli(workspace, env, "telemetry", "export", "--json")
    assert drained.returncode == 0, drained.stderr
    assert json.loads(drained.stdout)["lag"] == 0
    rebuilt = cli(workspace, env, "projections", "rebuild", "traces")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "rebuilt traces" in rebuilt.stdout
    # With the receiver up and no failure behind, a command exports its run at its end.
    last = cli(workspace, env, "run", "structural_canon", "-q", "--json")
    assert last.returncode == 0, last.stderr
    last_run = json.loads(last.stdout)["run_id"]
    status = json.loads(cli(workspace, env, "telemetry", "status", "--json").stdout)
    assert status["traces"]["lag"] == 0 and status["traces"]["failures"] == 0
    ctx = Context.open(workspace)
    try:
        with Views.for_store(ctx.store, workspace) as views:
            views.catch_up()
            (failed_run,) = [r.run_id for r in views.query.runs(status="failed")]
    finally:
        ctx.close()

    expected = expected_spans(workspace)
    spans = settled(phoenix.base, len(expected))
    ids = Counter(map(_key, spans))
    assert max(ids.values()) == 1, [k for k, n in ids.items() if n > 1][:5]  # no duplicate
    extra = [(s["name"], s["attributes"]) for s in spans if _key(s) not in expected]
    missing = [(m.name, m.attributes) for k, m in expected.items() if k not in ids]
    assert not extra and not missing, (extra[:3], missing[:3])
    assert set(ids) == set(expected)  # every span, and none other

    by_id = {s["context"]["span_id"]: s for s in spans}
    for span in spans:  # the tree: each parent is there, in the same trace
        parent = span["parent_id"]
        if parent is not None and span["attributes"].get("controlroom.parent_run.id") is None:
            assert parent in by_id, span["name"]
            assert by_id[parent]["context"]["trace_id"] == span["context"]["trace_id"]
        mine = expected[(span["context"]["trace_id"], span["context"]["span_id"])]
        assert span["name"] == mine.name
        mine_parent = f"{mine.parent.span_id:016x}" if mine.parent else None
        assert parent == mine_parent

    workflows = {
        s["attributes"]["controlroom.run.id"]: s
        for s in spans
        if s["name"].startswith("invoke_workflow ") and "controlroom.run.id" in s["attributes"]
    }
    assert {first_run, failed_run, last_run} <= set(workflows)
    assert workflows[first_run]["status_code"] == "OK"
    assert workflows[failed_run]["status_code"] == "ERROR"
    assert workflows[failed_run]["attributes"]["controlroom.run.status"] == "failed"
    plan_runs = [s for s in workflows.values() if s["attributes"].get("controlroom.plan.id")]
    assert plan_runs and all(s["attributes"]["controlroom.plan.id"] == plan_id for s in plan_runs)

    chats = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "chat"]
    assert chats and all(s["span_kind"] == "LLM" for s in chats)
    for chat in chats:
        a = chat["attributes"]
        assert a["gen_ai.provider.name"] == "offline" and a["gen_ai.request.model"]
        assert a["gen_ai.usage.input_tokens"] >= 0 and a["gen_ai.usage.output_tokens"] >= 0
    planning = [c for c in chats if c["attributes"].get("controlroom.event") == "ModelCalled"]
    assert planning  # the Chief's calls for the plan, in the plan's trace
    retried = [
        e for s in spans for e in s["events"] if e["name"] == "controlroom.model.attempt_failed"
    ]
    assert retried  # the failing run's attempts
    evaluations = [e for s in spans for e in s["events"] if e["name"] == "gen_ai.evaluation.result"]
    assert evaluations  # DoD checks and gate verdicts
