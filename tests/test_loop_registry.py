"""The loop registry (tier 1) as `controlroom loops` and `GET /api/loops` list it, generated
from the workspace's loop recipes, and the next loop proposed when a loop run has ended
(issue 27, items 5 and 7)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlroom.domain.capabilities import available_capabilities, missing
from controlroom.domain.loop_listing import listing, plan_intent
from controlroom.domain.loop_registry import (
    approx_tokens,
    full_definitions_text,
    propose_next,
    registry,
    tier1_text,
)
from controlroom.domain.recipe import Recipe
from controlroom.domain.router import route
from controlroom.engine.context import Context
from controlroom.engine.plans import PlanService
from controlroom.prompts.registry import PromptRegistry
from controlroom.recipes.catalog import RecipeCatalog
from controlroom.tools.base import ToolRegistry
from tests.conftest import REPO, write_override
from tests.live import live_server
from tests.test_cli_e2e import cli

STYLE = REPO / "recipes" / "loop_style_tune_up.json"


@pytest.fixture(autouse=True)
def no_capabilities(monkeypatch: pytest.MonkeyPatch) -> None:
    """This install has no capability beyond text models unless a test names one."""
    monkeypatch.delenv("CONTROLROOM_CAPABILITIES", raising=False)


def loop_recipe(recipe_id: str, **loop: Any) -> str:
    """The Style Tune-up recipe under another id, its loop fields changed: a second loop."""
    data: dict[str, Any] = json.loads(STYLE.read_text())
    data["recipe_id"] = recipe_id
    data["task_patterns"] = [f"{loop['name']} loop"]
    data["loop"].update(loop)
    return json.dumps(data)


def with_two_more_loops(workspace: Path) -> None:
    """`gatecheck` (needs speech) and `archive_snapshot`: what Style Tune-up often precedes,
    in that order, made loops of this workspace."""
    write_override(
        workspace,
        "loop_gatecheck.json",
        loop_recipe(
            "loop_gatecheck",
            name="gatecheck",
            purpose="Check the revised prose against every gate",
            often_follows=["style_tune_up"],
            often_precedes=[],
            needs=["speech"],
        ),
    )
    write_override(
        workspace,
        "loop_archive_snapshot.json",
        loop_recipe(
            "loop_archive_snapshot",
            name="archive_snapshot",
            purpose="Snapshot the manuscript as it stands",
            often_follows=["gatecheck"],
            often_precedes=[],
        ),
    )


def catalog(workspace: Path) -> list[Recipe]:
    prompts = PromptRegistry.for_workspace(workspace)
    loaded = RecipeCatalog.load(workspace, ToolRegistry.default().names(), prompts.prompt_types())
    assert not loaded.problems, loaded.problems
    return loaded.recipes()


# -- the registry, generated from the recipes -------------------------------------------------


def test_the_registry_is_generated_from_the_loop_recipes(workspace: Path) -> None:
    recipes = catalog(workspace)
    found = {loop.name: loop for loop in listing(recipes, {}).loops}
    bundled = [json.loads(p.read_text()) for p in sorted((REPO / "recipes").glob("*.json"))]
    declared = {d["loop"]["name"]: d for d in bundled if isinstance(d.get("loop"), dict)}
    assert set(found) == set(declared)  # every loop recipe, and nothing else
    for name, recipe in declared.items():
        loop = recipe["loop"]
        assert found[name].recipe_id == recipe["recipe_id"]
        assert found[name].purpose == loop["purpose"]
        assert found[name].scope == loop["scope"]["summary"]
        assert found[name].often_precedes == loop.get("often_precedes", [])
        assert found[name].often_follows == loop.get("often_follows", [])
        assert found[name].typical_inputs == loop.get("typical_inputs", [])
        assert found[name].needs == loop.get("needs", [])
        assert found[name].available == (not loop.get("needs"))  # no capabilities named
    assert found["style_tune_up"].recipe_id == "loop_style_tune_up"
    assert json.loads(tier1_text(recipes)) == registry(recipes)


def test_a_recipe_override_in_the_workspace_changes_the_registry(workspace: Path) -> None:
    data = json.loads(STYLE.read_text())
    data["loop"]["purpose"] = "Tune the voice, this workspace's way"
    write_override(workspace, "loop_style_tune_up.json", json.dumps(data))
    with_two_more_loops(workspace)
    found = {loop.name: loop for loop in listing(catalog(workspace), {}).loops}
    assert {"style_tune_up", "gatecheck", "archive_snapshot"} <= set(found)
    assert found["style_tune_up"].purpose == "Tune the voice, this workspace's way"
    assert found["gatecheck"].recipe_id == "loop_gatecheck"
    assert found["gatecheck"].missing == ["speech"] and not found["gatecheck"].available
    with_speech = {loop.name: loop for loop in listing(catalog(workspace), env_speech()).loops}
    assert with_speech["gatecheck"].available and with_speech["gatecheck"].missing == []


def env_speech() -> dict[str, str]:
    return {"CONTROLROOM_CAPABILITIES": "Speech, image_generation"}


def test_tier1_is_measured_against_every_loops_full_definition(workspace: Path) -> None:
    with_two_more_loops(workspace)
    recipes = catalog(workspace)
    found = listing(recipes, {})
    assert found.tier1_tokens == approx_tokens(tier1_text(recipes))
    assert found.full_tokens == approx_tokens(full_definitions_text(recipes))
    # Tier 1 is the compact one: each full definition holds its loop's registry fields.
    assert 0 < found.tier1_tokens < found.full_tokens / 3
    assert approx_tokens("") == 0 and approx_tokens("abcd") == 1 and approx_tokens("abcde") == 2


def test_capabilities_are_read_from_one_variable() -> None:
    assert available_capabilities({}) == frozenset()
    assert available_capabilities({"CONTROLROOM_CAPABILITIES": " speech,, Image "}) == {
        "speech",
        "image",
    }
    assert missing(["speech", "image"], {"CONTROLROOM_CAPABILITIES": "image"}) == ["speech"]
    assert missing([], {}) == []


# -- the next loop --------------------------------------------------------------------------

REGISTRY: dict[str, dict[str, object]] = {
    "style_tune_up": {
        "purpose": "Refine the style",
        "often_follows": ["story_spark"],
        "often_precedes": ["not_a_loop", "gatecheck", "archive_snapshot"],
    },
    "gatecheck": {"purpose": "Check every gate", "often_follows": [], "needs": ["speech"]},
    "archive_snapshot": {"purpose": "Snapshot the book", "often_follows": []},
    "polish": {"purpose": "Polish the prose", "often_follows": ["style_tune_up"]},
}


def test_the_next_loop_is_the_first_it_often_precedes_that_this_install_can_run() -> None:
    proposed = propose_next(REGISTRY, "style_tune_up", "stable", {})
    assert proposed is not None
    name, reason = proposed
    assert name == "gatecheck"  # `not_a_loop` is no loop of the catalog: passed over
    assert "style_tune_up ended stable" in reason and "often precedes gatecheck" in reason


def test_a_loop_whose_needs_are_missing_is_skipped_and_the_reason_says_so() -> None:
    proposed = propose_next(REGISTRY, "style_tune_up", "stable", {"gatecheck": ["speech"]})
    assert proposed is not None
    name, reason = proposed
    assert name == "archive_snapshot"
    assert "gatecheck skipped: it needs speech, which this install lacks" in reason


def test_the_fallback_is_a_loop_that_often_follows_the_finished_one() -> None:
    lacking = {"gatecheck": ["speech"], "archive_snapshot": ["disk"]}
    proposed = propose_next(REGISTRY, "style_tune_up", "capped", lacking)
    assert proposed is not None
    name, reason = proposed
    assert name == "polish" and "polish often follows it" in reason
    assert "capped, not stable" in reason
    assert "gatecheck skipped" in reason and "archive_snapshot skipped" in reason


def test_nothing_is_proposed_when_tier1_names_no_loop_this_install_can_run() -> None:
    assert propose_next(REGISTRY, "polish", "stable", {}) is None
    assert propose_next(REGISTRY, "gone_from_the_catalog", "stable", {}) is None
    lacking = {"gatecheck": ["speech"], "archive_snapshot": ["x"], "polish": ["y"]}
    assert propose_next(REGISTRY, "style_tune_up", "stable", lacking) is None


# -- a Chief's plan can hold a loop -----------------------------------------------------------


def test_a_plan_intent_naming_a_loop_routes_to_the_loop_recipe(workspace: Path) -> None:
    recipes = catalog(workspace)
    assert route("style tune-up of chapter 3", recipes).recipe_id == "loop_style_tune_up"
    style = next(r for r in recipes if r.recipe_id == "loop_style_tune_up")
    intent = plan_intent(style, recipes)
    assert intent is not None and route(intent, recipes).recipe_id == "loop_style_tune_up"
    ctx = Context.open(workspace)
    try:
        plan = asyncio.run(PlanService(ctx).create("style tune-up of chapter 3"))
    finally:
        ctx.close()
    (task,) = plan.tasks.values()
    assert task.recipe_id == "loop_style_tune_up", task.routing_reason
    assert task.args == {"chapter_number": 3}


def test_a_chiefs_plan_can_hold_loops_one_after_another(workspace: Path) -> None:
    with_two_more_loops(workspace)
    ctx = Context.open(workspace)
    try:
        intent = "style tune-up of chapter 3, then gatecheck loop"
        plan = asyncio.run(PlanService(ctx).create(intent))
    finally:
        ctx.close()
    tasks = [plan.tasks[i] for i in sorted(plan.tasks)]
    assert [t.recipe_id for t in tasks] == ["loop_style_tune_up", "loop_gatecheck"]
    assert tasks[1].deps == [tasks[0].task_id]


# -- end to end: the CLI in a subprocess, the API over HTTP ------------------------------------


@pytest.mark.e2e
@pytest.mark.timeout(120)
def test_the_cli_lists_the_loops_and_proposes_the_next_one(workspace: Path) -> None:
    ws = str(workspace)
    with_two_more_loops(workspace)
    listed = cli("loops", "-w", ws)
    assert listed.returncode == 0, listed.stderr
    assert "style_tune_up  (recipe loop_style_tune_up)" in listed.stdout
    assert "needs: speech (missing speech; CONTROLROOM_CAPABILITIES)" in listed.stdout
    assert "tier 1: ~" in listed.stdout and "for their full definitions" in listed.stdout
    as_json = json.loads(cli("loops", "--json", "-w", ws).stdout)
    assert set(as_json) == {"loops", "tier1_tokens", "full_tokens"}
    assert as_json["tier1_tokens"] < as_json["full_tokens"]
    assert not (workspace / ".control-room" / "events.sqlite").exists()  # listing records nothing

    ran = cli("run", "loop_style_tune_up", "-w", ws, "--json", "-q")
    assert ran.returncode == 0, ran.stderr
    run_id = json.loads(ran.stdout)["run_id"]

    proposed = cli("loops", "next", run_id, "-w", ws)
    assert proposed.returncode == 0, proposed.stderr
    assert "next loop proposed: archive_snapshot — style_tune_up ended stable" in proposed.stdout
    assert "gatecheck skipped: it needs speech" in proposed.stdout
    assert 'controlroom plan create "archive_snapshot loop"' in proposed.stdout
    assert f"controlroom loops next {run_id} --accept PLAN_ID" in proposed.stdout

    with_speech = cli("loops", "next", run_id, "--json", "-w", ws, env=env_speech())
    assert with_speech.returncode == 0, with_speech.stderr
    found = json.loads(with_speech.stdout)
    assert found["ending"] == "stable" and found["proposal"]["loop"] == "gatecheck"
    assert found["proposal"]["recipe_id"] == "loop_gatecheck"

    shown = cli("show", run_id, "-w", ws)
    assert "next loop proposed: archive_snapshot" in shown.stdout

    # The command it prints plans the proposed loop: the Chief's task routes to its recipe.
    planned = cli("plan", "create", "archive_snapshot loop", "-w", ws, "--json")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert [t["recipe_id"] for t in plan["tasks"]] == ["loop_archive_snapshot"]

    # Accepted into a session plan: a new task, routed to the loop's recipe, after the last.
    accepted = cli("loops", "next", run_id, "--accept", plan["plan_id"], "-w", ws)
    assert accepted.returncode == 0, accepted.stderr
    assert f"added to plan {plan['plan_id']} as task 2" in accepted.stdout
    shown_plan = json.loads(cli("plan", "show", plan["plan_id"], "--json", "-w", ws).stdout)
    added = shown_plan["tasks"][-1]
    assert added["recipe_id"] == "loop_archive_snapshot" and added["deps"] == [1]
    unknown = cli("loops", "next", run_id, "--accept", "plan_nope", "-w", ws)
    assert unknown.returncode == 64 and "no plan 'plan_nope'" in unknown.stderr


@pytest.mark.e2e
@pytest.mark.timeout(120)
def test_next_is_refused_for_a_run_that_runs_no_loop(workspace: Path) -> None:
    ws = str(workspace)
    ran = cli("run", "structural_outline", "-w", ws, "--json", "-q")
    assert ran.returncode == 0, ran.stderr
    run_id = json.loads(ran.stdout)["run_id"]
    refused = cli("loops", "next", run_id, "-w", ws)
    assert refused.returncode == 64 and "runs no loop" in refused.stderr
    assert "next loop" not in cli("show", run_id, "-w", ws).stdout
    assert cli("loops", "next", "-w", ws).returncode == 64


@pytest.mark.e2e
@pytest.mark.timeout(60)
def test_get_api_loops_is_what_the_cli_prints(workspace: Path) -> None:
    with_two_more_loops(workspace)
    printed = json.loads(cli("loops", "--json", "-w", str(workspace)).stdout)
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        served = client.get("/api/loops")
        document = client.get("/openapi.json").json()
    assert served.status_code == 200
    assert served.json() == printed
    names = [loop["name"] for loop in served.json()["loops"]]
    assert {"archive_snapshot", "gatecheck", "style_tune_up"} <= set(names)
    gatecheck = next(loop for loop in served.json()["loops"] if loop["name"] == "gatecheck")
    assert gatecheck["recipe_id"] == "loop_gatecheck" and gatecheck["missing"] == ["speech"]
    operation = document["paths"]["/api/loops"]["get"]
    assert operation["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/LoopsListing"
    }
