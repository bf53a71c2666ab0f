"""The task router: deterministic, longest match wins, no model."""

from __future__ import annotations

from controlroom.domain.recipe import Recipe
from controlroom.domain.router import initial_args_from, route
from controlroom.prompts.registry import PromptRegistry
from controlroom.recipes.catalog import RecipeCatalog
from controlroom.tools.base import ToolRegistry

BUNDLED = RecipeCatalog.load(
    None, ToolRegistry.default().names(), PromptRegistry.for_workspace(None).prompt_types()
).recipes()


def recipe(recipe_id: str, *patterns: str) -> Recipe:
    return Recipe.model_validate({"recipe_id": recipe_id, "task_patterns": list(patterns)})


def test_routes_each_kind_of_task_to_its_recipe() -> None:
    cases = {
        "Draft scene 4 from the outline": "creative_draft_scene",
        "Please run a consistency check on all scenes": "analytical_consistency",
        "pacing review of chapter one": "analytical_prose",
        "Foreshadowing audit": "analytical_foreshadow",
        "validate scene 2": "analytical_scene_validate",
        "Update canon after the ambush": "structural_canon",
        "restructure the outline": "structural_outline",
    }
    for description, expected in cases.items():
        decision = route(description, BUNDLED)
        assert decision.routable and decision.recipe_id == expected, description


def test_the_longest_matching_pattern_wins() -> None:
    recipes = [recipe("short", "scene"), recipe("long", "draft scene")]
    decision = route("Draft scene 3", recipes)
    assert decision.recipe_id == "long" and decision.matched_pattern == "draft scene"
    assert "also short" in decision.reason


def test_matching_ignores_case_and_ties_break_by_recipe_id() -> None:
    decision = route("CHECK THIS", [recipe("b_recipe", "check"), recipe("a_recipe", "CHECK")])
    assert decision.recipe_id == "a_recipe" and "tied" in decision.reason


def test_slash_delimited_patterns_are_regular_expressions() -> None:
    decision = route("write chapter 12 now", [recipe("chapters", r"/chapter \d+/")])
    assert decision.recipe_id == "chapters" and decision.matched_pattern == r"/chapter \d+/"


def test_nothing_matching_is_not_routable_and_says_why() -> None:
    decision = route("bake bread", BUNDLED)
    assert not decision.routable and decision.recipe_id is None
    assert "Chief" in decision.reason
    assert not route("   ", BUNDLED).routable


def test_the_same_description_always_routes_the_same_way() -> None:
    assert len({route("check consistency and pacing", BUNDLED).recipe_id for _ in range(5)}) == 1


def test_initial_args_are_seeded_from_what_the_description_states() -> None:
    args = initial_args_from('Validate scene 2 in Story/Scenes/SCN-02.md, "the ambush"')
    assert args == {
        "paths": ["Story/Scenes/SCN-02.md"],
        "scene_number": 2,
        "quoted": ["the ambush"],
    }


def test_chapters_roman_numerals_number_words_and_ranges_are_extracted() -> None:
    assert initial_args_from("validate chapter IV") == {"chapter_number": 4}
    assert initial_args_from("check the consistency of chapter one") == {"chapter_number": 1}
    assert initial_args_from("review pacing in chapters 2-4") == {"chapter_numbers": [2, 3, 4]}
    assert initial_args_from("foreshadowing in chapters 1 and 7") == {"chapter_numbers": [1, 7]}
    assert initial_args_from('proofread "Story/Chapters/Chapter 1.md"') == {
        "paths": ["Story/Chapters/Chapter 1.md"]
    }
    assert initial_args_from("summarise the manuscript") == {"scope": "manuscript"}


def test_plain_requests_a_writer_makes_are_routed() -> None:
    cases = {
        "Check chapter 3 for continuity errors": "analytical_consistency",
        "proofread chapter 2": "analytical_prose",
        "summarise the manuscript": "structural_outline",
        "Draft chapter 8 from the outline": "creative_draft_scene",
        "Is Dorian's eye colour consistent?": "analytical_consistency",
        "find loose ends in the plot": "analytical_foreshadow",
        "validate chapter IV": "analytical_scene_validate",
        "does scene 2 cover its outline beats?": "analytical_scene_validate",
        "what does a reader feel in chapter 7": "analytical_foreshadow",
        "update the character sheets after chapter 5": "structural_canon",
        "check names are spelled consistently": "analytical_consistency",
    }
    for description, expected in cases.items():
        decision = route(description, BUNDLED)
        assert decision.recipe_id == expected, (description, decision.reason)


def test_an_unroutable_request_names_the_closest_recipes() -> None:
    decision = route("translate the prose into French", BUNDLED)
    assert decision.routable or "closest recipes" in decision.reason
    decision = route("make the villain scarier", BUNDLED)
    assert not decision.routable and "Chief" in decision.reason
