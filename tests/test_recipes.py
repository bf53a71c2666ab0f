"""Recipes load exactly as appendix B writes them, and every problem names file and path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.errors import RecipeInvalidError, UnknownRecipeError
from controlroom.domain.recipe import AgentStep, FileExists, Ref, SlotFieldEquals
from controlroom.domain.recipe_check import validate_recipe
from controlroom.prompts.registry import PromptRegistry
from controlroom.recipes.catalog import SCHEMA_FILE, RecipeCatalog, render_schema
from controlroom.tools.base import ToolRegistry
from tests.conftest import FIXTURES, write_override

TOOLS = ToolRegistry.default().names()
PROMPTS = PromptRegistry.for_workspace(None).prompt_types()
SEED_RECIPE_MAP = {
    "creative_draft_scene": (
        ["file_locator", "outline_analyzer", "canon_checker"],
        ["planner", "writer", "editor", "continuity", "critic"],
    ),
    "analytical_consistency": (["file_locator", "consistency_checker"], ["continuity", "editor"]),
    "analytical_prose": (["file_locator", "prose_analyzer"], ["writer", "critic"]),
    "analytical_foreshadow": (
        ["file_locator", "stakes_mapper", "reader_experience_simulator"],
        ["critic", "planner", "writer"],
    ),
    "analytical_scene_validate": (
        ["file_locator", "scene_draft_validator"],
        ["planner", "continuity"],
    ),
    "structural_canon": (["file_locator", "canon_checker"], ["continuity", "librarian"]),
    "structural_outline": (["file_locator", "outline_analyzer"], ["planner", "critic"]),
}


def appendix_b() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "appendix_b_recipe.json").read_text())
    return data


def test_the_appendix_b_example_loads_exactly_as_written() -> None:
    recipe = validate_recipe(appendix_b(), "appendix_b.json", TOOLS, PROMPTS)
    assert recipe.recipe_id == "creative_draft_scene"
    assert [s.step_id for s in recipe.steps] == [
        "discover",
        "analyze_outline",
        "check_canon",
        "brief",
        "draft",
        "polish",
        "continuity",
        "critique",
    ]
    assert recipe.phase_a[0].args["search_criteria"] == Ref(ref="task.description")
    assert recipe.phase_a[0].args["max_results"] == 12
    assert recipe.required_args() == {"scene_path", "canon_paths"}
    assert recipe.snapshot()["phase_a"][0]["args"]["search_criteria"] == {
        "$ref": "task.description"
    }


def test_every_recipe_of_the_seed_map_is_bundled_with_its_tools_and_agents() -> None:
    catalog = RecipeCatalog.load(None, TOOLS, PROMPTS)
    for recipe_id, (tools, agents) in SEED_RECIPE_MAP.items():
        recipe = catalog.get(recipe_id)
        assert [s.tool for s in recipe.phase_a] == tools
        # Agent steps, then (in recipes that write results) the write_file steps.
        assert [s.agent_archetype for s in recipe.phase_b if isinstance(s, AgentStep)] == agents
        assert recipe.dod, recipe_id


def _problems(data: Any) -> list[str]:
    with pytest.raises(RecipeInvalidError) as caught:
        validate_recipe(data, "bad.json", TOOLS, PROMPTS)
    return [str(p) for p in caught.value.problems]


def test_unknown_tool_is_named_with_its_json_path() -> None:
    data = appendix_b()
    data["phase_a"][1]["tool"] = "crystal_ball"
    assert _problems(data) == ["bad.json: $.phase_a[1].tool: unknown tool 'crystal_ball'"]


def test_unknown_prompt_type_is_named_with_its_json_path() -> None:
    data = appendix_b()
    data["phase_b"][2]["prompt_type"] = "nonsense"
    assert _problems(data) == ["bad.json: $.phase_b[2].prompt_type: unknown prompt type 'nonsense'"]


def test_unknown_dod_check_is_named_with_its_json_path() -> None:
    data = appendix_b()
    data["dod"].append({"check": "vibes_ok", "slot": "draft"})
    problems = _problems(data)
    assert len(problems) == 1 and problems[0].startswith("bad.json: $.dod[3]:")
    assert "vibes_ok" in problems[0]


def test_duplicate_step_id_is_refused() -> None:
    data = appendix_b()
    data["phase_b"][1]["step_id"] = "brief"
    assert "bad.json: $.phase_b[1].step_id: duplicate step id 'brief'" in _problems(data)


def test_reading_a_slot_before_any_step_writes_it_is_refused() -> None:
    data = appendix_b()
    data["phase_b"][0]["input_slots"] = ["draft"]
    assert _problems(data) == [
        "bad.json: $.phase_b[0].input_slots[0]: reads slot 'draft' before any step writes it"
    ]


def test_a_bad_ref_root_is_refused() -> None:
    data = appendix_b()
    data["phase_a"][0]["args"]["search_criteria"] = {"$ref": "task.title"}
    data["phase_a"][1]["args"]["outline_path"] = {"$ref": "check_canon_output.path"}
    problems = _problems(data)
    assert problems[0].startswith("bad.json: $.phase_a[0].args.search_criteria.$ref: bad $ref root")
    assert problems[1].startswith("bad.json: $.phase_a[1].args.outline_path.$ref: bad $ref root")


def test_missing_and_misspelled_fields_are_named() -> None:
    data = appendix_b()
    del data["phase_a"][0]["output_slot"]
    data["phase_b"][0]["promt_type"] = "x"
    problems = _problems(data)
    assert "bad.json: $.phase_a[0].output_slot: Field required" in problems
    assert any(p.startswith("bad.json: $.phase_b[0].promt_type:") for p in problems)


def test_typed_dod_checks_parse_into_their_models() -> None:
    recipe = RecipeCatalog.load(None, TOOLS, PROMPTS).get("creative_draft_scene")
    assert isinstance(recipe.dod[1], SlotFieldEquals) and recipe.dod[1].expected is True
    assert isinstance(recipe.dod[3], FileExists) and isinstance(recipe.dod[3].path, Ref)


def test_workspace_recipes_shadow_bundled_ones_by_id(workspace: Path) -> None:
    data = appendix_b()
    data["label"] = "My own draft recipe"
    write_override(workspace, "mine.json", json.dumps(data))
    catalog = RecipeCatalog.load(workspace, TOOLS, PROMPTS)
    entry = catalog.entry("creative_draft_scene")
    assert entry.recipe.label == "My own draft recipe" and not entry.bundled
    assert catalog.entry("analytical_prose").bundled


def test_a_malformed_override_is_reported_with_its_file(workspace: Path) -> None:
    path = write_override(workspace, "broken.json", '{"recipe_id": "x", ')
    with pytest.raises(RecipeInvalidError) as caught:
        RecipeCatalog.load(workspace, TOOLS, PROMPTS, strict=True)
    assert str(path) in str(caught.value) and "not valid JSON" in str(caught.value)


def test_unknown_recipe_lists_the_known_ones() -> None:
    with pytest.raises(UnknownRecipeError) as caught:
        RecipeCatalog.load(None, TOOLS, PROMPTS).get("nope")
    assert "creative_draft_scene" in str(caught.value)


def test_fingerprint_is_stable_and_changes_with_the_recipe() -> None:
    first = validate_recipe(appendix_b(), "a.json", TOOLS, PROMPTS)
    again = validate_recipe(appendix_b(), "b.json", TOOLS, PROMPTS)
    changed = appendix_b()
    changed["label"] = "other"
    assert first.fingerprint() == again.fingerprint()
    assert first.fingerprint() != validate_recipe(changed, "c.json", TOOLS, PROMPTS).fingerprint()


def test_the_committed_schema_is_generated_from_the_models() -> None:
    assert SCHEMA_FILE.read_text() == render_schema(), (
        "recipes/schema.json is stale: run `controlroom recipes schema > recipes/schema.json`"
    )
