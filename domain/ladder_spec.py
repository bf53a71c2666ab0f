"""A step's escalation ladder, as data (`domain/ladder.py` decides with it).

Declared on a recipe's agent step (`"ladder": {...}`) or on a role in models.json; every
model is named explicitly as `provider:model`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


def _model_name(value: str) -> str:
    provider, sep, model = value.partition(":")
    if not sep or not provider.strip() or not model.strip() or " " in value:
        raise ValueError(f"'{value}' must name a model as PROVIDER:MODEL")
    return value


#: The most peers a consult asks at once (a fan-out, so bounded), and the longest chain.
MAX_CONSULT = 8
MAX_CHAIN = 10


class Triage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(description="the triage agent's model, as PROVIDER:MODEL")
    min_confidence: float = Field(default=0.7, ge=0, le=1)
    max_relax_per_run: int = Field(default=1, ge=0, le=10)
    max_defer_per_run: int = Field(default=1, ge=0, le=10)

    _name = field_validator("model")(classmethod(lambda cls, v: _model_name(v)))


class Ladder(BaseModel):
    """What a step climbs when it fails. Models are named explicitly (`provider:model`);
    one that is not configured is an error when the run starts, never a silent default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    chain: list[str] = Field(
        default_factory=list,
        max_length=MAX_CHAIN,
        description="models to escalate to, in order (PROVIDER:MODEL)",
    )
    consult: list[str] = Field(
        default_factory=list,
        max_length=MAX_CONSULT,
        description="peer models asked at once when the chain is spent",
    )
    synthesizer: str | None = Field(
        default=None, description="merges the consult answers (PROVIDER:MODEL)"
    )
    triage: Triage | None = None
    owner: str = Field(default="user", description="who answers when the ladder is spent")
    #: The model the step starts on (filled when the run starts: the role's own).
    base: str | None = None

    @field_validator("chain", "consult")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        return [_model_name(v) for v in value]

    @field_validator("synthesizer", "base")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        return None if value is None else _model_name(value)

    @model_validator(mode="after")
    def _synthesizer_named(self) -> Ladder:
        if self.consult and not self.synthesizer:
            raise ValueError(
                "a ladder with consult models must name its synthesizer model "
                "(never a silent default)"
            )
        return self

    def models(self) -> list[str]:
        """Every model the ladder names (for the start-time check)."""
        named = [*self.chain, *self.consult]
        if self.synthesizer:
            named.append(self.synthesizer)
        if self.triage:
            named.append(self.triage.model)
        return named

    @property
    def strongest(self) -> str | None:
        """The chain's last model (the base when the chain is empty)."""
        return self.chain[-1] if self.chain else self.base

    def describe(self) -> list[str]:
        """The ladder for humans, one line a rung (`recipes show`, `models check`)."""
        lines = [f"1 escalate: {' -> '.join([self.base or '(role model)', *self.chain])}"]
        if self.consult:
            synth = self.synthesizer or self.strongest or "(role model)"
            lines.append(f"2 consult: {', '.join(self.consult)}; synthesizer {synth}")
        if self.triage:
            t = self.triage
            lines.append(
                f"3 triage: {t.model} (min confidence {t.min_confidence}, "
                f"relax <= {t.max_relax_per_run}/run, defer <= {t.max_defer_per_run}/run)"
            )
        lines.append(f"4 person: {self.owner}")
        return lines
