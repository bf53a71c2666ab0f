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

Offline faults (demos and tests of what the engine does when a model fails): an `offline`
provider, the built-in one redefined or another of type `offline`, may name faulty models
beside `offline-deterministic-1`, each with the way it fails:

```json
{"providers": {"offline": {"type": "offline", "faults": {
    "flaky-1": {"fault": "http_500"},
    "careless-1": {"fault": "contradict_canon", "until_feedback": true}}}},
 "roles": {"writer": {"provider": "offline", "model": "flaky-1",
                      "escalation": [{"provider": "offline", "model": "offline-deterministic-1"}]}}}
```

`http_500` (every attempt answers 500, retried like a real server's), `cut` (the reply
stops at the token limit: `ReplyCutError`), `prose` (plain prose whatever the contract),
`contradict_canon` (a draft gives a character a value its canon card rules out),
`verdict_fail` (a check or a critic fails what it reads). With `until_feedback` the model
answers well once the request carries a reviewer's `<review_feedback` (a rollback's
prompt addition). The fault is the model's, not a count of calls: a run resumed takes
the same path. `models/offline.py` describes each fault; an offline provider's retries
wait `backoff_s: 0` unless it sets one. A provider of another type has no `faults`, and a
role may name only the models an offline provider serves.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

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


#: How a faulty offline model fails (`models/offline.py` tells each one's behaviour).
OfflineFaultKind = Literal["http_500", "cut", "prose", "contradict_canon", "verdict_fail"]
OFFLINE_FAULT_KINDS: tuple[OfflineFaultKind, ...] = get_args(OfflineFaultKind)


class OfflineFault(_Strict):
    fault: OfflineFaultKind = Field(
        description=(
            "http_500: every attempt fails as a server error (retried); cut: the reply stops "
            "at the token limit; prose: plain prose whatever the contract; contradict_canon: "
            "a draft contradicts a canon fact; verdict_fail: a check or a critic fails"
        )
    )
    until_feedback: bool = Field(
        default=False,
        description=(
            "answer well once the request's user message carries a reviewer's "
            "<review_feedback> (a rollback's prompt addition)"
        ),
    )


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
    backoff_s: float = Field(
        default=0.5,
        ge=0,
        description="first retry delay; doubles each time (0 unless set for an offline provider)",
    )
    prices: dict[str, Price] = Field(default_factory=dict)
    faults: dict[str, OfflineFault] = Field(
        default_factory=dict,
        description="offline only: models served beside offline-deterministic-1, each failing",
    )

    @model_validator(mode="before")
    @classmethod
    def _offline_backoff(cls, data: Any) -> Any:
        """An offline provider's faults are simulated: its retries do not wait, unless it
        says so."""
        if isinstance(data, dict) and data.get("type") == "offline" and "backoff_s" not in data:
            return {**data, "backoff_s": 0.0}
        return data

    def served_models(self) -> list[str] | None:
        """The models an offline provider serves; None for a server, which decides."""
        if self.type != "offline":
            return None
        return [OFFLINE_MODEL, *self.faults]


class ModelChoice(_Strict):
    provider: str
    model: str = Field(min_length=1)


class TriageChoice(_Strict):
    """The ladder's auto-triage: its model, and the limits the engine holds it to."""

    provider: str
    model: str = Field(min_length=1)
    min_confidence: float = Field(default=0.7, ge=0, le=1)
    max_relax_per_run: int = Field(default=1, ge=0, le=10)
    max_defer_per_run: int = Field(default=1, ge=0, le=10)


class RoleConfig(_Strict):
    provider: str
    model: str = Field(min_length=1)
    tier: Tier = "t3"
    params: dict[str, Any] = Field(default_factory=dict)
    escalation: list[ModelChoice] = Field(
        default_factory=list,
        max_length=10,
        description="the escalation chain: models a failing step runs on next (at most 10)",
    )
    consult: list[ModelChoice] = Field(
        default_factory=list,
        max_length=8,
        description="peer models asked at once when the chain is spent (at most 8)",
    )
    synthesizer: ModelChoice | None = Field(
        default=None, description="merges the consult answers (default: the chain's last)"
    )
    triage: TriageChoice | None = None
    owner: str | None = Field(
        default=None, description="who answers when the ladder is spent (default: user)"
    )

    @model_validator(mode="after")
    def _synthesizer_named(self) -> RoleConfig:
        if self.consult and self.synthesizer is None:
            raise ValueError(
                "a role with consult models must name its synthesizer (never a silent default)"
            )
        return self

    def has_ladder(self) -> bool:
        return bool(self.escalation or self.consult or self.triage or self.owner)

    def ladder_models(self) -> list[ModelChoice]:
        named = [*self.escalation, *self.consult]
        if self.synthesizer:
            named.append(self.synthesizer)
        if self.triage:
            named.append(ModelChoice(provider=self.triage.provider, model=self.triage.model))
        return named


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
    for name, provider in config.providers.items():
        check_faults(name, provider, where)
    roles = dict(config.roles)
    if config.default is not None:
        roles["(default)"] = config.default
    for name, role in roles.items():
        for choice in [
            ModelChoice(provider=role.provider, model=role.model),
            *role.ladder_models(),
        ]:
            if choice.provider not in known:
                raise ModelConfigError(
                    f"{where}: role '{name}' uses provider '{choice.provider}', which is not "
                    f"defined (known: {', '.join(sorted(known))})"
                )
            check_model(choice.provider, known[choice.provider], choice.model, where)


def check_faults(name: str, provider: ProviderConfig, where: str) -> None:
    """Faults belong to offline providers, and never to the deterministic model."""
    if provider.faults and provider.type != "offline":
        raise ModelConfigError(
            f"{where}: provider '{name}' (type {provider.type}) has faults: only an offline "
            "provider's models can be made to fail"
        )
    if OFFLINE_MODEL in provider.faults:
        raise ModelConfigError(
            f"{where}: provider '{name}' lists '{OFFLINE_MODEL}' in its faults: name the faulty "
            "model otherwise, the deterministic one always answers well"
        )


def check_model(provider_name: str, provider: ProviderConfig, model: str, where: str) -> None:
    """An offline provider serves only its own models; a server's are its business."""
    served = provider.served_models()
    if served is not None and model not in served:
        raise ModelConfigError(
            f"{where}: offline provider '{provider_name}' serves {', '.join(map(repr, served))}, "
            f"not '{model}' (a faulty model is named in the provider's `faults`)"
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
        consult=list(base.consult) if base else [],
        synthesizer=base.synthesizer if base else None,
        triage=base.triage if base else None,
        owner=base.owner if base else None,
    )


def role_variables(archetype: str) -> tuple[str, ...]:
    """The environment variables `role_config` reads for ARCHETYPE."""
    return (
        f"CONTROLROOM_MODEL_{archetype.upper()}",
        "CONTROLROOM_MODEL_DEFAULT",
        "CONTROLROOM_TIER",
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
