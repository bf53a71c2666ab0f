"""The exported JSON Schemas of task packets and agent receipts (v0.1).

Regenerate after changing `domain/packets.py`:  python -m controlroom.domain.schemas
(a test fails while a file here is stale)."""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def rendered() -> dict[str, str]:
    """File name -> the schema as it should be on disk."""
    from controlroom.domain.packets import SCHEMA_VERSION, SCHEMAS

    return {
        f"{name}.v{SCHEMA_VERSION}.json": json.dumps(
            model.model_json_schema(), indent=2, ensure_ascii=False, sort_keys=True
        )
        + "\n"
        for name, model in SCHEMAS.items()
    }
