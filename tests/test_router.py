"""The task router: deterministic, the most specific recipe wins, no model."""

from __future__ import annotations

import json
from pathlib import Path

import pydantic
import pytest

import controlroom.domain.packet_steps  # noqa: F401  (registers the playbook's step kinds)
from controlroom.domain.recipe import Recipe
from controlroom.domain.router import closest_recipes, initial_args_from, route
from controlroom.domain.router_clauses import (
    CONTEXT,
    COURTESY,
    HOW,
    TASK,
    clause_weights,
    clauses,
)
from controlroom.prompts.registry import PromptRegistry
from controlroom.recipes.catalog import RecipeCatalog
from controlroom.tools.base import ToolRegistry

BUNDLED = RecipeCatalog.load(
    None, ToolRegistry.default().names(), PromptRegistry.for_workspace(None).prompt_types()
).recipes()


def recipe(recipe_id: str, *patterns: str) -> Recipe:
    return Recipe.model_validate({"recipe_id": recipe_id, "task_patterns": list(patterns)})


def assert_routes(cases: dict[str, str]) -> None:
    """Each request routes to its recipe among the bundled ones (the reason on failure)."""
    for description, expected in cases.items():
        decision = route(description, BUNDLED)
        assert decision.recipe_id == expected, (description, decision.reason)


def routed_right(name: str, split: str) -> tuple[int, int]:
    """How many of a labelled request set's half route to an acceptable recipe, of how many."""
    rows = json.loads((Path(__file__).parent.parent / "bench" / name).read_text("utf-8"))
    chosen = [row for row in rows["requests"] if row["split"] == split]
    right = [
        row
        for row in chosen
        if (route(row["request"], BUNDLED).recipe_id or None) in (row["acceptable"] or [None])
    ]
    return len(right), len(chosen)


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


def test_the_more_specific_pattern_wins() -> None:
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
    assert_routes(cases)


def test_an_unroutable_request_names_the_closest_recipes() -> None:
    # "prose" is the prose review's word, but requests like it are ones no recipe does
    decision = route("translate the prose into French", BUNDLED)
    assert not decision.routable and "reads most like requests no recipe does" in decision.reason
    assert 'controlroom plan create "translate the prose into French"' in decision.reason
    decision = route("make the villain scarier", BUNDLED)
    assert not decision.routable and "Chief" in decision.reason


def test_words_match_whole_and_by_stem_not_as_substrings() -> None:
    stakes = [recipe("stakes", "stakes")]
    assert not route("list the mistakes in chapter 2", stakes).routable
    assert route("what is at stake", stakes).routable
    validating = [recipe("validate", "validate chapter")]
    assert route("validating chapters 1-3", validating).recipe_id == "validate"
    summaries = [recipe("summary", "summarise the book")]
    assert route("Summarize the book", summaries).routable  # American and British spelling
    assert route("Summarising my book", summaries).routable


def test_a_typo_in_a_long_word_is_read_as_the_word_and_a_short_word_is_not() -> None:
    assert route("consistancy check", [recipe("c", "consistency")]).routable
    assert not route("what it tells us", [recipe("t", "tall")]).routable


def test_the_most_specific_recipe_wins_over_the_longest_string() -> None:
    cases = {
        "Write chapter 13 beat by beat": "write_scene_from_outline",
        "Summarise chapter 9": "analytical_scene_validate",
        "Critique chapter 8": "analytical_prose",
        "Tighten the dialogue in chapter 4": "analytical_prose",
        "Is she left-handed?": "analytical_consistency",
        "Add the new facts from chapter 12 to the character notes": "structural_canon",
        "Write the next chapter": "creative_draft_scene",
        "summarise the whole book": "structural_outline",
    }
    assert_routes(cases)


def test_an_unroutable_request_names_plan_create_and_only_fitting_recipes() -> None:
    decision = route("make the villain scarier", BUNDLED)
    assert 'controlroom plan create "make the villain scarier"' in decision.reason
    assert "Closest recipes" not in decision.reason  # nothing there fits
    # a recipe fits when two specific words of one of its phrases are there, out of order
    assert closest_recipes("Where are the holes in my plot?", BUNDLED) == [
        "analytical_consistency"  # "plot holes"
    ]
    # ... which the second reading, by example requests, routes there on its own
    decision = route("Where are the holes in my plot?", BUNDLED)
    assert decision.recipe_id == "analytical_consistency"
    assert "the patterns alone found no recipe" in decision.reason
    # one shared word is no fit: "date" is the canon's, "cover" the art loop's
    for nothing_fits in (
        "Write a tweet announcing my launch date.",
        "write a blurb for the back cover",
        "Set up a mailing list signup page for my website.",
    ):
        decision = route(nothing_fits, BUNDLED)
        assert not decision.routable and "Closest recipes" not in decision.reason, nothing_fits


def test_the_labelled_requests_route_right_on_both_halves() -> None:
    """bench/router_requests.json: the held-out half was never used to tune patterns."""
    for split in ("dev", "held_out"):
        right, total = routed_right("router_requests.json", split)
        assert total >= 75 and right >= 0.9 * total, split


def test_requests_written_blind_route_right_no_less_often_than_measured() -> None:
    """bench/router_requests_blind*.json, written by others who never saw the patterns: a
    floor under what BENCHMARKS.md reports (sets 1 and 2: dev 94-96%, held out 82-87%; set
    3, the newest: dev 83%, held out 68%), so a pattern that helps one request and costs
    several others fails here."""
    floors = {
        "router_requests_blind.json": (0.9, 0.8),
        "router_requests_blind2.json": (0.9, 0.8),
        "router_requests_blind3.json": (0.8, 0.65),
        "router_requests_blind4.json": (0.9, 0.75),
        "router_requests_blind5.json": (0.9, 0.8),
        "router_requests_blind6.json": (0.9, 0.75),
        "router_requests_blind7.json": (0.9, 0.8),
        "router_requests_blind8.json": (0.9, 0.85),
        "router_requests_blind9.json": (0.9, 0.85),
        "router_requests_blind10.json": (0.9, 0.85),
        "router_requests_blind11.json": (0.9, 0.85),
    }
    for name, (dev, held_out) in floors.items():
        for split, floor in (("dev", dev), ("held_out", held_out)):
            right, total = routed_right(name, split)
            assert right >= floor * total, (name, split, right, total)


def test_a_prohibition_is_a_constraint_on_the_task_not_the_task() -> None:
    recipes = [recipe("draft", "write the scene"), recipe("check", "contradict", "character cards")]
    request = "Write the scene at the well. Don't contradict anything in the character cards!"
    assert route(request, recipes).recipe_id == "draft"
    assert route(
        "write the scene, but never contradict the character cards", recipes
    ).recipe_id == ("draft")
    # a request that is nothing but a prohibition is read whole rather than not at all
    assert route("don't contradict the character cards", recipes).recipe_id == "check"


def test_the_outline_named_as_a_source_is_not_a_request_about_the_outline() -> None:
    recipes = [recipe("draft", "write", "draft it"), recipe("outline", "outline")]
    assert route("take the outline for the prologue and write it", recipes).recipe_id == "draft"
    assert route("draft it from my outline", recipes).recipe_id == "draft"
    assert route("swap chapters 14 and 16 in the outline", recipes).recipe_id == "outline"
    # a regex pattern reads the request as written
    regex = [recipe("from_outline", r"/\bfrom (?:the|my) outline\b/")]
    assert route("draft it from my outline", regex).recipe_id == "from_outline"


def test_a_mistyped_recipe_id_is_not_read_as_a_request() -> None:
    decision = route("creative_draft_scenee", BUNDLED)
    assert not decision.routable and "recipe id" in decision.reason


def test_a_word_that_is_no_word_but_one_letter_from_a_patterns_word_is_read_as_it() -> None:
    recipes = [recipe("check", "check against the character cards"), recipe("tale", "tall tale")]
    decision = route("chek ch 3 agianst the charcter cards", recipes)
    assert decision.routable and decision.recipe_id == "check"
    # A real word is never "corrected" into a pattern's word: "tale" is not a typo of "tall".
    assert not route("a tale of chapter 3", [recipe("tall", "tall")]).routable


def test_a_matching_regex_outweighs_single_words() -> None:
    recipes = [
        recipe("words", "revise", "manuscript"),
        recipe("whole", r"/\brevise (?:all|every) chapters?\b/"),
    ]
    assert route("revise all chapters of the manuscript", recipes).recipe_id == "whole"
    assert route("revise chapter 3 of the manuscript", recipes).recipe_id == "words"


def test_revising_chapters_routes_to_the_revision_recipes() -> None:
    cases = {
        "Rewrite chapter 5 to tighten it up.": "revision_pass",
        "redo the next chapter, it's not working": "revision_pass",
        "Revise the whole manuscript chapter by chapter.": "manuscript_revision",
        "revise every one of the chapters": "manuscript_revision",
        "Do a staged revision of ch 4": "chapter_revision",
        "tighten chapter 10": "analytical_prose",
    }
    assert_routes(cases)


def test_a_writers_shorthand_for_chapters_and_scenes_is_read() -> None:
    for description in ("draft ch3", "draft ch. 3", "draft sc. 4, ch 11", "draft chapter three"):
        decision = route(description, BUNDLED)
        assert decision.recipe_id == "creative_draft_scene", (description, decision.reason)
    assert initial_args_from("draft ch 11")["chapter_number"] == 11
    # "ch3" and "sc4" give their numbers to the drafting target, as "chapter 3" does
    assert initial_args_from("draft ch3") == {"chapter_number": 3}
    assert initial_args_from("draft sc. 4, ch 11") == {"scene_number": 4, "chapter_number": 11}
    assert initial_args_from("the science of it") == {}
    # a regex's match is named by the request's own words, not by the regex
    assert "the words 'draft ch3'" in route("draft ch3", BUNDLED).reason


def test_the_task_is_the_first_clause_that_asks_and_the_rest_weigh_less() -> None:
    parts = [
        part.strip()
        for _, part in clauses(
            "I've got dangling threads everywhere. Go through them - decide what to do with each."
        )
    ]
    assert parts == [
        "I've got dangling threads everywhere",
        "Go through them",
        "decide what to do with each",
    ]
    assert clause_weights(parts) == [CONTEXT, TASK, HOW]
    # a question asks; a statement of what is there does not; no clause that asks: all task
    assert clause_weights(["Is chapter six consistent", "the magic feels off"]) == [TASK, CONTEXT]
    assert clause_weights(["Outline says it's in ch6", "can you write it"]) == [CONTEXT, TASK]
    assert clause_weights(["the prose is flabby"]) == [TASK]
    recipes = [recipe("revise", "revise"), recipe("check", "check canon", "prose pass")]
    request = "revise chapter 8 — check it against canon first and then do a prose pass"
    assert route(request, recipes).recipe_id == "check"  # more words, though only how
    recipes = [recipe("revise", "revise chapter"), recipe("check", "check canon")]
    assert route(request, recipes).recipe_id == "revise"  # as many words: the task's win


def test_no_bundled_phrase_pattern_is_one_word_once_its_small_words_are_dropped() -> None:
    """ "as you go" read word by word is "go", which matched every "go through them": a
    phrase whose meaning is in its small words is written as a regex."""
    from controlroom.domain.router import _is_regex, _stems

    thinned = [
        (r.recipe_id, p)
        for r in BUNDLED
        for p in r.task_patterns
        if not _is_regex(p) and len(p.split()) > 1 and len(_stems(p)) < 2
    ]
    assert thinned == []


def test_a_request_for_two_recipes_work_routes_to_the_recipe_that_combines_them() -> None:
    check = recipe("check", "against the cards")
    prose = recipe("prose", "prose review")
    both = Recipe.model_validate(
        {
            "recipe_id": "both",
            "task_combines": [{"recipes": ["check", "prose"], "unless": r"\bwhole book\b"}],
        }
    )
    recipes = [check, prose, both]
    decision = route("Check chapter 4 against the cards, then a prose review.", recipes)
    assert decision.recipe_id == "both"
    assert "combines" in decision.reason and "'against the cards'" in decision.reason
    assert route("Check chapter 4 against the cards.", recipes).recipe_id == "check"
    # its scope leaves it out; a part stated, not asked for, does not count
    whole = "The whole book: against the cards, and a prose review"
    assert route(whole, recipes).recipe_id != "both"
    assert route("It reads against the cards. Do a prose review.", recipes).recipe_id == "prose"
    assert_routes(
        {
            "Can you do both checks on Chapters/04.md, canon consistency and prose review?": (
                "chapter_revision"
            ),
            "Full revision on ch 11 - continuity and then line-level style.": "chapter_revision",
            "draft + continuity-fix loop on the airport scene pls": "verified_draft_scene",
        }
    )


def test_courtesies_weigh_nothing_and_a_needed_piece_of_work_is_asked_for() -> None:
    parts = [p for _, p in clauses("Thanks for the notes yesterday! Scene 3 needs writing. Cheers")]
    assert clause_weights(parts) == [COURTESY, TASK, COURTESY]
    parts = [p for _, p in clauses("Quick question before my readers see it: check the names")]
    assert clause_weights(parts) == [CONTEXT, TASK]
    assert route("Many thanks!", BUNDLED).routable is False
    assert_routes(
        {
            "Thanks for the prose notes yesterday! Now: scene three of chapter ten needs "
            "writing from its outline beat.": "creative_draft_scene",
        }
    )


def test_a_request_that_says_what_it_does_not_want_is_routed_by_what_it_wants() -> None:
    recipes = [recipe("draft", "rough draft"), recipe("revise", "polish")]
    request = "A rough draft of the wedding scene, please. No need to polish it, I'll do that."
    assert route(request, recipes).recipe_id == "draft"
    assert route("Not asking for a polish: just a rough draft", recipes).recipe_id == "draft"


def test_a_real_word_is_never_read_as_a_misspelt_pattern_word() -> None:
    # "generally" stems to "general", one letter from "generat(e)": it is a word, not a typo
    recipes = [recipe("draft", "generate chapter"), recipe("check", "against the cards")]
    request = "And more generally, check the names in chapters 1-4 against the cards."
    assert route(request, recipes).recipe_id == "check"


def test_work_no_task_starts_is_answered_with_the_command_that_starts_it() -> None:
    decision = route(
        "Get the whole team to weigh in on whether we should cut the Paris subplot.", BUNDLED
    )
    assert decision.routable is False
    assert 'controlroom conference "QUESTION"' in decision.reason
    decision = route("review task 3 of the revision plan against its definition of done", BUNDLED)
    assert decision.routable is False and "controlroom plan show" in decision.reason
    # never offered as the closest recipe of a request nothing fits
    assert "conference_round" not in closest_recipes("a conference about the book", BUNDLED)
    assert route("Set up a mailing list signup page for my website.", BUNDLED).routable is False


def test_a_combination_whose_scope_is_no_regular_expression_is_refused_at_load() -> None:
    with pytest.raises(pydantic.ValidationError, match="not a regular expression"):
        Recipe.model_validate(
            {"recipe_id": "both", "task_combines": [{"recipes": ["a", "b"], "unless": "(whole"}]}
        )
