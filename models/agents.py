"""Which agent, tier, provider and model serve each archetype, and the clients that call them.

Resolution is explicit: a role's entry in models.json (or an environment override), else
the configured default. A role that cannot be served (unknown provider, missing key,
missing extra) is a configuration error before the run starts, never a silent fallback.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from controlroom.domain.errors import ModelConfigError
from controlroom.models.config import (
    ModelChoice,
    ModelsConfig,
    ProviderConfig,
    RoleConfig,
    load_models_config,
    role_config,
    role_variables,
)
from controlroom.models.port import ModelClient


@dataclass(frozen=True)
class AgentProfile:
    agent_id: str
    archetype: str
    tier: str
    provider: str
    model: str
    params: Mapping[str, Any] = field(default_factory=dict)
    escalation: tuple[ModelChoice, ...] = ()


def make_client(provider: str, config: ProviderConfig) -> ModelClient:
    if config.type == "offline":
        from controlroom.models.offline import OfflineModel

        return OfflineModel.from_env(config.faults, provider)
    if config.type == "openai":
        from controlroom.models.openai_compat import OpenAICompatibleModel

        return OpenAICompatibleModel(provider, config)
    from controlroom.models.anthropic_api import AnthropicModel

    return AnthropicModel(provider, config)


class AgentDirectory:
    def __init__(
        self, config: ModelsConfig | None = None, clients: Mapping[str, ModelClient] | None = None
    ) -> None:
        self.config = config or ModelsConfig()
        self._clients: dict[str, ModelClient] = dict(clients or {})
        #: Each role's configuration as the environment stood when it was worked out: a
        #: run asks for its roles a score of times, and each answer validates a config.
        self._roles: dict[tuple[str, ...], RoleConfig] = {}

    @classmethod
    def for_workspace(cls, workspace: Path | None) -> AgentDirectory:
        return cls(load_models_config(workspace))

    def role(self, archetype: str) -> RoleConfig:
        """The role's configuration, environment overrides applied (`role_config`)."""
        key = (archetype, *(os.environ.get(name, "") for name in role_variables(archetype)))
        found = self._roles.get(key)
        if found is None:
            found = self._roles[key] = role_config(self.config, archetype)
        return found

    def profile(self, archetype: str) -> AgentProfile:
        role = self.role(archetype)
        return AgentProfile(
            agent_id=f"{archetype}-001",
            archetype=archetype,
            tier=role.tier,
            provider=role.provider,
            model=role.model,
            params=dict(role.params),
            escalation=tuple(role.escalation),
        )

    def with_model(self, profile: AgentProfile, choice: str) -> AgentProfile:
        """The profile served by another model, named explicitly as `provider:model` (a
        flow's override, an escalation rung): an unconfigured provider is an error here,
        never a silent fallback to the role's own model."""
        provider, sep, model = choice.partition(":")
        if not sep or not provider or not model:
            raise ModelConfigError(f"model '{choice}' must be named as PROVIDER:MODEL")
        self.client(provider)  # configured, and its client can be built
        return replace(profile, provider=provider, model=model)

    def check_model(self, choice: str) -> None:
        """Refuse a `provider:model` no configured provider can serve (its client built)."""
        provider, sep, model = choice.partition(":")
        if not sep or not provider or not model:
            raise ModelConfigError(f"model '{choice}' must be named as PROVIDER:MODEL")
        client = self.client(provider)
        serves = getattr(client, "serves", None)
        if serves is not None and not serves(model):
            raise ModelConfigError(f"provider '{provider}' does not serve model '{model}'")

    def provider_config(self, provider: str) -> ProviderConfig:
        try:
            return self.config.all_providers()[provider]
        except KeyError:
            raise ModelConfigError(f"provider '{provider}' is not configured") from None

    def check(self, archetypes: Iterable[str]) -> dict[str, AgentProfile]:
        """Resolve every archetype a recipe needs and build its client, or fail now."""
        profiles = {a: self.profile(a) for a in sorted(set(archetypes))}
        for profile in profiles.values():
            self.client(profile.provider)
        return profiles

    def client(self, provider: str) -> ModelClient:
        if provider not in self._clients:
            self._clients[provider] = make_client(provider, self.provider_config(provider))
        return self._clients[provider]
