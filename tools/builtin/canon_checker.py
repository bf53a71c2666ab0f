"""canon_checker: load canon cards and check scenes against their facts.

Besides contradictions it reports what it read: every description the scenes give of a
carded character (so a canon update proposes those facts instead of listing them as
missing), and the people the scenes name often who have no card (proposed new cards).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import Field

from controlroom.domain.errors import WorkspaceError
from controlroom.tools.analysis import CanonCard, Conflict, facts_of, parse_card
from controlroom.tools.base import ToolArgs, ToolResult
from controlroom.tools.canon import Cast, build_cast
from controlroom.tools.facts import (
    FactCheck,
    Statement,
    contradictions_in_text,
    find_conflicts_in,
    plan_checks,
    statements_in,
)
from controlroom.tools.newcomers import uncarded_people
from controlroom.tools.stopping import checkpoint
from controlroom.tools.voices import detect_narrator
from controlroom.tools.workspace import Workspace

#: How many statements of one fact the report quotes.
QUOTED_PER_FACT = 2


class CanonCheckerArgs(ToolArgs):
    canon_paths: list[str]
    scene_paths: list[str] = Field(default_factory=list)
    scene_path: str | None = None
    #: Who narrates in the first person; else `workspace.json`'s `narrator`, else detected.
    narrator: str | None = None


def workspace_settings(workspace: Workspace) -> tuple[str | None, list[str]]:
    """The declared narrator and intended name variants of `workspace.json`, if any."""
    from controlroom.tools.layout import declared_layout  # layout imports the tools' helpers

    try:
        spec = declared_layout(workspace)
    except WorkspaceError:
        return None, []  # the file locator reports a broken layout file; do not fail twice
    return (spec.narrator, list(spec.ignore_names)) if spec is not None else (None, [])


def narrator_of(declared: str | None, cast: Cast, texts: list[str]) -> tuple[str | None, str]:
    """The narrator's entity and how it was found: declared (by a card's name or alias),
    detected from the text, or none."""
    if declared:
        entity = cast.owner.get(declared) or (declared if declared in cast.genders else None)
        if entity:
            return entity, "declared"
        return None, f"declared narrator '{declared}' has no canon card; not used"
    detected = detect_narrator(texts, cast)
    return (detected, "detected") if detected else (None, "none")


def load_cards(workspace: Workspace, paths: list[str]) -> list[CanonCard]:
    return [parse_card(path, workspace.read_text(path)) for path in paths]


@dataclass(frozen=True)
class CanonReport:
    cast: Cast
    checks: list[FactCheck]
    conflicts: list[Conflict]
    agreements: dict[tuple[str, str], int]
    mentions: dict[str, int]
    #: Every description read in the scenes, with its file: what a canon update proposes.
    read: list[tuple[str, Statement]] = field(default_factory=list)
    narrator: str | None = None
    narrator_source: str = "none"
    #: People named in the scenes without a card: (name, mentions, first file:line).
    uncarded: list[tuple[str, int, str]] = field(default_factory=list)

    def read_facts(self) -> list[dict[str, Any]]:
        """Facts the scenes state, one row per entity and attribute: the words read, how
        often, where first, and whether the card already holds the attribute."""
        carded = {(c.fact.entity, c.kind.attribute) for c in self.checks if c.kind is not None}
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        for path, statement in self.read:
            key = (statement.entity, statement.kind.attribute)
            row = rows.setdefault(
                key,
                {
                    "entity": statement.entity,
                    "attribute": statement.kind.attribute,
                    "values": [],
                    "statements": 0,
                    "first": f"{path}:{statement.line}",
                    "quotes": [],
                    "on_card": key in carded,
                },
            )
            row["statements"] += 1
            if statement.words not in row["values"]:
                row["values"].append(statement.words)
            if len(row["quotes"]) < QUOTED_PER_FACT:
                row["quotes"].append(statement.quote)
        return list(rows.values())

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
    workspace: Workspace,
    cards: list[CanonCard],
    scene_paths: list[str],
    narrator: str | None = None,
) -> CanonReport:
    cast = build_cast(cards)
    checks = plan_checks(facts_of(cards))
    texts = {path: workspace.read_text(path) for path in scene_paths}
    settings = workspace_settings(workspace)
    declared = narrator or settings[0]
    entity, source = narrator_of(declared, cast, list(texts.values()))
    conflicts: list[Conflict] = []
    agreements: dict[tuple[str, str], int] = {}
    read: list[tuple[str, Statement]] = []
    mentions = {card.name: 0 for card in cards}
    for path, text in texts.items():
        checkpoint()  # a long check stops between files when its run is stopped
        found, agreeing = find_conflicts_in(path, text, checks, cast, entity)
        conflicts.extend(found)
        for statement in agreeing:
            for check in checks:
                kind = check.kind
                if kind is statement.kind and check.fact.entity == statement.entity:
                    key = (check.fact.entity, check.fact.attribute)
                    agreements[key] = agreements.get(key, 0) + 1
        read.extend((path, s) for s in statements_in(text, cast, entity))
        for _, _, named in cast.mentions(text):
            mentions[named] = mentions.get(named, 0) + 1
    conflicts.extend(contradictions_in_text(read, checks))
    uncarded = uncarded_people(texts, cast, settings[1])
    return CanonReport(
        cast, checks, conflicts, agreements, mentions, read, entity, source, uncarded
    )


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
    if report.cast.shared:
        # "Tom Brangwen" is the father's name and the son's: said, so no one wonders why
        # nothing said of "Tom" was checked
        lines.append("Names two people go by, read as neither:")
        lines.extend(
            f"~ {name} (also {longer})" for name, longer in sorted(report.cast.shared.items())
        )
    if report.narrator:
        lines.append(f"Narrator: {report.narrator} ({report.narrator_source})")
    read = report.read_facts()
    if read:
        # What the scenes say, so a canon update proposes it rather than asking for it.
        lines.append("Read in the scenes:")
        lines.extend(
            f"+ {row['entity']}: {row['attribute']} = {' / '.join(row['values'])} "
            f"({row['statements']} statement(s), first at {row['first']}"
            f"{'' if row['on_card'] else '; not on the card'})"
            for row in read
        )
    if report.uncarded:
        lines.append("Without a card:")
        lines.extend(
            f"+ card: {name} ({count} mention(s), first at {where})"
            for name, count, where in report.uncarded
        )
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
        report = check_scenes(workspace, cards, scenes, args.narrator)
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
            "read_in_text": report.read_facts(),
            "uncarded": [
                {"name": name, "mentions": count, "first": where}
                for name, count, where in report.uncarded
            ],
            "narrator": report.narrator,
            "narrator_source": report.narrator_source,
            "pass": not report.conflicts,
        }
        return ToolResult(output, canon_digest(cards, report))
