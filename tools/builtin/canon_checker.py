"""canon_checker: load canon cards and check scenes against their facts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import Field

from controlroom.tools.analysis import CanonCard, Conflict, facts_of, parse_card
from controlroom.tools.base import ToolArgs, ToolResult
from controlroom.tools.canon import Cast, build_cast
from controlroom.tools.facts import FactCheck, find_conflicts_in, plan_checks
from controlroom.tools.workspace import Workspace


class CanonCheckerArgs(ToolArgs):
    canon_paths: list[str]
    scene_paths: list[str] = Field(default_factory=list)
    scene_path: str | None = None


def load_cards(workspace: Workspace, paths: list[str]) -> list[CanonCard]:
    return [parse_card(path, workspace.read_text(path)) for path in paths]


@dataclass(frozen=True)
class CanonReport:
    cast: Cast
    checks: list[FactCheck]
    conflicts: list[Conflict]
    agreements: dict[tuple[str, str], int]
    mentions: dict[str, int]

    def fact_rows(self) -> list[dict[str, Any]]:
        rows = []
        for check in self.checks:
            fact = check.fact
            agreeing = self.agreements.get((fact.entity, fact.attribute), 0)
            against = sum(
                1
                for c in self.conflicts
                if c.entity == fact.entity and c.attribute == fact.attribute
            )
            status = (
                "not checkable"
                if check.kind is None
                else "contradicted"
                if against
                else "confirmed"
                if agreeing
                else "not stated"
            )
            rows.append(
                {
                    "entity": fact.entity,
                    "attribute": fact.attribute,
                    "value": fact.value,
                    "source": fact.source,
                    "line": fact.source_line,
                    "checked": check.kind is not None,
                    "status": status,
                    "reason": check.reason,
                    "agreeing_statements": agreeing,
                    "contradictions": against,
                }
            )
        return rows


def check_scenes(
    workspace: Workspace, cards: list[CanonCard], scene_paths: list[str]
) -> CanonReport:
    cast = build_cast(cards)
    checks = plan_checks(facts_of(cards))
    conflicts: list[Conflict] = []
    agreements: dict[tuple[str, str], int] = {}
    mentions = {card.name: 0 for card in cards}
    for path in scene_paths:
        text = workspace.read_text(path)
        found, agreeing = find_conflicts_in(path, text, checks, cast)
        conflicts.extend(found)
        for statement in agreeing:
            for check in checks:
                kind = check.kind
                if kind is statement.kind and check.fact.entity == statement.entity:
                    key = (check.fact.entity, check.fact.attribute)
                    agreements[key] = agreements.get(key, 0) + 1
        for _, _, entity in cast.mentions(text):
            mentions[entity] = mentions.get(entity, 0) + 1
    return CanonReport(cast, checks, conflicts, agreements, mentions)


def canon_digest(cards: list[CanonCard], report: CanonReport) -> str:
    """Facts one per line (`Entity: attribute = value`), then conflicts: what agents read."""
    facts = facts_of(cards)
    unchecked = [c for c in report.checks if c.kind is None]
    lines = [
        f"Canon: {len(cards)} cards, {len(facts)} facts ({len(facts) - len(unchecked)} "
        f"checkable, {len(unchecked)} not), {len(report.conflicts)} conflict(s)",
        "Cards: " + ", ".join(f"{c.name} ({c.kind})" for c in cards),
    ]
    lines.extend(f"- {fact.line()}" for fact in facts)
    if unchecked:
        lines.append("Not checked:")
        lines.extend(f"~ {c.fact.line()}: {c.reason}" for c in unchecked)
    if report.conflicts:
        lines.append("Conflicts:")
        lines.extend(f"! {c.describe()}" for c in report.conflicts)
    return "\n".join(lines)


class CanonChecker:
    name: ClassVar[str] = "canon_checker"
    #: Reads the workspace: in a worker thread (tools/base.py `Tool`).
    slow: ClassVar[bool] = True
    description: ClassVar[str] = "Check scenes against the facts on canon cards"
    args_model: ClassVar[type[ToolArgs]] = CanonCheckerArgs

    def run(self, args: CanonCheckerArgs, workspace: Workspace) -> ToolResult:
        cards = load_cards(workspace, args.canon_paths)
        scenes = list(
            dict.fromkeys([*([args.scene_path] if args.scene_path else []), *args.scene_paths])
        )
        report = check_scenes(workspace, cards, scenes)
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
            "facts": report.fact_rows(),
            "unchecked": [r for r in report.fact_rows() if not r["checked"]],
            "names": dict(sorted(report.cast.owner.items())),
            "scenes_checked": list(scenes),
            "mentions": dict(report.mentions),
            "conflicts": [c.as_dict() for c in report.conflicts],
            "pass": not report.conflicts,
        }
        return ToolResult(output, canon_digest(cards, report))
