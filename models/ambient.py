"""Headers the vendors' SDKs would take from the environment, left out.

The SDKs read `OPENAI_CUSTOM_HEADERS` / `ANTHROPIC_CUSTOM_HEADERS` (one `Name: value` a
line) and send those headers with every request, to whatever `base_url` the client has: a
provider configured for a third-party server would carry a header meant for the vendor.
Each name found there is sent as the SDK's `Omit()`, which drops it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any


def ambient_header_names(variable: str, env: Mapping[str, str] | None = None) -> list[str]:
    """The header names `variable` would add, parsed as the SDKs parse it."""
    raw = (os.environ if env is None else env).get(variable)
    if not raw:
        return []
    return [line.split(":", 1)[0].strip() for line in raw.split("\n") if ":" in line]


def omitted(sdk: Any, *variables: str) -> dict[str, Any]:
    """`default_headers` entries that drop every header the environment would add."""
    return {name: sdk.Omit() for variable in variables for name in ambient_header_names(variable)}
