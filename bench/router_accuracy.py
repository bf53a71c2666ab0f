"""Router accuracy on plain requests a novelist types (bench/router_requests.json, written
with the patterns, and bench/router_requests_blind*.json, eleven sets written blind by helper
sessions that never saw the patterns or the router).

Each request lists the recipes that fit it (null: none fits, it should be unroutable). The
set is split once, by a hash of each request, into a development half (the router was tuned
on it) and a held-out half (never looked at while tuning). Prints accuracy on each half and
the development half's misses with `--misses` (the held-out half's are never printed, so
nobody tunes on them). Each figure is the router's (the phrase patterns and the second
reading by example requests, whose examples are the development halves:
bench/routing_examples.py) beside the patterns' alone.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import controlroom.domain.packet_steps  # noqa: E402, F401  (registers the playbook's step kinds)
from controlroom.domain.router import route, route_by_patterns  # noqa: E402
from controlroom.prompts.registry import PromptRegistry  # noqa: E402
from controlroom.recipes.catalog import RecipeCatalog  # noqa: E402
from controlroom.tools.base import ToolRegistry  # noqa: E402

REQUEST_SETS = (
    REPO / "bench" / "router_requests.json",
    REPO / "bench" / "router_requests_blind.json",
    REPO / "bench" / "router_requests_blind2.json",
    REPO / "bench" / "router_requests_blind3.json",
    REPO / "bench" / "router_requests_blind4.json",
    REPO / "bench" / "router_requests_blind5.json",
    REPO / "bench" / "router_requests_blind6.json",
    REPO / "bench" / "router_requests_blind7.json",
    REPO / "bench" / "router_requests_blind8.json",
    REPO / "bench" / "router_requests_blind9.json",
    REPO / "bench" / "router_requests_blind10.json",
    REPO / "bench" / "router_requests_blind11.json",
)


def main() -> None:
    show_misses = "--misses" in sys.argv
    recipes = RecipeCatalog.load(
        None, ToolRegistry.default().names(), PromptRegistry.for_workspace(None).prompt_types()
    ).recipes()
    totals = {"dev": [0, 0, 0], "held_out": [0, 0, 0]}  # right, by the patterns alone, count
    for requests in REQUEST_SETS:
        print(f"{requests.name}:")
        rows = json.loads(requests.read_text(encoding="utf-8"))["requests"]
        for split in ("dev", "held_out"):
            chosen = [row for row in rows if row["split"] == split]
            right = alone = 0
            for row in chosen:
                fits = row["acceptable"] or [None]  # null: none fits
                decision = route(row["request"], recipes)
                got = decision.recipe_id if decision.routable else None
                by_patterns = route_by_patterns(row["request"], recipes)
                alone += (by_patterns.recipe_id if by_patterns.routable else None) in fits
                if got in fits:
                    right += 1
                elif show_misses and split == "dev":  # held-out misses stay unread
                    print(f"  miss [{split}] {row['request']!r}: {got} (want {row['acceptable']})")
            totals[split][0] += right
            totals[split][1] += alone
            totals[split][2] += len(chosen)
            print(
                f"  {split:9s}: {right}/{len(chosen)} routed to an acceptable recipe "
                f"({right / len(chosen):.0%}; by the patterns alone {alone}, "
                f"{alone / len(chosen):.0%})"
            )
    print("all sets:")
    for split, (right, alone, count) in totals.items():
        print(
            f"  {split:9s}: {right}/{count} ({right / count:.1%}; by the patterns alone "
            f"{alone}, {alone / count:.1%})"
        )


if __name__ == "__main__":
    main()
