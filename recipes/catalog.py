"""Bundled recipes shadowed by `<workspace>/.control-room/recipes/*.json`, by recipe_id."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
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
    return checked_recipe(read_json(path), path, known_tools, known_prompts)


def checked_recipe(
    data: Any, path: Path, known_tools: Collection[str], known_prompts: Collection[str]
) -> Recipe:
    recipe = parse_recipe(data, str(path))
    problems = check_recipe(recipe, str(path), known_tools, known_prompts)
    if problems:
        raise RecipeInvalidError(problems)
    return recipe


class RecipeCatalog:
    """The recipes that loaded, and every problem found on the way.

    One broken file never hides the others: reading commands list and show the valid
    recipes (and warn), while running a recipe whose file is broken is refused with the
    problems. A file too broken to name its recipe_id may define any recipe, so it blocks
    running every recipe until it is fixed.
    """

    def __init__(
        self,
        entries: dict[str, CatalogEntry],
        problems: Sequence[RecipeProblem] = (),
        broken: dict[str | None, list[RecipeProblem]] | None = None,
    ) -> None:
        self._entries = entries
        #: Every problem in every file, in load order.
        self.problems = list(problems)
        #: The problems by the recipe_id their file declares; None when it cannot be read.
        self._broken = broken or {}

    @classmethod
    def load(
        cls,
        workspace: Path | None,
        known_tools: Collection[str],
        known_prompts: Collection[str],
        *,
        strict: bool = False,
    ) -> RecipeCatalog:
        """Load every layer. With `strict`, any problem in any file raises
        RecipeInvalidError listing them all; without it, see `problems`."""
        entries: dict[str, CatalogEntry] = {}
        problems: list[RecipeProblem] = []
        broken: dict[str | None, list[RecipeProblem]] = {}

        def refuse(recipe_id: str | None, found: Sequence[RecipeProblem]) -> None:
            problems.extend(found)
            broken.setdefault(recipe_id, []).extend(found)

        layers = [(BUNDLED_DIR, True)]
        if workspace is not None:
            layers.append((override_dir(workspace), False))
        for directory, bundled in layers:
            seen_here: dict[str, Path] = {}
            for path in recipe_files(directory):
                try:
                    data = read_json(path)
                except RecipeInvalidError as exc:
                    refuse(None, exc.problems)
                    continue
                declared = data.get("recipe_id") if isinstance(data, dict) else None
                recipe_id = declared if isinstance(declared, str) and declared else None
                try:
                    recipe = checked_recipe(data, path, known_tools, known_prompts)
                except RecipeInvalidError as exc:
                    refuse(recipe_id, exc.problems)
                    continue
                if recipe.recipe_id in seen_here:
                    message = (
                        f"recipe_id '{recipe.recipe_id}' is also defined in "
                        f"{seen_here[recipe.recipe_id]}"
                    )
                    refuse(recipe.recipe_id, [RecipeProblem(str(path), "$.recipe_id", message)])
                    continue
                seen_here[recipe.recipe_id] = path
                entries[recipe.recipe_id] = CatalogEntry(recipe, path, bundled)
        catalog = cls(entries, problems, broken)
        if strict:
            catalog.check()
        return catalog

    def check(self) -> None:
        """Raise RecipeInvalidError naming every problem, if there is any."""
        if self.problems:
            raise RecipeInvalidError(self.problems)

    def get(self, recipe_id: str) -> Recipe:
        """The recipe to run. Refused while its own file is broken, and while any file
        whose recipe_id cannot be read is (it may be this recipe's override)."""
        problems = [*self._broken.get(recipe_id, []), *self._broken.get(None, [])]
        if problems:
            raise RecipeInvalidError(problems)
        return self.entry(recipe_id).recipe

    def entry(self, recipe_id: str) -> CatalogEntry:
        """The recipe as loaded, for reading; refused while its own file is broken."""
        if recipe_id in self._broken:
            raise RecipeInvalidError(self._broken[recipe_id])
        try:
            return self._entries[recipe_id]
        except KeyError:
            raise UnknownRecipeError(recipe_id, list(self._entries)) from None

    def __contains__(self, recipe_id: object) -> bool:
        return recipe_id is not None and (recipe_id in self._entries or recipe_id in self._broken)

    def recipes(self) -> list[Recipe]:
        """The recipes that loaded (a broken override leaves the bundled recipe listed)."""
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
