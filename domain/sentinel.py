"""The verification (sentinel) loop of seed 004 §8, as a step kind: a verifier reads the
work and answers a verdict whose findings are the fix list; a fixer applies the list; the
verifier reads the fixed work again — at most three cycles. Whether a cycle improved is
decided here, in code, from the recorded fix lists (never from a model's opinion of its
own work): the blocking count must fall and the list must change, or the loop ends
NEEDS_REFINEMENT (10), as the seed says.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from controlroom.domain.canonical import sha256_text
from controlroom.domain.events import RecordedLoopCall
from controlroom.domain.steps import STEP_KINDS, KnownNames, Phase, StepSpec

#: Seed 004 §8: "at most 3 cycles".
MAX_CYCLES = 3


class LoopRole(BaseModel):
    """An agent of the loop: its role, its prompt type, the slots it reads besides the work,
    and the name the work is shown under (its template's placeholder)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent_archetype: str = Field(min_length=1)
    prompt_type: str = Field(min_length=1)
    input_slots: list[str] = Field(default_factory=list)
    shown_as: str | None = None


class VerifyLoopStep(StepSpec):
    """Verify the text in `target_slot`, fix what blocks, verify again (≤ `max_cycles`);
    the slot this step writes is the verified text."""

    default_phase: ClassVar[Phase | None] = None
    kind: Literal["verify_loop"] = "verify_loop"
    target_slot: str = Field(min_length=1)
    verifier: LoopRole
    fixer: LoopRole
    max_cycles: int = Field(default=MAX_CYCLES, ge=1, le=MAX_CYCLES)

    def slots_read(self) -> list[str]:
        extra = [*self.verifier.input_slots, *self.fixer.input_slots]
        return [self.target_slot, *dict.fromkeys(s for s in extra if s != self.target_slot)]

    def problems(self, known: KnownNames) -> Iterator[tuple[str, str]]:
        for name, role in (("verifier", self.verifier), ("fixer", self.fixer)):
            if role.prompt_type not in known.prompts:
                yield f"{name}.prompt_type", f"unknown prompt type '{role.prompt_type}'"

    def roles(self) -> set[str]:
        return {self.verifier.agent_archetype, self.fixer.agent_archetype}

    def actor(self) -> str:
        return f"{self.verifier.agent_archetype} ⇄ {self.fixer.agent_archetype}"


STEP_KINDS.register(VerifyLoopStep)


class _LoopCall(RecordedLoopCall):
    abstract_event: ClassVar[bool] = True
    cycle: int
    agent_archetype: str
    tier: str = ""

    def role(self) -> str:
        return self.agent_archetype

    def tier_of(self) -> str:
        return self.tier


class SentinelVerified(_LoopCall):
    """One cycle's verification: the verdict, and its blocking findings (the fix list)."""

    type_name: ClassVar[str] = "SentinelVerified"
    text_sha256: str
    passed: bool
    blocking: list[str]
    fix_list_sha256: str
    output: str


class SentinelFixed(_LoopCall):
    """One cycle's fix: the text the fixer wrote from the fix list."""

    type_name: ClassVar[str] = "SentinelFixed"
    output: str
    output_sha256: str


def fix_list_sha256(blocking: Sequence[str]) -> str:
    return sha256_text(json.dumps(sorted(blocking)))


@dataclass(frozen=True)
class Verdict:
    """What the loop does after a cycle's verification."""

    action: Literal["done", "fix", "stop"]
    reason: str


def after_verification(
    cycle: int, max_cycles: int, verified: Sequence[SentinelVerified]
) -> Verdict:
    """`verified` holds every cycle's verification so far, this cycle's last."""
    now = verified[-1]
    count = 0 if now.passed else len(now.blocking)
    if count == 0:
        return Verdict("done", f"no blocking finding after {cycle} cycle(s)")
    if len(verified) > 1:
        before = verified[-2]
        had = 0 if before.passed else len(before.blocking)
        if now.fix_list_sha256 == before.fix_list_sha256:
            return Verdict("stop", f"no improvement: cycle {cycle} found the same fix list")
        if count >= had:
            return Verdict(
                "stop", f"no improvement: {count} blocking finding(s) after {had} the cycle before"
            )
    if cycle >= max_cycles:
        return Verdict("stop", f"{count} blocking finding(s) left after {cycle} cycles")
    return Verdict("fix", f"{count} blocking finding(s): fix and verify again")
