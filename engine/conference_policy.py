"""Closing a conference round, as a tracked policy: once every reply is recorded, the
transcript (question, evidence, each reply, abstention and rejection) becomes an issue with
the round's receipts linked, exactly once, and the round is closed."""

from __future__ import annotations

from controlroom.domain.canonical import sha256_text
from controlroom.domain.conference import ConferenceRound, RepliesCollected
from controlroom.domain.events import DomainEvent
from controlroom.domain.issue import Issue
from controlroom.engine.policies import Unit


class ConferenceClosePolicy:
    name = "policy.conference_close"
    follows = frozenset({RepliesCollected.type_name})

    def react(self, event: DomainEvent, unit: Unit) -> None:
        conference = unit.get(ConferenceRound, event.originator_id)
        if conference is None or conference.status != "collected":
            return
        issue_id = "iss_" + sha256_text(f"conference:{conference.id}")[:24]
        if unit.get(Issue, issue_id) is None:
            accepted = sum(
                1 for r in conference.replies.values() if type(r).__name__ == "ReplyAccepted"
            )
            unit.add(
                Issue.open(
                    issue_id,
                    event.timestamp,
                    kind="conference_transcript",
                    title=f"Conference: {conference.question[:80]}",
                    detail=conference.transcript(),
                    run_id=None,
                    session_id=conference.session_id,
                    recipe_id=None,
                    check={"round_id": conference.id},
                    evidence={
                        "round_id": conference.id,
                        "receipts": sorted(conference.receipts),
                        "replies": len(conference.replies),
                        "accepted": accepted,
                    },
                )
            )
        conference.close(event.timestamp, issue_id)
        unit.add(conference)
