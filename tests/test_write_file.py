"""The `write_file` step kind: a slot written to a workspace file as a recorded, idempotent,
crash-safe step that never overwrites someone else's edit."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.errors import PathTemplateError, RecipeInvalidError
from controlroom.domain.outcomes import FileWriteOutcome
from controlroom.domain.recipe import Recipe
from controlroom.domain.recipe_check import validate_recipe
from controlroom.domain.run import Run, RunStatus
from controlroom.domain.run_events import (
    AgentResponded,
    FileWriteIntended,
    FileWritten,
    SlotWritten,
    StepFailed,
)
from controlroom.domain.steps import WriteFileStep
from controlroom.domain.templates import render, slug
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.pinned_write import PinnedFile
from controlroom.engine.service import RunRequest, RunService
from controlroom.projections.views import Views
from controlroom.tools.base import ToolRegistry
from controlroom.tools.layout import detect_layout, unit_path_for
from controlroom.tools.workspace import Workspace
from tests.conftest import write_override

SCENE = "Story/Scenes/SCN-04-the-reckoning.md"
TOOLS = ToolRegistry.default(with_plugins=False).names()


def recipe(path: Any, mode: str = "create", *, second: Any = None) -> dict[str, Any]:
    """A fast recipe: a tool's output (a pointer slot) written to `path`."""
    steps: list[dict[str, Any]] = [
        {
            "kind": "write_file",
            "step_id": "save",
            "source_slot": "outline",
            "path": path,
            "mode": mode,
            "output_slot": "saved",
        }
    ]
    if second is not None:
        steps.append({**steps[0], "step_id": "save2", "path": second, "output_slot": "saved2"})
    return {
        "recipe_id": "save_outline",
        "phase_a": [
            {
                "step_id": "outline",
                "tool": "outline_analyzer",
                "args": {"outline_path": "Story/SCN-outline.md", "focus": "scene 4"},
                "output_slot": "outline",
            }
        ],
        "phase_b": steps,
        "dod": [{"check": "file_exists", "path": {"$ref": "saved.path"}}],
    }


def start(workspace: Path, path: Any, mode: str = "create") -> tuple[Context, RunService, Run]:
    write_override(workspace, "save_outline.json", json.dumps(recipe(path, mode)))
    ctx = Context.open(workspace)
    service = RunService(ctx)
    return ctx, service, service.start(RunRequest("save_outline", {"scene_number": 4}))


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def events(ctx: Context, run_id: str, kind: type[Any]) -> list[Any]:
    return [e for e in ctx.store.stream(run_id) if isinstance(e, kind)]


class Crash(BaseException):
    """Stands for the process dying: nothing after it runs, nothing is recorded."""


# -- the spec, the template, the outcome ---------------------------------------------------


def test_the_spec_parses_in_a_recipe_and_lists_its_refs() -> None:
    parsed = Recipe.model_validate(recipe({"$ref": "outline.target.path"}))
    step = parsed.phase_b[0]
    assert isinstance(step, WriteFileStep) and step.mode == "create"
    assert list(step.refs()) == [("path.$ref", "outline.target.path")]
    assert step.slots_read() == ["outline"]
    templated = WriteFileStep(
        step_id="w",
        output_slot="o",
        source_slot="s",
        path="Story/SCN-{{task.args.n:02d}}-{{s.title|slug}}.md",
    )
    assert [r for _, r in templated.refs()] == ["task.args.n", "s.title"]
    assert Recipe.model_validate(parsed.snapshot()) == parsed


def test_templates_are_small_and_strict() -> None:
    task = {"args": {"n": 4}}
    slots = {"s": {"title": "The Reckoning's End", "obj": {}}}
    text = "Story/SCN-{{task.args.n:02d}}-{{ s.title|slug }}.md"
    assert render(text, task, slots) == "Story/SCN-04-the-reckoning-s-end.md"
    assert slug("  Hello, World!  ") == "hello-world"
    for bad in ("x-{{task.args.n", "{{s.obj}}.md", "{{s.title:02d}}.md"):
        with pytest.raises(PathTemplateError):
            render(bad, task, slots)


def test_load_time_checks_refuse_escapes_bad_templates_and_a_path_written_twice() -> None:
    def problems(data: dict[str, Any]) -> list[str]:
        with pytest.raises(RecipeInvalidError) as raised:
            validate_recipe(data, "r.json", TOOLS, [])
        return [f"{p.json_path}: {p.message}" for p in raised.value.problems]

    assert any("inside the workspace" in p for p in problems(recipe("../out.md")))
    assert any("folder" in p for p in problems(recipe("Notes/")))
    assert any("malformed" in p for p in problems(recipe("x-{{task.args.n")))
    assert any("reads slot 'nope'" in p for p in problems(recipe({"$ref": "nope.path"})))
    twice = problems(recipe("Notes/out.md", second="Notes/out.md"))
    assert twice == [
        "$.phase_b[1].path: path 'Notes/out.md' is already written by step 'save': a recipe "
        "writes each path once"
    ]
    validate_recipe(recipe("Notes/out.md", second="Notes/other.md"), "r.json", TOOLS, [])


def test_the_outcome_records_the_write_then_the_slot() -> None:
    step = WriteFileStep(step_id="w", output_slot="o", source_slot="s", path="a.md")
    outcome = FileWriteOutcome("w", "a.md", "create", None, "ab" * 32, 12, False, ["s"])
    (written, fields), (slot, slot_fields) = outcome.events(step, "sess")
    assert written is FileWritten and slot is SlotWritten
    assert fields["sha256_before"] is None and fields["sha256_after"] == "ab" * 32
    assert json.loads(slot_fields["text"])["path"] == "a.md"
    assert slot_fields["sha256"] == outcome.output_sha256


def test_a_new_unit_is_named_like_its_neighbours(workspace: Path) -> None:
    layout = detect_layout(Workspace(workspace))
    assert unit_path_for(layout, 4, "The Reckoning") == SCENE
    assert unit_path_for(layout, 2, "anything") == "Story/Scenes/SCN-02-the-ambush.md"


def test_a_new_unit_beside_roman_numerals_is_named_in_them(tmp_path: Path) -> None:
    book = tmp_path / "Manuscript" / "Volume I"
    book.mkdir(parents=True)
    for numeral in ("I", "II", "III"):
        (book / f"Chapter {numeral}.md").write_text(f"CHAPTER {numeral}.\n\nText.\n")
    layout = detect_layout(Workspace(tmp_path))
    assert unit_path_for(layout, 4, "The Stranger") == "Manuscript/Volume I/Chapter IV.md"
    titled = tmp_path / "titled" / "chapters"
    titled.mkdir(parents=True)
    for numeral, name in (("i", "the-lamp"), ("ii", "the-tower")):
        (titled / f"chapter-{numeral}-{name}.md").write_text("# Chapter\n\nText.\n")
    layout = detect_layout(Workspace(titled.parent))
    assert unit_path_for(layout, 9, "The Stranger") == "chapters/chapter-ix-the-stranger.md"


def test_the_outline_analyzer_names_the_focus_scene_file_or_the_next_one(workspace: Path) -> None:
    tools = ToolRegistry.default(with_plugins=False)
    ws = Workspace(workspace)

    def target(focus: str | None) -> Any:
        args = {"outline_path": "Story/SCN-outline.md", "focus": focus}
        return tools.execute("outline_analyzer", args, ws).output["target"]

    fourth = {"path": SCENE, "exists": False, "number": 4, "unit": "scene"}
    assert target("Draft scene 4") == fourth
    assert target("Redo scene 2")["exists"] is True
    assert target(None) == fourth  # the next one


# -- the engine ------------------------------------------------------------------------------


def test_the_file_is_written_atomically_with_its_hashes(workspace: Path) -> None:
    ctx, service, run = start(workspace, "Notes/outline-{{task.args.scene_number:02d}}.json")
    run = asyncio.run(service.execute(run))
    assert run.status == RunStatus.DONE, run.error
    target = workspace / "Notes" / "outline-04.json"
    data = target.read_bytes()
    assert json.loads(data)["target"]["path"] == SCENE
    (intent,) = events(ctx, run.id, FileWriteIntended)
    (written,) = events(ctx, run.id, FileWritten)
    assert intent.sha256_before is None and intent.sha256_intended == sha(data)
    assert (written.path, written.sha256_before, written.sha256_after, written.bytes) == (
        "Notes/outline-04.json",
        None,
        sha(data),
        len(data),
    )
    assert not written.already_applied
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]
    ctx.close()


def test_a_crash_before_the_rename_is_written_on_resume(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx, service, run = start(workspace, "Notes/out.json")

    def die(*args: Any) -> None:
        raise Crash

    monkeypatch.setattr(PinnedFile, "replace_with", die)
    with pytest.raises(Crash):
        asyncio.run(service.execute(run))
    assert not (workspace / "Notes" / "out.json").exists()
    monkeypatch.undo()
    resumed = asyncio.run(service.resume(run.id))
    assert resumed.status == RunStatus.DONE, resumed.error
    assert len(events(ctx, run.id, FileWriteIntended)) == 1  # the intent is not repeated
    (written,) = events(ctx, run.id, FileWritten)
    assert not written.already_applied
    assert written.sha256_after == sha((workspace / "Notes" / "out.json").read_bytes())
    ctx.close()


def test_a_crash_after_the_rename_is_recognised_by_the_hash_and_not_redone(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx, service, run = start(workspace, "Notes/out.json")
    real = PinnedFile.replace_with
    writes: list[str] = []

    def write_then_die(*args: Any) -> None:
        real(*args)
        writes.append(args[0].relative)
        raise Crash

    monkeypatch.setattr(PinnedFile, "replace_with", write_then_die)
    with pytest.raises(Crash):
        asyncio.run(service.execute(run))
    resumed = asyncio.run(service.resume(run.id))  # still patched: a second write would show
    assert resumed.status == RunStatus.DONE, resumed.error
    assert writes == ["Notes/out.json"]
    (written,) = events(ctx, run.id, FileWritten)
    assert written.already_applied and written.sha256_before is None
    ctx.close()


def test_a_file_edited_by_hand_while_the_outcome_is_unknown_is_a_conflict(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx, service, run = start(workspace, "Notes/out.json")

    def die(*args: Any) -> None:
        raise Crash

    monkeypatch.setattr(PinnedFile, "replace_with", die)
    with pytest.raises(Crash):
        asyncio.run(service.execute(run))
    monkeypatch.undo()
    target = workspace / "Notes" / "out.json"
    target.parent.mkdir(exist_ok=True)
    target.write_text("mine, by hand\n")
    resumed = asyncio.run(service.resume(run.id))
    assert resumed.status == RunStatus.FAILED
    (failed,) = events(ctx, run.id, StepFailed)
    assert failed.error_type == "FileWriteConflictError"
    assert "outcome unknown" in failed.error
    hand = sha(b"mine, by hand\n")
    assert f"sha256:{hand}" in failed.error and "no file" in failed.error
    assert target.read_text() == "mine, by hand\n"  # never overwritten
    assert not events(ctx, run.id, FileWritten)
    # A tracked policy opens one "file conflict" issue showing the hashes.
    views = Views.for_store(ctx.store)
    followers = Followers(ctx.store, views)
    followers.catch_up()
    followers.catch_up()
    (issue,) = views.query.issues(run_id=run.id)
    assert issue.kind == "file_conflict" and "Notes/out.json" in issue.title
    evidence = issue.evidence
    assert isinstance(evidence, dict) and evidence["sha256_read"] is None
    assert hand in str(evidence["error"]) and evidence["sha256_intended"]
    ctx.close()


def test_a_file_changed_since_the_run_read_it_is_not_clobbered(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scene = workspace / "Story" / "Scenes" / "SCN-03-the-archive.md"
    original = scene.read_bytes()
    ctx, service, run = start(workspace, "Story/Scenes/SCN-03-the-archive.md", mode="replace")
    real = PinnedFile.replace_with

    def someone_edits_first(*args: Any) -> None:
        scene.write_text("edited meanwhile\n")
        real(*args)

    monkeypatch.setattr(PinnedFile, "replace_with", someone_edits_first)
    run = asyncio.run(service.execute(run))
    assert run.status == RunStatus.FAILED
    (failed,) = events(ctx, run.id, StepFailed)
    assert "changed by someone else" in failed.error
    assert sha(original) in failed.error and sha(b"edited meanwhile\n") in failed.error
    assert scene.read_text() == "edited meanwhile\n"
    (intent,) = events(ctx, run.id, FileWriteIntended)
    assert intent.sha256_before == sha(original)
    ctx.close()


def test_replace_replaces_and_create_refuses_an_existing_file(workspace: Path) -> None:
    scene = workspace / "Story" / "Scenes" / "SCN-03-the-archive.md"
    original = scene.read_bytes()
    ctx, service, run = start(workspace, "Story/Scenes/SCN-03-the-archive.md")
    run = asyncio.run(service.execute(run))
    assert run.status == RunStatus.FAILED and "already exists" in (run.error or "")
    assert scene.read_bytes() == original
    ctx.close()
    ctx, service, run = start(workspace, "Story/Scenes/SCN-03-the-archive.md", mode="replace")
    run = asyncio.run(service.execute(run))
    assert run.status == RunStatus.DONE, run.error
    (written,) = events(ctx, run.id, FileWritten)
    assert written.sha256_before == sha(original)
    assert written.sha256_after == sha(scene.read_bytes()) != sha(original)
    ctx.close()


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ({"$ref": "outline.outline_path"}, "already exists"),  # the outline: create refuses
        ({"$ref": "outline.title"}, None),  # a name with spaces is fine: written
        ("Story/Scenes", "folder"),
        (".control-room/x.json", ".control-room"),
    ],
)
def test_bad_targets_fail_the_step_and_leave_the_workspace_intact(
    workspace: Path, path: Any, why: str | None
) -> None:
    ctx, service, run = start(workspace, path)
    run = asyncio.run(service.execute(run))
    if why is None:
        assert run.status == RunStatus.DONE, run.error
    else:
        assert run.status == RunStatus.FAILED and why in (run.error or ""), run.error
        assert not events(ctx, run.id, FileWritten)
    ctx.close()


def test_a_read_only_file_is_not_replaced(workspace: Path) -> None:
    scene = workspace / "Story" / "Scenes" / "SCN-03-the-archive.md"
    scene.chmod(0o444)
    try:
        ctx, service, run = start(workspace, "Story/Scenes/SCN-03-the-archive.md", "replace")
        run = asyncio.run(service.execute(run))
        import os

        if os.access(scene, os.W_OK):  # running as root: permissions do not bind
            pytest.skip("permissions are not enforced for this user")
        assert run.status == RunStatus.FAILED and "read-only" in (run.error or "")
        ctx.close()
    finally:
        scene.chmod(0o644)


def test_the_draft_recipe_writes_the_new_scene_and_checks_that_file(workspace: Path) -> None:
    ctx = Context.open(workspace)
    service = RunService(ctx)
    run = asyncio.run(
        service.execute(service.start(RunRequest("Draft scene 4 from the outline", {})))
    )
    assert run.status == RunStatus.DONE, run.error
    scene = workspace / SCENE
    assert scene.read_text().startswith("# Scene 4: The Reckoning")
    (written,) = events(ctx, run.id, FileWritten)
    assert written.path == SCENE and written.sha256_after == sha(scene.read_bytes())
    assert run.dod_results is not None
    assert run.dod_results[-1].detail == f"file '{SCENE}' exists"
    # The same task again: scene 4 is written now, so the run stops in phase A, naming the
    # file, before any model is paid to draft what could not be written.
    again = asyncio.run(
        service.execute(service.start(RunRequest("Draft scene 4 from the outline", {})))
    )
    assert again.status == RunStatus.FAILED
    assert f"already written at '{SCENE}'" in str(again.error)
    assert not events(ctx, again.id, AgentResponded) and not events(ctx, again.id, FileWritten)
    ctx.close()
