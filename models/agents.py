"""Which agent, tier, provider and model serve each archetype.

This version knows the `offline` provider only; the tier comes from
`CONTROLROOM_TIER` (t1, t3 or t5; default t3). Every resolution is explicit, and an
archetype no provider can serve is a configuration error before the run starts.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from domain.errors import ModelConfigError
from models.offline import OFFLINE_MODEL, OfflineModel
from models.port import ModelClient

TIER_VAR = "CONTROLROOM_TIER"


@dataclass(frozen=True)
class AgentProfile:
    agent_id: str
    archetype: str
    tier: str
    provider: str
    model: str


class AgentDirectory:
    def __init__(self, clients: Mapping[str, ModelClient], tier: str | None = None) -> None:
        self.clients = dict(clients)
        self.tier = tier or os.environ.get(TIER_VAR, "t3").strip() or "t3"
        if self.tier not in ("t1", "t3", "t5"):
            raise ModelConfigError(f"{TIER_VAR}='{self.tier}' is not one of t1, t3, t5")

    @classmethod
    def offline(cls, tier: str | None = None) -> AgentDirectory:
        return cls({"offline": OfflineModel.from_env()}, tier)

    def profile(self, archetype: str) -> AgentProfile:
        if "offline" not in self.clients:
            raise ModelConfigError(f"no model is configured for agent '{archetype}'")
        return AgentProfile(
            agent_id=f"{archetype}-001",
            archetype=archetype,
            tier=self.tier,
            provider="offline",
            model=OFFLINE_MODEL,
        )

    def check(self, archetypes: Iterable[str]) -> dict[str, AgentProfile]:
        """Resolve every archetype a recipe needs, or fail before anything is recorded."""
        return {a: self.profile(a) for a in archetypes}

    def client(self, provider: str) -> ModelClient:
        try:
            return self.clients[provider]
        except KeyError:
            raise ModelConfigError(f"provider '{provider}' is not configured") from None
