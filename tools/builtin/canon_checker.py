"""canon_checker: load canon cards and check scenes against their facts."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from controlroom.tools.analysis import CanonCard, Conflict, facts_of, find_conflicts, parse_card
from controlroom.tools.base import ToolArgs, ToolResult
from controlroom.tools.workspace import Workspace


class CanonCheckerArgs(ToolArgs):
    canon_paths: list[str]
    scene_paths: list[str] = Field(default_factory=list)
    scene_path: str | None = None


def load_cards(workspace: Workspace, paths: list[str]) -> list[CanonCard]:
    return [parse_card(path, workspace.read_text(path)) for path in paths]


def check_scenes(
    workspace: Workspace, cards: list[CanonCard], scene_paths: list[str]
) -> tuple[list[Conflict], dict[str, int]]:
    facts = facts_of(cards)
    names = {card.name: card.names for card in cards}
    conflicts: list[Conflict] = []
    mentions = {card.name: 0 for card in cards}
    for path in scene_paths:
        text = workspace.read_text(path)
        conflicts.extend(find_conflicts(path, text, facts, names))
        for card in cards:
            mentions[card.name] += sum(text.count(n) for n in card.names[:2])
    return conflicts, mentions


def canon_digest(cards: list[CanonCard], conflicts: list[Conflict]) -> str:
    """Facts one per line (`Entity: attribute = value`), then conflicts: what agents read."""
    facts = facts_of(cards)
    lines = [
        f"Canon: {len(cards)} cards, {len(facts)} facts, {len(conflicts)} conflict(s)",
        "Cards: " + ", ".join(f"{c.name} ({c.kind})" for c in cards),
    ]
    lines.extend(f"- {fact.line()}" for fact in facts)
    if conflicts:
        lines.append("Conflicts:")
        lines.extend(f"! {c.describe()}" for c in conflicts)
    return "\n".join(lines)


class CanonChecker:
    name: ClassVar[str] = "canon_checker"
    description: ClassVar[str] = "Check scenes against the facts on canon cards"
    args_model: ClassVar[type[ToolArgs]] = CanonCheckerArgs

    def run(self, args: CanonCheckerArgs, workspace: Workspace) -> ToolResult:
        cards = load_cards(workspace, args.canon_paths)
        scenes = list(
            dict.fromkeys([*([args.scene_path] if args.scene_path else []), *args.scene_paths])
        )
        conflicts, mentions = check_scenes(workspace, cards, scenes)
        output: dict[str, Any] = {
            "cards": [
                {
                    "path": c.path,
                    "name": c.name,
                    "kind": c.kind,
                    "aliases": list(c.aliases),
                    "attributes": dict(c.attributes),
                }
                for c in cards
            ],
            "facts": [
                {"entity": f.entity, "attribute": f.attribute, "value": f.value, "source": f.source}
                for f in facts_of(cards)
            ],
            "scenes_checked": list(scenes),
            "mentions": dict(mentions),
            "conflicts": [c.as_dict() for c in conflicts],
            "pass": not conflicts,
        }
        return ToolResult(output, canon_digest(cards, conflicts))
