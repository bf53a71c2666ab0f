"""Output contracts: the JSON shape a prompt type's reply must have (seed 001, B and C).

A contract is a JSON Schema, from a pydantic model bundled here or from a schema file in a
prompt registry layer. The same schema is rendered into the system prompt, sent to
providers that accept structured output, and checked against every reply.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from controlroom.domain import untrusted_json
from controlroom.domain.kept_text import bounded_errors


class _Contract(BaseModel):
    # Closed and strict: `"pass": "true"` is a string, not a boolean, and is refused.
    model_config = ConfigDict(extra="forbid", strict=True)


class Conflict(_Contract):
    entity: str
    attribute: str
    canon_value: str
    found: str
    sentence: str


class ContinuityReport(_Contract):
    """`check_continuity`: read by the DoD (`continuity_report.pass`)."""

    pass_: bool = Field(alias="pass")
    conflicts: list[Conflict]
    facts_checked: int = Field(ge=0)
    entities_seen: list[str] = Field(default_factory=list)


class Finding(_Contract):
    type: str
    location: str
    message: str


class ConsistencyReview(_Contract):
    """`review_consistency`: read by the DoD and by `propose_corrections`."""

    pass_: bool = Field(alias="pass")
    findings: list[Finding]
    summary: str
    #: Card facts about a person the checker could not read (`Entity's attribute ('value'):
    #: reason`): "no findings" is never read as "everything checked".
    not_checked: list[str] = Field(default_factory=list)


class SceneValidity(_Contract):
    """`confirm_scene_validity`: read by the DoD (`validity_report.pass`)."""

    pass_: bool = Field(alias="pass")
    failed_checks: list[str]
    warnings: list[str]


class CanonGap(_Contract):
    entity: str
    missing: list[str]


class ProposedFact(_Contract):
    """A fact the scenes state that the entity's card does not hold yet."""

    entity: str
    attribute: str
    value: str
    where: str = ""


class ProposedCard(_Contract):
    """Someone the scenes name often who has no card."""

    name: str
    mentions: int = Field(ge=0)
    where: str = ""


class CanonGaps(_Contract):
    """`find_canon_gaps`: read as data by `update_canon`."""

    gaps: list[CanonGap]
    conflicts: list[str]
    pass_: bool = Field(alias="pass")
    #: Facts read in the scenes, proposed for the cards (never listed as missing).
    proposed: list[ProposedFact] = Field(default_factory=list)
    #: Cards to create for people the scenes name without one.
    new_cards: list[ProposedCard] = Field(default_factory=list)


class Verdict(_Contract):
    """A critic's verdict (`evaluate_reader_experience`, `evaluate_prose`,
    `evaluate_outline`): a score and a decision a later step or a person can act on."""

    verdict: Literal["accept", "revise"]
    score: int = Field(ge=1, le=10)
    strengths: list[str]
    problems: list[str]
    suggestion: str


class ProposedTask(_Contract):
    id: int = Field(ge=1)
    description: str = Field(min_length=1)
    deps: list[int]
    dod: str
    #: Set when the task cannot be placed without the user's answer.
    scoping_question: str | None = None


class SessionPlanProposal(_Contract):
    """The Chief's decomposition of an intent (`decompose_intent`): tasks, deps, DoD."""

    tasks: list[ProposedTask] = Field(min_length=1)
    summary: str


class TaskReview(_Contract):
    """The Chief's review of a finished task against its DoD (`review_task`)."""

    decision: Literal["accept", "follow_up"]
    notes: str


class ToolChoice(_Contract):
    """The Chief's next phase-1 tool call in a conference round, or none (`tool: null`)."""

    tool: str | None
    args: dict[str, Any]
    reason: str


class TriageDecision(_Contract):
    """The ladder's triage (`ladder_triage`): relax a constraint, defer the step, or block
    it for a person. The engine holds it to the confidence floor and the run's limits."""

    decision: Literal["RELAX", "DEFER", "BLOCK"]
    confidence: float = Field(ge=0, le=1)
    reason: str = Field(min_length=1)
    #: RELAX: the constraint, and how it is relaxed.
    constraint: str | None = None
    relaxation: str | None = None
    #: DEFER: what the next iteration should know.
    note: str | None = None


class CollaborationAsk(_Contract):
    """A loop agent asking the Showrunner to wake another role to help it."""

    role: str = Field(min_length=1)
    reason: str


class LoopWork(_Contract):
    """`loop_work`, `loop_collaborate`: a loop step's artifact (seed 003)."""

    artifact: str
    #: The items of the work list the artifact deals with (a gate checks them).
    addressed: list[str] = Field(default_factory=list)
    #: A workspace path the artifact is meant for, when the loop writes one.
    path: str | None = None
    collaboration: CollaborationAsk | None = None


class LoopFinding(_Contract):
    message: str
    blocking: bool


class LoopGateReport(_Contract):
    """`loop_gatecheck`: a loop's gatekeeper verdict; on FAIL, `back_to` names the library
    step that must revise."""

    verdict: Literal["PASS", "FAIL"]
    findings: list[LoopFinding]
    back_to: str | None = None
    notes: str = ""


class ShowrunnerTurn(_Contract):
    """`showrunner_turn`: the next step (or "stable", "ask_person"), the role to wake,
    notes for it, the answer to a pending collaboration request, and why."""

    next: str = Field(min_length=1)
    role: str | None = None
    notes: str = ""
    collaboration: Literal["approve", "deny"] | None = None
    reason: str


#: Contracts a prompt registry names by id (`"contract": "continuity_report"`).
BUNDLED: dict[str, type[BaseModel]] = {
    "continuity_report": ContinuityReport,
    "consistency_review": ConsistencyReview,
    "scene_validity": SceneValidity,
    "canon_gaps": CanonGaps,
    "verdict": Verdict,
    "session_plan": SessionPlanProposal,
    "task_review": TaskReview,
    "tool_choice": ToolChoice,
    "triage_decision": TriageDecision,
    "loop_work": LoopWork,
    "loop_gate_report": LoopGateReport,
    "showrunner_turn": ShowrunnerTurn,
}


def _register_receipt_reply() -> None:
    # Task packets and receipts are domain models (seed 001); their reply is a contract.
    from controlroom.domain.packets import ReceiptReply

    BUNDLED["receipt_reply"] = ReceiptReply


_register_receipt_reply()


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema, inlined (no `$defs`): what providers and prompts get.

    A fresh copy each time (callers may change theirs); generating it is what costs, about
    a millisecond, once per agent call, so that is done once per model."""
    schema: dict[str, Any] = json.loads(_schema_text(model))
    return schema


@functools.cache
def _schema_text(model: type[BaseModel]) -> str:
    schema = model.model_json_schema(by_alias=True)
    defs = schema.pop("$defs", {})
    return json.dumps(_strip_titles(_inline(schema, defs)))


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline(defs[ref.split("/")[-1]], defs)
        return {k: _inline(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: (
                {p: _strip_titles(s) for p, s in v.items()}
                if k == "properties"
                else _strip_titles(v)
            )
            for k, v in node.items()
            if k not in ("title", "default", "description")
            or not isinstance(v, str | int | float | bool | list)
        }
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


@dataclass(frozen=True)
class Contract:
    name: str
    schema: dict[str, Any]

    def check(self, value: Any) -> list[str]:
        """Every way `value` breaks the schema, as `$.path: problem` lines."""
        return validate(value, self.schema)

    def rendered(self) -> str:
        """The contract as the system prompt states it."""
        return (
            "## Output contract\n"
            "Reply with exactly one JSON object and nothing else: no prose before or after "
            "it, no code fence. It must validate against this JSON Schema "
            f"(`{self.name}`):\n"
            f"{json.dumps(self.schema, indent=2, ensure_ascii=False)}"
        )


# -- a JSON Schema subset: what the bundled and user contracts use ---------------------------

_TYPES: dict[str, Any] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
}


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    expected = _TYPES.get(name)
    return expected is not None and isinstance(value, expected)


def validate(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Types, `properties`/`required`/`additionalProperties`, `items`, `enum`, `const`,
    numeric bounds, string and array lengths, `anyOf`/`oneOf`. Enough for reply contracts;
    anything else in a schema is ignored, never guessed at."""
    errors: list[str] = []
    if "anyOf" in schema or "oneOf" in schema:
        options = schema.get("anyOf") or schema.get("oneOf") or []
        if not any(not validate(value, option, path) for option in options):
            errors.append(f"{path}: {json.dumps(value)[:60]} matches none of the allowed shapes")
        return errors
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not any(_is_type(value, k) for k in kinds):
            shown = json.dumps(value, ensure_ascii=False)[:60]
            return [f"{path}: {shown} is not of type {' or '.join(kinds)}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {json.dumps(value)[:60]} is not one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: must be {json.dumps(schema['const'])}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} is less than {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} is more than {schema['maximum']}")
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        errors.append(f"{path}: shorter than {schema['minLength']} characters")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                errors += validate(item, items, f"{path}[{i}]")
    if isinstance(value, dict):
        properties: dict[str, Any] = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                errors.append(f"{path}: required property '{name}' is missing")
        for name, item in value.items():
            if name in properties:
                errors += validate(item, properties[name], f"{path}.{name}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{path}: property '{name}' is not allowed")
    return errors


# -- extraction: the JSON in a reply -----------------------------------------------------------

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)```", re.DOTALL)
_OPENER = re.compile(r"[\[{]")
#: Where a reply's JSON may start after prose: at most this many tries (each reads no further
#: than its value's end or `MAX_DEPTH` levels down, so the whole search stays linear).
MAX_TRIES = 1_000


class NoJsonError(ValueError):
    """The reply holds no JSON document."""


@dataclass(frozen=True)
class Candidate:
    """One JSON value found in a reply, and how many characters of the reply it spans."""

    value: Any
    size: int


def candidates(reply: str, problems: list[str] | None = None) -> Iterator[Candidate]:
    """Every JSON value a reply may mean, in order: the whole reply, each code fence, then
    each object or array after (and between) prose, left to right and not nested in one
    found before. A value nested too deep is never parsed: it is noted in `problems`."""
    noted = problems if problems is not None else []
    text = reply.strip()

    def note(problem: str) -> None:
        if problem not in noted:
            noted.append(problem)

    def parsed(source: str) -> Candidate | None:
        try:
            return Candidate(untrusted_json.loads(source), len(source))
        except untrusted_json.TooDeepError as exc:
            note(str(exc))
        except ValueError:
            pass
        return None

    whole = parsed(text)
    if whole is not None:
        yield whole
        return
    for fenced in _FENCE.findall(text):
        found = parsed(fenced.strip())
        if found is not None:
            yield found
    position = 0
    for _ in range(MAX_TRIES):
        match = _OPENER.search(text, position)
        if match is None:
            return
        start = match.start()
        try:
            value, end = untrusted_json.decode_at(text, start)
        except untrusted_json.TooDeepError as exc:
            note(str(exc))
            position = start + 1
            continue
        except ValueError:  # not JSON from here (or a number JSON cannot hold)
            position = start + 1
            continue
        position = end
        yield Candidate(value, end - start)


def _no_json(reply: str, problems: list[str]) -> NoJsonError:
    if not reply.strip():
        return NoJsonError("the reply is empty")
    if problems:
        return NoJsonError(problems[0])
    return NoJsonError("the reply contains no JSON object")


def extract_json(reply: str) -> Any:
    """The JSON value of a reply: bare, in a code fence, or after (and before) prose.

    The whole reply when it is JSON; otherwise the largest object or array found in it.
    Raises `NoJsonError` naming what was wrong when there is none."""
    problems: list[str] = []
    best: Candidate | None = None
    for found in candidates(reply, problems):
        if best is None or found.size > best.size:
            best = found
    if best is None:
        raise _no_json(reply, problems)
    return best.value


def check_reply(reply: str, contract: Contract) -> tuple[Any, list[str]]:
    """(the extracted value, the contract's errors); errors is empty for a valid reply.

    The first JSON value in the reply that satisfies the contract is the answer, so a
    preamble that mentions `[1, 2, 3]` does not hide the report after it. When none does,
    the errors are those of the largest value found (the one most likely meant)."""
    problems: list[str] = []
    best: tuple[Candidate, list[str]] | None = None
    for found in candidates(reply, problems):
        errors = contract.check(found.value)
        if not errors:
            return found.value, []
        if best is None or found.size > best[0].size:
            best = (found, errors)
    if best is None:
        return None, [f"$: {_no_json(reply, problems)}"]
    # What a reply breaks is named in events, issues and the next prompt: never unbounded.
    return best[0].value, bounded_errors(best[1])
