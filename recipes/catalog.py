"""Bundled recipes shadowed by `<workspace>/.control-room/recipes/*.json`, by recipe_id."""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controlroom.domain.errors import RecipeInvalidError, RecipeProblem, UnknownRecipeError
from controlroom.domain.recipe import Recipe
from controlroom.domain.recipe_check import check_recipe, parse_recipe

BUNDLED_DIR = Path(__file__).parent
SCHEMA_FILE = BUNDLED_DIR / "schema.json"


@dataclass(frozen=True)
class CatalogEntry:
    recipe: Recipe
    source: Path
    bundled: bool


def override_dir(workspace: Path) -> Path:
    return workspace / ".control-room" / "recipes"


def recipe_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.glob("*.json") if p.name != "schema.json")


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RecipeInvalidError(
            [
                RecipeProblem(
                    str(path),
                    "$",
                    f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                )
            ]
        ) from None
    except OSError as exc:
        raise RecipeInvalidError(
            [RecipeProblem(str(path), "$", f"unreadable: {exc.strerror}")]
        ) from None


def load_recipe_file(
    path: Path, known_tools: Collection[str], known_prompts: Collection[str]
) -> Recipe:
    recipe = parse_recipe(read_json(path), str(path))
    problems = check_recipe(recipe, str(path), known_tools, known_prompts)
    if problems:
        raise RecipeInvalidError(problems)
    return recipe


class RecipeCatalog:
    def __init__(self, entries: dict[str, CatalogEntry]) -> None:
        self._entries = entries

    @classmethod
    def load(
        cls,
        workspace: Path | None,
        known_tools: Collection[str],
        known_prompts: Collection[str],
    ) -> RecipeCatalog:
        """Load every layer; all problems in all files are reported together."""
        entries: dict[str, CatalogEntry] = {}
        problems: list[RecipeProblem] = []
        layers = [(BUNDLED_DIR, True)]
        if workspace is not None:
            layers.append((override_dir(workspace), False))
        for directory, bundled in layers:
            seen_here: dict[str, Path] = {}
            for path in recipe_files(directory):
                try:
                    recipe = load_recipe_file(path, known_tools, known_prompts)
                except RecipeInvalidError as exc:
                    problems.extend(exc.problems)
                    continue
                if recipe.recipe_id in seen_here:
                    problems.append(
                        RecipeProblem(
                            str(path),
                            "$.recipe_id",
                            f"recipe_id '{recipe.recipe_id}' is also defined in "
                            f"{seen_here[recipe.recipe_id]}",
                        )
                    )
                    continue
                seen_here[recipe.recipe_id] = path
                entries[recipe.recipe_id] = CatalogEntry(recipe, path, bundled)
        if problems:
            raise RecipeInvalidError(problems)
        return cls(entries)

    def get(self, recipe_id: str) -> Recipe:
        return self.entry(recipe_id).recipe

    def entry(self, recipe_id: str) -> CatalogEntry:
        try:
            return self._entries[recipe_id]
        except KeyError:
            raise UnknownRecipeError(recipe_id, list(self._entries)) from None

    def __contains__(self, recipe_id: object) -> bool:
        return recipe_id in self._entries

    def recipes(self) -> list[Recipe]:
        return [self._entries[k].recipe for k in sorted(self._entries)]

    def entries(self) -> list[CatalogEntry]:
        return [self._entries[k] for k in sorted(self._entries)]


def recipe_json_schema() -> dict[str, Any]:
    schema = Recipe.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://controlroom.dev/schemas/recipe.json"
    return schema


def render_schema() -> str:
    return json.dumps(recipe_json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # python -m recipes.catalog > recipes/schema.json
    print(render_schema(), end="")
