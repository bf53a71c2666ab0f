"""Router accuracy on plain requests a novelist types (bench/router_requests.json, written
with the patterns, and bench/router_requests_blind.json, written blind by a helper session that
never saw the patterns or the router).

Each request lists the recipes that fit it (null: none fits, it should be unroutable). The
set is split once, by a hash of each request, into a development half (the router was tuned
on it) and a held-out half (never looked at while tuning). Prints accuracy on each half and
the development half's misses with `--misses` (the held-out half's are never printed, so
nobody tunes on them).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import controlroom.domain.packet_steps  # noqa: E402, F401  (registers the playbook's step kinds)
from controlroom.domain.router import route  # noqa: E402
from controlroom.prompts.registry import PromptRegistry  # noqa: E402
from controlroom.recipes.catalog import RecipeCatalog  # noqa: E402
from controlroom.tools.base import ToolRegistry  # noqa: E402

REQUEST_SETS = (
    REPO / "bench" / "router_requests.json",
    REPO / "bench" / "router_requests_blind.json",
    REPO / "bench" / "router_requests_blind2.json",
    REPO / "bench" / "router_requests_blind3.json",
    REPO / "bench" / "router_requests_blind4.json",
)


def main() -> None:
    show_misses = "--misses" in sys.argv
    recipes = RecipeCatalog.load(
        None, ToolRegistry.default().names(), PromptRegistry.for_workspace(None).prompt_types()
    ).recipes()
    for requests in REQUEST_SETS:
        print(f"{requests.name}:")
        rows = json.loads(requests.read_text(encoding="utf-8"))["requests"]
        for split in ("dev", "held_out"):
            chosen = [row for row in rows if row["split"] == split]
            right = 0
            for row in chosen:
                decision = route(row["request"], recipes)
                got = decision.recipe_id if decision.routable else None
                if got in (row["acceptable"] or [None]):  # null: none fits
                    right += 1
                elif show_misses and split == "dev":  # held-out misses stay unread
                    print(f"  miss [{split}] {row['request']!r}: {got} (want {row['acceptable']})")
            print(
                f"  {split:9s}: {right}/{len(chosen)} routed to an acceptable recipe "
                f"({right / len(chosen):.0%})"
            )


if __name__ == "__main__":
    main()
