"""Task packets and agent receipts v0.1 (seed 001 PH-0): a well-formed packet and receipt
are accepted, the known-bad variants are refused, and the exported schemas are current."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from controlroom.domain.packets import AgentReceipt, ReceiptReply, TaskPacket, undeclared_paths
from controlroom.domain.schemas import HERE, rendered

AT = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def packet(**changes: Any) -> dict[str, Any]:
    good: dict[str, Any] = {
        "packet_id": "pkt_1",
        "parent_issue_id": None,
        "parent_packet_id": None,
        "intent": "write",
        "target": "writer",
        "scope": {"description": "Write beat 1 of scene 4", "paths": [], "item_index": 0},
        "inputs": [{"slot": "scene_plan", "sha256": "a" * 64, "summary": "the plan"}],
        "constraints": ["past tense", "no new characters"],
        "output_contract": {"schema_name": "receipt_reply", "expected_artifacts": []},
        "handoff": {"to": "critic"},
        "timestamp": AT,
        "requested_by": "engine",
    }
    good.update(changes)
    return good


def reply(**changes: Any) -> dict[str, Any]:
    good: dict[str, Any] = {
        "output": "Kael climbed the wall.",
        "outputs_produced": [],
        "reasoning_summary": "Wrote the beat from the plan.",
        "decisions": ["kept the dawn light"],
        "checks_performed": ["names match the canon cards"],
        "assumptions": [],
        "risks": [],
        "next_recommended_action": "critique the scene",
        "STOP_HOOK": False,
        "citations": ["scene_plan"],
        "report_excerpt": "The beat is written. It follows the plan.",
    }
    good.update(changes)
    return good


def test_a_well_formed_packet_and_receipt_are_accepted() -> None:
    assert TaskPacket.model_validate(packet()).intent == "write"
    receipt = AgentReceipt.model_validate(
        {
            **reply(),
            "receipt_id": "rcpt_1",
            "packet_id": "pkt_1",
            "issue_id": None,
            "actor": {
                "agent": "writer",
                "agent_id": "writer-001",
                "provider": "offline",
                "model": "offline-1",
                "tier": "t3",
                "decoding": {"temperature": 0.7},
            },
            "started_at": AT,
            "finished_at": AT + timedelta(seconds=1),
            "inputs_used": ["scene_plan"],
        }
    )
    assert receipt.STOP_HOOK is False


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"intent": None}, "intent"),  # a required field missing its value
        ({"intent": "improvise"}, "intent"),  # not one of the intents
        ({"output_contract": {"format": "prose", "schema_name": "x"}}, "output_contract"),
        ({"intent": "clarify", "choices": ["only one"]}, "at least two choices"),
        ({"choices": ["a", "b"]}, "only a clarify packet"),
    ],
)
def test_known_bad_packets_are_refused(change: dict[str, Any], why: str) -> None:
    bad = packet(**change)
    if change.get("intent") is None and "intent" in change:
        del bad["intent"]
    with pytest.raises(ValidationError, match=why):
        TaskPacket.model_validate(bad)


def test_a_clarify_packet_carries_its_choices() -> None:
    clarify = TaskPacket.model_validate(
        packet(intent="clarify", choices=["Write scene 3", "Validate scene 3"])
    )
    assert clarify.choices == ["Write scene 3", "Validate scene 3"]


def test_a_reply_with_a_one_word_or_long_excerpt_or_wrong_types_is_refused() -> None:
    with pytest.raises(ValidationError, match="2-3 sentences"):
        ReceiptReply.model_validate(reply(report_excerpt="One. Two. Three. Four. Five."))
    with pytest.raises(ValidationError):
        ReceiptReply.model_validate(reply(STOP_HOOK="false"))  # a string is not a boolean
    with pytest.raises(ValidationError):
        ReceiptReply.model_validate(reply(surprise="field"))


def test_paths_the_packet_did_not_expect_are_found() -> None:
    answer = ReceiptReply.model_validate(
        reply(outputs_produced=["Story/Scenes/SCN-04.md", "/etc/passwd"])
    )
    assert undeclared_paths(answer, ["Story/Scenes/SCN-04.md"]) == ["/etc/passwd"]


def test_the_exported_schemas_are_current() -> None:
    for name, text in rendered().items():
        on_disk = (HERE / name).read_text(encoding="utf-8")
        assert on_disk == text, f"{name} is stale: python -m controlroom.domain.schemas"
