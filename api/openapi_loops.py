"""The OpenAPI entry of `/api/loops`: the loop registry (tier 1)."""

from __future__ import annotations

from typing import Any


def loop_paths(models: Any) -> dict[str, Any]:
    from controlroom.api import openapi as o
    from controlroom.domain.loop_listing import LoopsListing

    return {
        "/api/loops": {
            "get": o._op(
                "The loop registry (tier 1), generated from the workspace's loop recipes: "
                "each loop's purpose, typical inputs and outputs, scope, often follows / "
                "precedes, needs and whether this install has them (CONTROLROOM_CAPABILITIES); "
                "with its size in approx tokens against every loop's full definition",
                {"200": o._json(models.ref(LoopsListing), "the loop registry")},
            )
        }
    }
