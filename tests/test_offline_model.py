"""The offline provider: deterministic, and its answers come from its inputs."""

from __future__ import annotations

import asyncio
import json

import pytest

from controlroom.domain.errors import ModelConfigError, ModelError
from controlroom.models.offline import OFFLINE_MODEL, OfflineModel
from controlroom.models.offline_roles import HANDLERS
from controlroom.models.port import ModelRequest
from controlroom.prompts.registry import PromptRegistry

CANON = "Canon: 1 cards, 2 facts, 0 conflict(s)\n- Kael: eyes = grey\n- Kael: hair = black"


def ask(prompt_type: str, inputs: dict[str, str], model: str = OFFLINE_MODEL) -> str:
    request = ModelRequest(
        provider="offline",
        model=model,
        tier="t3",
        agent_archetype="x",
        prompt_type=prompt_type,
        prompt="p",
        inputs=inputs,
        task_description="Draft scene 4",
    )
    return asyncio.run(OfflineModel().complete(request)).text


def test_every_bundled_prompt_type_has_an_offline_behaviour() -> None:
    assert set(PromptRegistry.for_workspace(None).prompt_types()) <= set(HANDLERS)


def test_continuity_passes_a_draft_that_agrees_with_canon() -> None:
    report = json.loads(
        ask(
            "check_continuity",
            {"edited_draft": "# S\n\nKael turned. His grey eyes caught the light.", "canon": CANON},
        )
    )
    assert report["pass"] is True and report["facts_checked"] == 2


def test_continuity_fails_a_draft_that_contradicts_canon() -> None:
    report = json.loads(
        ask(
            "check_continuity",
            {"edited_draft": "# S\n\nKael turned. His blue eyes caught the light.", "canon": CANON},
        )
    )
    assert report["pass"] is False
    assert report["conflicts"][0]["found"] == "blue"
    assert report["conflicts"][0]["canon_value"] == "grey"


def test_the_editor_really_edits() -> None:
    edited = ask("polish_draft", {"draft": "# T\n\nShe was very  very tired. it rained."})
    assert edited == "# T\n\nShe was tired. It rained.\n"


def test_answers_are_deterministic_and_depend_on_the_inputs() -> None:
    brief = "# Scene brief: Scene 4 — X\nCharacters: Kael\nBeats:\n1. Kael waits at the gate\n"
    first = ask("draft_scene", {"scene_brief": brief, "canon": CANON})
    assert ask("draft_scene", {"scene_brief": brief, "canon": CANON}) == first
    other = ask("draft_scene", {"scene_brief": brief.replace("waits at", "guards"), "canon": CANON})
    assert "Kael waited at the gate." in first
    assert "Kael guarded the gate." in other


def test_it_refuses_a_model_name_it_does_not_serve_and_unknown_prompt_types() -> None:
    with pytest.raises(ModelConfigError):
        ask("polish_draft", {"draft": "x"}, model="gpt-imaginary")
    with pytest.raises(ModelError):
        ask("write_poem", {"x": "y"})
