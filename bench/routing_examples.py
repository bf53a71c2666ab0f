"""Write `recipes/examples/routing.json`, the router's example requests
(domain/router_examples.py), from the development halves of the bench's request sets: a
held-out request never becomes an example, so the held-out figures stay a fair test.

Each example is taught as a request for the first recipe its row accepts (null: none fits).
Run it again after a request set changes; a test checks the file holds no held-out request.
"""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SETS = sorted((REPO / "bench").glob("router_requests*.json"))
TARGET = REPO / "recipes" / "examples" / "routing.json"


def main() -> None:
    examples = []
    for path in SETS:
        for row in json.loads(path.read_text(encoding="utf-8"))["requests"]:
            if row["split"] == "dev":
                first = (row["acceptable"] or [None])[0]
                examples.append({"request": row["request"], "recipe_id": first})
    about = (
        "Example requests for the router's second reading (domain/router_examples.py), "
        "written by bench/routing_examples.py from the development halves of "
        + ", ".join(f"bench/{p.name}" for p in SETS)
        + ". recipe_id null: no recipe does it."
    )
    TARGET.write_text(
        json.dumps({"about": about, "examples": examples}, indent=1, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    print(f"{len(examples)} examples written to {TARGET.relative_to(REPO)}")


if __name__ == "__main__":
    main()
