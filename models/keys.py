"""Provider keys come from the environment only, and are named, never shown."""

from __future__ import annotations

import os

from controlroom.domain.errors import ModelConfigError
from controlroom.models.config import ProviderConfig


def api_key(provider: str, config: ProviderConfig) -> str | None:
    if config.api_key_env is None:
        return None
    key = os.environ.get(config.api_key_env, "").strip()
    if not key:
        raise ModelConfigError(
            f"provider '{provider}' needs its key in the environment variable "
            f"{config.api_key_env}, which is not set"
        )
    return key
