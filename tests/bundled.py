"""How many recipes ship in `recipes/` (every JSON file there but the schema): tests that
list the catalog compare with it, not with a number that changes as recipes are added."""

from pathlib import Path

RECIPES_DIR = Path(__file__).resolve().parent.parent / "recipes"
BUNDLED_RECIPES = len([p for p in RECIPES_DIR.glob("*.json") if p.name != "schema.json"])
