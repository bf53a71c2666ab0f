"""`<workspace>/.control-room/models.json`: which provider and model serve each role.

```json
{
  "providers": {
    "local":  {"type": "openai", "base_url": "http://127.0.0.1:8000/v1",
               "api_key_env": "LOCAL_LLM_KEY", "timeout_s": 60, "max_retries": 3,
               "prices": {"llama-3-70b": {"input_per_mtok": 0.5, "output_per_mtok": 0.8}}},
    "claude": {"type": "anthropic", "api_key_env": "ANTHROPIC_API_KEY"}
  },
  "default": {"provider": "offline", "model": "offline-deterministic-1", "tier": "t3"},
  "roles": {
    "writer": {"provider": "claude", "model": "claude-sonnet-4-5", "tier": "t5",
               "params": {"max_tokens": 4000, "temperature": 0.8},
               "escalation": [{"provider": "local", "model": "llama-3-70b"}]}
  }
}
```

The `offline` provider is always available. Environment variables override the file:
`CONTROLROOM_MODEL_<ROLE>=provider:model` (e.g. `CONTROLROOM_MODEL_WRITER`),
`CONTROLROOM_MODEL_DEFAULT=provider:model`, `CONTROLROOM_TIER=t1|t3|t5`. Keys are never
written here: a provider names the environment variable that holds its key.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from controlroom.domain.errors import ModelConfigError

CONFIG_NAME = "models.json"
OFFLINE_PROVIDER = "offline"
OFFLINE_MODEL = "offline-deterministic-1"
Tier = Literal["t1", "t3", "t5"]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Price(_Strict):
    input_per_mtok: float = Field(ge=0, description="USD per million input tokens")
    output_per_mtok: float = Field(ge=0, description="USD per million output tokens")


class ProviderConfig(_Strict):
    type: Literal["openai", "anthropic", "offline"]
    base_url: str | None = Field(default=None, description="API root, e.g. http://host:8000/v1")
    api_key_env: str | None = Field(default=None, description="environment variable with the key")
    timeout_s: float = Field(
        default=120.0,
        gt=0,
        description="idle timeout: the longest wait for the first byte and between chunks",
    )
    connect_timeout_s: float = Field(default=10.0, gt=0, description="to open a connection")
    deadline_s: float = Field(
        default=900.0, gt=0, description="overall limit for one attempt, however steady"
    )
    structured_output: Literal["auto", "always", "never"] = Field(
        default="auto",
        description=(
            "send a reply contract as structured output (OpenAI response_format, Anthropic "
            "output_config); auto: send it, and ask again without it if the server refuses"
        ),
    )
    organization: str | None = Field(
        default=None,
        description=(
            "openai only: the OpenAI-Organization header; unset, none is sent (never an "
            "ambient OPENAI_ORG_ID)"
        ),
    )
    project: str | None = Field(
        default=None,
        description=(
            "openai only: the OpenAI-Project header; unset, none is sent (never an ambient "
            "OPENAI_PROJECT_ID)"
        ),
    )
    max_retries: int = Field(default=3, ge=0, le=10)
    backoff_s: float = Field(default=0.5, ge=0, description="first retry delay; doubles each time")
    prices: dict[str, Price] = Field(default_factory=dict)


class ModelChoice(_Strict):
    provider: str
    model: str = Field(min_length=1)


class RoleConfig(_Strict):
    provider: str
    model: str = Field(min_length=1)
    tier: Tier = "t3"
    params: dict[str, Any] = Field(default_factory=dict)
    escalation: list[ModelChoice] = Field(default_factory=list)


class ModelsConfig(_Strict):
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    default: RoleConfig | None = None
    roles: dict[str, RoleConfig] = Field(default_factory=dict)

    def all_providers(self) -> dict[str, ProviderConfig]:
        return {OFFLINE_PROVIDER: ProviderConfig(type="offline"), **self.providers}


def default_role() -> RoleConfig:
    return RoleConfig(provider=OFFLINE_PROVIDER, model=OFFLINE_MODEL, tier="t3")


def config_path(workspace: Path) -> Path:
    return workspace / ".control-room" / CONFIG_NAME


def load_models_config(workspace: Path | None) -> ModelsConfig:
    """The file if present (validated, errors naming the JSON path), else the default."""
    if workspace is None or not config_path(workspace).is_file():
        return ModelsConfig()
    path = config_path(workspace)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ModelConfigError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno}") from None
    try:
        config = ModelsConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"$.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ModelConfigError(f"{path}: {problems}") from None
    check_references(config, str(path))
    return config


def check_references(config: ModelsConfig, where: str) -> None:
    known = config.all_providers()
    roles = dict(config.roles)
    if config.default is not None:
        roles["(default)"] = config.default
    for name, role in roles.items():
        for choice in [ModelChoice(provider=role.provider, model=role.model), *role.escalation]:
            if choice.provider not in known:
                raise ModelConfigError(
                    f"{where}: role '{name}' uses provider '{choice.provider}', which is not "
                    f"defined (known: {', '.join(sorted(known))})"
                )


def _override(raw: str, variable: str, base: RoleConfig | None) -> RoleConfig:
    provider, sep, model = raw.partition(":")
    if not sep or not provider or not model:
        raise ModelConfigError(f"{variable}='{raw}' must be provider:model")
    return RoleConfig(
        provider=provider,
        model=model,
        tier=base.tier if base else "t3",
        params=base.params if base else {},
        escalation=list(base.escalation) if base else [],
    )


def role_config(config: ModelsConfig, archetype: str) -> RoleConfig:
    """The role's configuration after environment overrides; never a silent fallback:
    an archetype with no entry uses `default`, which is explicit (file, env, or offline)."""
    role = config.roles.get(archetype)
    variable = f"CONTROLROOM_MODEL_{archetype.upper()}"
    if os.environ.get(variable):
        role = _override(os.environ[variable], variable, role)
    if role is None:
        default = config.default or default_role()
        if os.environ.get("CONTROLROOM_MODEL_DEFAULT"):
            default = _override(
                os.environ["CONTROLROOM_MODEL_DEFAULT"], "CONTROLROOM_MODEL_DEFAULT", default
            )
        role = default
    tier = os.environ.get("CONTROLROOM_TIER", "").strip()
    if tier:
        if tier not in ("t1", "t3", "t5"):
            raise ModelConfigError(f"CONTROLROOM_TIER='{tier}' is not one of t1, t3, t5")
        role = role.model_copy(update={"tier": tier})
    check_references(
        ModelsConfig(providers=config.providers, roles={archetype: role}),
        "environment" if os.environ.get(variable) else "models config",
    )
    return role


def models_json_schema() -> dict[str, Any]:
    schema = ModelsConfig.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def render_schema() -> str:
    return json.dumps(models_json_schema(), indent=2, sort_keys=True) + "\n"


SCHEMA_FILE = Path(__file__).parent / "models.schema.json"
