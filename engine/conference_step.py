"""The `conference` step: a conference round run as a step of a run.

Every piece of work is a run: a round is the one step of the bundled `conference_round`
recipe, executed by the one executor (the CLI in the foreground, `serve`, a worker),
resumable after a kill, followed live like any run. The round keeps its own record, the
`ConferenceRound` aggregate, under an id fixed for the run (the task's `round_id` arg when
the caller chose one, else one derived from the run), so a resumed step goes on with the
same round: evidence gathered is not gathered again, a role that replied is not asked again.
The step's slot holds the round's id, status and replies; the transcript issue is filed by
the tracked policy that closes the round, as before.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from controlroom.domain.canonical import preview, sha256_text
from controlroom.domain.conference import ConferenceRound, ReplyAccepted
from controlroom.domain.errors import BadInputError, ModelError
from controlroom.domain.outcomes import EventSpec, StepOutcome
from controlroom.domain.run import Run, StepInstance
from controlroom.domain.run_events import SlotWritten
from controlroom.domain.steps import ConferenceStep, StepSpec
from controlroom.engine.conference import ConferenceService, RoundRequest

if TYPE_CHECKING:  # performers imports this module to register it
    from controlroom.engine.performers import Execution

RECIPE_ID = "conference_round"


def round_id_for(run: Run, instance: str) -> str:
    """The round's id: the one the caller chose (task arg `round_id`), else derived from
    the run and the step instance, so a resumed step finds its round."""
    chosen = run.task.args.get("round_id")
    if isinstance(chosen, str) and chosen:
        return chosen
    return "conf_" + hashlib.sha256(f"{run.id}:{instance}".encode()).hexdigest()[:16]


def round_request(run: Run) -> RoundRequest:
    """The round the run's task asks for: its description is the question."""
    args = run.task.args

    def names(key: str) -> list[str]:
        value = args.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise BadInputError(f"task arg '{key}' must be a list of names")
        return list(value)

    return RoundRequest(
        question=run.task.description,
        roles=names("roles"),
        allowed_tools=names("allowed_tools"),
        require_tool=bool(args.get("require_tool", False)),
    )


@dataclass(frozen=True)
class RoundOutcome(StepOutcome):
    text: str
    output_sha256: str
    input_slot_refs: list[str]

    @classmethod
    def of(cls, conference: ConferenceRound) -> RoundOutcome:
        replies: list[dict[str, Any]] = []
        for role in conference.roles:
            reply = conference.replies.get(role)
            if reply is None:
                continue
            status = (
                ("abstained" if reply.abstained else "accepted")
                if isinstance(reply, ReplyAccepted)
                else "rejected"
            )
            replies.append({"role": role, "status": status})
        text = json.dumps(
            {"round_id": conference.id, "status": conference.status, "replies": replies},
            indent=2,
        )
        return cls(text, sha256_text(text), [])

    def events(self, step: StepSpec, session_id: str) -> list[EventSpec]:
        return [
            (
                SlotWritten,
                {
                    "slot": step.output_slot,
                    "kind": "artifact",
                    "agent_id": "conference",
                    "text": self.text,
                    "sha256": self.output_sha256,
                    "summary": preview(self.text),
                },
            )
        ]

    def preview_source(self) -> str:
        return self.text


async def perform_conference(execution: Execution, instance: StepInstance) -> RoundOutcome:
    assert isinstance(instance.step, ConferenceStep)
    run = execution.run
    service = ConferenceService(execution.ctx)
    conference = await service.run(round_request(run), round_id_for(run, instance.instance_id))
    if conference.status == "failed":  # it failed before a crash: the step fails with it
        raise ModelError(f"conference round {conference.id} failed: {conference.error}")
    return RoundOutcome.of(conference)
