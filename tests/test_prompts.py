"""The prompt registry: layering, tier fallback and `{{slot}}` injection."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from controlroom.domain.errors import PromptError
from controlroom.domain.steps import AgentStep
from controlroom.prompts.registry import BUNDLED_DIR, PromptRegistry
from controlroom.recipes.catalog import RecipeCatalog
from controlroom.tools.base import ToolRegistry


def test_every_prompt_type_of_the_bundled_recipes_has_a_template() -> None:
    registry = PromptRegistry.for_workspace(None)
    catalog = RecipeCatalog.load(None, ToolRegistry.default().names(), registry.prompt_types())
    for recipe in catalog.recipes():
        for step in recipe.phase_b:
            if not isinstance(step, AgentStep):
                continue
            for tier in ("t1", "t3", "t5"):
                _, path = registry.variant_for(step.prompt_type, tier)
                assert path.is_file()


def test_tiers_fall_back_to_the_closest_variant() -> None:
    registry = PromptRegistry.for_workspace(None)
    assert registry.variant_for("refine_brief", "t5")[0] == "t5"
    # The conference's prompt types exist for one tier each: the others fall back.
    assert registry.variant_for("conference_interpret", "t1")[0] == "t3"  # no t1: t3
    assert registry.variant_for("conference_interpret", "t5")[0] == "t3"  # no t5: t3
    assert registry.variant_for("conference_synthesis", "t3")[0] == "t5"  # t3, t1 missing
    assert registry.variant_for("conference_triage", "t5")[0] == "t1"
    with pytest.raises(PromptError, match="unknown tier"):
        registry.variant_for("draft_scene", "t9")


#: Prompt types made for one tier's decomposition (a T1 micro-call, the T3 interpretation,
#: the T5 synthesis of a conference): a variant for another tier would never be used.
TIER_SPECIFIC = {
    "conference_interpret": "t3",
    "conference_synthesis": "t5",
    "conference_triage": "t1",
    "conference_finding": "t1",
    "conference_evidence": "t1",
    "step_triage": "t1",
    "step_evidence": "t1",
    # The escalation ladder's own calls (consult, synthesis, triage) are made at T3.
    "ladder_consult": "t3",
    "ladder_synthesize": "t3",
    "ladder_triage": "t3",
}
#: Appendix F's guideline is about 200, 500 and 800 words; these bounds catch a stub or a
#: variant that is really another tier's.
WORDS = {"t1": (110, 320), "t3": (300, 700), "t5": (450, 1050)}
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_\-]*)\s*\}\}")


def test_every_prompt_type_has_t1_t3_and_t5_variants_of_their_tiers_length() -> None:
    registry = PromptRegistry.for_workspace(None)
    for prompt_type in registry.prompt_types():
        variants = registry.entries[prompt_type].variants
        if prompt_type in TIER_SPECIFIC:
            assert list(variants) == [TIER_SPECIFIC[prompt_type]], prompt_type
            continue
        assert sorted(variants) == ["t1", "t3", "t5"], prompt_type
        counts = {}
        placeholders = {}
        for tier in ("t1", "t3", "t5"):
            variant, path = registry.variant_for(prompt_type, tier)
            assert variant == tier
            text = path.read_text(encoding="utf-8")
            counts[tier] = len(text.split())
            low, high = WORDS[tier]
            assert low <= counts[tier] <= high, (path.name, counts[tier])
            placeholders[tier] = set(PLACEHOLDER.findall(text))
        assert counts["t1"] < counts["t3"] < counts["t5"], (prompt_type, counts)
        # The tier changes how the step is asked, never what it is given.
        assert placeholders["t1"] == placeholders["t3"] == placeholders["t5"], prompt_type


@pytest.mark.parametrize("tier", ["t1", "t3", "t5"])
def test_every_recipe_agent_step_renders_at_every_tier(tier: str) -> None:
    registry = PromptRegistry.for_workspace(None)
    catalog = RecipeCatalog.load(None, ToolRegistry.default().names(), registry.prompt_types())
    for recipe in catalog.recipes():
        for step in recipe.phase_b:
            if not isinstance(step, AgentStep):
                continue
            # A loop's item and a packet are inputs the engine adds to the step's own.
            extra = ["item", "item_index", "previous_items", "task_packet"]
            slots = {name: f"<{name}>" for name in [*step.input_slots, *extra]}
            rendered = registry.render(step.prompt_type, tier, "the task", slots)
            assert rendered.variant == tier
            assert "{{" not in rendered.text, (recipe.recipe_id, step.step_id, tier)


def test_slots_and_task_are_injected_and_unplaced_slots_are_appended() -> None:
    registry = PromptRegistry.for_workspace(None)
    rendered = registry.render(
        "refine_brief",
        "t3",
        "Draft scene 4",
        {"outline_beat": "BEAT", "canon_context": "CANON", "extra": "X"},
    )
    assert "Draft scene 4" in rendered.text
    assert "## Outline Beat\nBEAT" in rendered.text and "CANON" in rendered.text
    assert rendered.text.endswith("## extra\nX")
    assert "{{" not in rendered.text


def test_a_template_asking_for_a_slot_the_step_does_not_read_is_an_error() -> None:
    registry = PromptRegistry.for_workspace(None)
    with pytest.raises(PromptError, match="does not read slot 'canon_context'"):
        registry.render("refine_brief", "t3", "task", {"outline_beat": "x"})


def test_workspace_and_home_layers_override_bundled_templates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / "prompts" / "templates").mkdir(parents=True)
    (home / "prompts" / "templates" / "polish_draft.t3.md").write_text("HOME {{draft}}")
    monkeypatch.setenv("CONTROLROOM_HOME", str(home))
    workspace = tmp_path / "ws"
    layer = workspace / ".control-room" / "prompts"
    (layer / "templates").mkdir(parents=True)
    (layer / "templates" / "critic_custom.t5.md").write_text("WS {{draft}}")
    (layer / "prompts.json").write_text(
        json.dumps(
            {
                "pipeline_templates": {
                    "custom_critique": {
                        "label": "mine",
                        "variants": {"t5": "templates/critic_custom.t5.md"},
                    },
                }
            }
        )
    )
    registry = PromptRegistry.for_workspace(workspace)
    assert registry.render("polish_draft", "t3", "", {"draft": "D"}).text == "HOME D"
    assert registry.render("custom_critique", "t3", "", {"draft": "D"}).text == "WS D"
    assert "refine_brief" in registry.prompt_types()
    assert (BUNDLED_DIR / "prompts.json").is_file()


def test_a_broken_registry_file_names_itself(tmp_path: Path) -> None:
    layer = tmp_path / "layer"
    layer.mkdir()
    (layer / "prompts.json").write_text("{not json")
    with pytest.raises(PromptError, match=r"prompts\.json"):
        PromptRegistry([layer])
