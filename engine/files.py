"""The `write_file` step: a slot's text written to a workspace file, once, atomically.

Before the file is touched the step commits `FileWriteIntended` (the path, the hash of the
file as the step read it, the hash it means to write). Then it writes a temporary file
beside the target and renames it over, after checking the target still holds what was
read. A resumed step therefore knows where it stands from the file's hash alone:

- the intended hash: the write happened before the crash; it is recorded, not redone;
- the hash read: the write did not happen; it is done now;
- anything else: someone else changed the file; the outcome is unknown and the step fails
  with a conflict naming the hashes, never overwriting.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from controlroom.domain.errors import (
    FileWriteConflictError,
    LoopScopeError,
    RefResolutionError,
    WorkspaceError,
)
from controlroom.domain.outcomes import FileWriteOutcome
from controlroom.domain.refs import resolve_ref
from controlroom.domain.run import Run, StepInstance
from controlroom.domain.run_events import FileWriteIntended
from controlroom.domain.steps import Ref, WriteFileStep
from controlroom.domain.templates import placeholders, render
from controlroom.engine.pinned_write import PinnedFile, Protected
from controlroom.tools.house_style import house_style
from controlroom.tools.workspace import STATE_DIR, Workspace

if TYPE_CHECKING:  # performers imports this module to register it
    from controlroom.engine.performers import Execution


def source_text(run: Run, slot: str, path: str = "") -> str:
    """What the step writes: an artifact slot's text, a pointer slot's value as JSON;
    ending with a newline, as text files do. A markdown file written from a value that
    carries its own markdown (a loop's report: `{"artifact": "# …", "addressed": […]}`)
    gets that markdown, and the value's lists of lines under their names, not JSON."""
    if slot in run.artifact_slots:
        text = run.slot_texts[slot]
        if path.endswith(".md") and text.lstrip().startswith("{"):
            reply = _json_object(text)
            if reply is not None and isinstance(reply.get("artifact"), str):
                return _as_markdown(reply)
        return text if text.endswith("\n") else text + "\n"
    if slot not in run.slot_values:
        raise RefResolutionError(slot, slot, f"no slot '{slot}' has been written")
    value = run.slot_values[slot]
    if path.endswith(".md") and isinstance(value, dict) and isinstance(value.get("artifact"), str):
        return _as_markdown(value)
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _as_markdown(value: dict[str, Any]) -> str:
    parts = [str(value["artifact"]).rstrip("\n")]
    for name, items in value.items():
        if (
            name != "artifact"
            and isinstance(items, list)
            and items
            and all(isinstance(item, str) for item in items)
        ):
            heading = name.replace("_", " ").capitalize()
            parts.append(f"## {heading}\n\n" + "\n".join(f"- {item}" for item in items))
    return "\n\n".join(parts) + "\n"


def target_path(step: WriteFileStep, run: Run) -> tuple[str, list[str]]:
    """The workspace-relative path the step writes, and the refs it read to know it."""
    task = run.task_context()
    if isinstance(step.path, Ref):
        value = resolve_ref(step.path.ref, task, run.slot_values)
        if not isinstance(value, str):
            raise WorkspaceError(f"$ref '{step.path.ref}' is not a path: {value!r}")
        return value, [step.path.ref]
    return render(step.path, task, run.slot_values), list(placeholders(step.path))


def checked_target(workspace: Workspace, relative: str) -> tuple[str, list[str]]:
    """The normalised relative path of a file the step may write, and its parts. The
    path's text is checked here (absolute, `..`, too long, Control Room's folder); where
    it really leads is checked as it is written (`engine/pinned_write.py`)."""
    workspace.resolve(relative)  # the textual checks, with their messages
    if relative.endswith(("/", "\\")):
        raise WorkspaceError(f"path '{relative}' is a folder, not a file")
    parts = [p for p in relative.replace("\\", "/").split("/") if p not in ("", ".")]
    if parts[0] == STATE_DIR:
        raise WorkspaceError(f"path '{relative}' is inside {STATE_DIR}/, which is Control Room's")
    return "/".join(parts), parts


def protected_places(execution: Execution) -> Protected:
    """Control Room's state folder and, when it lives in the workspace, the store's file."""
    store_file = execution.ctx.store.sqlite_file
    return Protected.of(
        [execution.ctx.workspace.root / STATE_DIR],
        [] if store_file is None else [store_file],
    )


async def perform_write_file(execution: Execution, instance: StepInstance) -> FileWriteOutcome:
    step = instance.step
    assert isinstance(step, WriteFileStep)
    run = execution.run
    wanted, refs = target_path(step, run)
    relative, parts = checked_target(execution.ctx.workspace, wanted)
    loop = run.recipe.loop if run.recipe is not None else None
    if loop is not None and (outside := loop.scope.path_problem(relative)) is not None:
        # A loop changes only what its scope names (Style Tune-up never the outline),
        # whatever path a model's reply or an argument led the step to.
        raise LoopScopeError(loop.name, step.step_id, outside)
    text = source_text(run, step.source_slot, relative)
    if step.mode == "create":
        # A new scene or chapter takes the heading form and line endings of those beside
        # it; derived from the workspace alone, so a resumed step writes the same bytes.
        text = house_style(execution.workspace, relative, text)
    data = text.encode("utf-8")
    intended = hashlib.sha256(data).hexdigest()
    earlier = run.files_written.get(relative)
    if earlier is not None and earlier.step_id != step.step_id:
        raise WorkspaceError(
            f"'{relative}' was already written in this run by step '{earlier.step_id}'"
        )

    def outcome(before: str | None, applied: bool) -> FileWriteOutcome:
        return FileWriteOutcome(
            instance_id=instance.instance_id,
            path=relative,
            mode=step.mode,
            sha256_before=before,
            sha256_after=intended,
            bytes=len(data),
            already_applied=applied,
            input_slot_refs=[step.source_slot, *refs],
        )

    root = execution.ctx.workspace.root
    with PinnedFile(root, parts, protected_places(execution), relative) as target:
        now = target.sha256()
        intents = run.journal_of(instance.instance_id, FileWriteIntended)
        intent = intents[-1] if intents else None
        if intent is not None:
            # Resumed after the intent was committed: the file's hash says what happened.
            if (intent.path, intent.sha256_intended) != (relative, intended):
                raise FileWriteConflictError(
                    relative,
                    now,
                    {"recorded intent": intent.sha256_intended},
                    f"the step's recorded intent was to write '{intent.path}' with other content",
                )
            if now == intended:
                target.remove_temp(intended)  # left by a write killed after its rename
                return outcome(intent.sha256_before, True)
            if now != intent.sha256_before:
                raise FileWriteConflictError(
                    relative,
                    now,
                    {"as the run read it": intent.sha256_before, "what this step writes": intended},
                    "outcome unknown: after this step recorded its intent the file came to hold "
                    "neither what the run read nor what it meant to write",
                )
            before = intent.sha256_before
        else:
            if now == intended:
                return outcome(now, True)  # already there (an earlier run with the same inputs)
            if step.mode == "create" and now is not None:
                raise FileWriteConflictError(
                    relative,
                    now,
                    {"mode 'create'": None, "what this step writes": intended},
                    "the file already exists with other content (move it away, or use mode "
                    "'replace' to replace it)",
                )
            if now is not None and not target.writable():
                raise WorkspaceError(f"'{relative}' is read-only: not replaced")
            before = now
            execution.journal(
                [
                    (
                        FileWriteIntended,
                        {
                            "step_id": step.step_id,
                            "instance_id": instance.instance_id,
                            "path": relative,
                            "mode": step.mode,
                            "sha256_before": before,
                            "sha256_intended": intended,
                            "bytes": len(data),
                        },
                    )
                ]
            )
        target.replace_with(data, before)
    return outcome(before, False)
