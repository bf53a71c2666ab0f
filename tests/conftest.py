from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.run_events import ModelRequestRecorded
from controlroom.engine.context import Context
from controlroom.engine.service import RunService

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "novel"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
#: What `bash scripts/demo` leaves in the example (its store, the scene it drafts): never
#: copied into a test's workspace, which starts from the example as committed.
DEMO_LEFTOVERS = (".control-room", "SCN-04-*")
#: The fields of the consolidated run view, `GET /api/runs/{id}` (appendix D).
APPENDIX_D_KEYS = {
    "run_id",
    "recipe_id",
    "status",
    "phase",
    "current_step_index",
    "total_steps",
    "created_at",
    "updated_at",
    "completed_at",
    "task",
    "steps",
    "cache_summary",
    "error",
}


@pytest.fixture(autouse=True)
def isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees the developer's home layer or store settings."""
    monkeypatch.setenv("CONTROLROOM_HOME", str(tmp_path / "home"))
    for var in (
        "CONTROLROOM_STORE",
        "CONTROLROOM_TIER",
        "CONTROLROOM_OFFLINE_LATENCY_MS",
        "CONTROLROOM_MAX_EVENT_BYTES",
        "CONTROLROOM_AGENT_TIMEOUT_S",
        # Traces go nowhere, and /metrics keeps its token, unless a test says otherwise.
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
        "CONTROLROOM_METRICS_OPEN",
    ):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A fresh copy of the example novel, so runs never touch the repository."""
    target = tmp_path / "novel"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns(*DEMO_LEFTOVERS))
    return target


@pytest.fixture
def ctx(workspace: Path) -> Iterator[Context]:
    context = Context.open(workspace)
    yield context
    context.close()


@pytest.fixture
def service(ctx: Context) -> RunService:
    return RunService(ctx)


#: An override recipe that needs `--arg scene_path=...`: for missing-args and escape tests.
NEEDS_SCENE_RECIPE = json.dumps(
    {
        "recipe_id": "needs_scene",
        "phase_a": [
            {
                "step_id": "v",
                "tool": "scene_draft_validator",
                "args": {"scene_path": {"$ref": "task.args.scene_path"}},
                "output_slot": "v",
            }
        ],
    }
)


def write_override(workspace: Path, name: str, text: str) -> Path:
    folder = workspace / ".control-room" / "recipes"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def sent_bodies(workspace: Path, events: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """Each recorded request's body as it was sent (the texts it refers to by hash put
    back, domain/texts.py), by its ref."""
    context = Context.open(workspace)
    try:
        service = RunService(context)
        return {
            e.ref: service.request_body(e) for e in events if isinstance(e, ModelRequestRecorded)
        }
    finally:
        context.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long tests first (a stable sort keeps the rest in order): with the suite split
    over workers (scripts/test), a long test started last would leave one core idle while
    it runs; started first, the short ones fill the other core around it."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)
