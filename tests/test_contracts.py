"""Output contracts: replies are extracted, validated and never silently accepted as text;
the offline provider honours the same contracts and writes only from its workspace."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from controlroom.domain.errors import PromptError
from controlroom.domain.run import Run, RunStatus
from controlroom.domain.run_events import AgentResponded
from controlroom.domain.steps import AgentStep
from controlroom.engine.context import Context
from controlroom.engine.service import RunRequest, RunService
from controlroom.prompts.contracts import (
    ContinuityReport,
    Contract,
    check_reply,
    extract_json,
    schema_of,
)
from controlroom.prompts.registry import PromptRegistry
from controlroom.recipes.catalog import RecipeCatalog
from controlroom.tools.base import ToolRegistry

CONTINUITY = Contract("continuity_report", schema_of(ContinuityReport))
VALID = {"pass": True, "conflicts": [], "facts_checked": 3}


@pytest.mark.parametrize(
    "reply",
    [
        json.dumps(VALID),
        f"```json\n{json.dumps(VALID, indent=2)}\n```",
        f"```\n{json.dumps(VALID)}\n```\nThat is all.",
        f"Here is the continuity report:\n{json.dumps(VALID)}\nI checked every fact.",
    ],
    ids=["bare", "fenced", "fence-without-language", "after-a-preamble"],
)
def test_the_json_of_a_reply_is_found_bare_fenced_or_after_prose(reply: str) -> None:
    assert extract_json(reply) == VALID
    assert check_reply(reply, CONTINUITY) == (VALID, [])


def test_a_string_where_the_contract_wants_a_boolean_is_refused_by_path() -> None:
    value, errors = check_reply('{"pass": "true", "conflicts": [], "facts_checked": 3}', CONTINUITY)
    assert value["pass"] == "true"
    assert errors == ['$.pass: "true" is not of type boolean']


def test_missing_fields_extra_fields_and_prose_are_each_named() -> None:
    _, errors = check_reply('{"pass": true, "verdict": 3}', CONTINUITY)
    assert "$: required property 'conflicts' is missing" in errors
    assert "$: property 'verdict' is not allowed" in errors
    assert check_reply("The draft is consistent with the canon.", CONTINUITY)[1] == [
        "$: the reply contains no JSON object"
    ]


def test_every_prompt_type_whose_slot_is_read_as_data_has_a_contract() -> None:
    registry = PromptRegistry.for_workspace(None)
    catalog = RecipeCatalog.load(None, ToolRegistry.default().names(), registry.prompt_types())
    read_as_data: set[str] = set()
    for recipe in catalog.recipes():
        producers = {
            step.output_slot: step.prompt_type
            for step in recipe.phase_b
            if isinstance(step, AgentStep)
        }
        for check in recipe.dod:
            slot = getattr(check, "slot", None)
            if getattr(check, "check", "") == "slot_field_equals" and slot in producers:
                read_as_data.add(producers[slot])
        # A review gate reads its verdict slot as data too (`pass`, `verdict`, findings).
        for step in recipe.phase_b:
            verdict = getattr(step, "verdict_slot", None)
            if verdict in producers:
                read_as_data.add(producers[verdict])
    assert read_as_data >= {
        "check_continuity",
        "confirm_scene_validity",
        "evaluate_reader_experience",
    }
    for prompt_type in read_as_data | {
        "evaluate_reader_experience",
        "evaluate_prose",
        "evaluate_outline",
        "find_canon_gaps",
    }:
        assert registry.contract_for(prompt_type) is not None, prompt_type


def test_the_role_is_the_system_prompt_and_the_task_the_user_message() -> None:
    registry = PromptRegistry.for_workspace(None)
    rendered = registry.render(
        "check_continuity", "t3", "Draft scene 4", {"edited_draft": "D", "canon_context": "C"}
    )
    assert rendered.system.startswith("You are the Continuity checker")
    assert "## Output contract" in rendered.system and '"facts_checked"' in rendered.system
    assert "Draft scene 4" not in rendered.system and "You are" not in rendered.user
    assert rendered.user.startswith("## Task\nDraft scene 4")
    plain = registry.render("draft_scene", "t3", "T", {"scene_brief": "B", "canon_context": "C"})
    assert plain.contract is None and "Output contract" not in plain.system


def test_a_workspace_can_give_a_prompt_type_a_contract_from_a_schema_file(
    workspace: Path,
) -> None:
    layer = workspace / ".control-room" / "prompts"
    (layer / "contracts").mkdir(parents=True)
    (layer / "contracts" / "beats.schema.json").write_text(
        json.dumps(
            {
                "type": "object",
                "properties": {"beats": {"type": "array", "items": {"type": "string"}}},
                "required": ["beats"],
                "additionalProperties": False,
            }
        )
    )
    (layer / "prompts.json").write_text(
        json.dumps(
            {
                "pipeline_templates": {
                    "refine_brief": {
                        "variants": {"t3": "templates/refine_brief.t3.md"},
                        "contract": "contracts/beats.schema.json",
                    }
                }
            }
        )
    )
    contract = PromptRegistry.for_workspace(workspace).contract_for("refine_brief")
    assert contract is not None and contract.name == "beats"
    assert contract.check({"beats": ["a"]}) == []
    assert contract.check({"beats": [1]}) == ["$.beats[0]: 1 is not of type string"]
    (layer / "contracts" / "beats.schema.json").write_text("{oops")
    with pytest.raises(PromptError, match="not JSON"):
        PromptRegistry.for_workspace(workspace).contract_for("refine_brief")


RECIPES = [
    ("creative_draft_scene", "Draft scene 4"),
    ("analytical_consistency", "check consistency"),
    ("analytical_scene_validate", "validate scene"),
    ("analytical_prose", "analyse prose"),
    ("analytical_foreshadow", "foreshadowing"),
    ("structural_canon", "canon"),
    ("structural_outline", "outline"),
]


@pytest.mark.parametrize(("recipe_id", "task"), RECIPES)
def test_offline_replies_satisfy_the_contracts_of_every_bundled_recipe(
    workspace: Path, recipe_id: str, task: str
) -> None:
    ctx = Context.open(workspace)
    service = RunService(ctx)
    run = asyncio.run(service.execute(service.start(RunRequest(recipe_id, {}, description=task))))
    events = ctx.store.stream(run.id)
    ctx.close()
    assert run.status in (RunStatus.DONE, RunStatus.FAILED)
    assert "STOP_HOOK" not in (run.error or "")
    registry = PromptRegistry.for_workspace(workspace)
    for event in events:
        if isinstance(event, AgentResponded):
            contract = registry.contract_for(event.prompt_type)
            if contract is not None:
                assert event.contract == contract.name
                assert contract.check(json.loads(event.output)) == [], event.prompt_type


def test_the_offline_writer_never_borrows_the_bundled_example(tmp_path: Path) -> None:
    workspace = tmp_path / "lighthouse"
    (workspace / "outline").mkdir(parents=True)
    (workspace / "canon").mkdir()
    (workspace / "outline" / "outline.md").write_text(
        "# Outline\n\n## Scene 1: The Lamp\nCharacters: Maren, Ilse\n"
        "- beat: Maren climbs the stair\n- beat: Ilse trims the wick\n"
    )
    (workspace / "canon" / "maren.md").write_text("# Maren\n- eyes: green\n")
    ctx = Context.open(workspace)
    service = RunService(ctx)
    run: Run = asyncio.run(service.execute(service.start(RunRequest("Draft scene 1", {}))))
    replies = [e for e in ctx.store.stream(run.id) if isinstance(e, AgentResponded)]
    ctx.close()
    assert "draft" in {e.step_id for e in replies}, run.error
    outputs = " ".join(e.output for e in replies).lower()
    assert "maren" in outputs
    for borrowed in ("fortress", "tunnel", "rider", " gate", "kael", "bell"):
        assert borrowed not in outputs, borrowed
