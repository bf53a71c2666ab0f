"""The `review_gate` step kind: a verdict the run must pass before it goes on.

A gate reads a verdict an earlier step wrote (`verdict_slot`: PASS, or FAIL with findings),
or checks slots without a model (`checks`: the Definition of Done's checks), or both. On
PASS it writes its slot (`{"verdict": "PASS", "findings": [], "source": …}`) and the run
goes on; on FAIL its step fails with `GateFailedError` (failure kind `gate`), whose message
is the feedback the step it names (`rollback_to`, an earlier agent step) reads when the
run's flow sends it back there, at most `max_rollbacks` times.

Reading a verdict is pure and fails closed: what models really write is read (a JSON object
with `pass`, `verdict` or `status`, its findings under `conflicts`, `findings`, `problems`,
`issues` or `errors`; fenced JSON; prose whose first line says PASS or FAIL), and anything
else, or a verdict that contradicts itself (`"pass": true` beside conflicts), is a FAIL.
A failed model-free check wins over a model's PASS: a finding a tool made is never passed
by a model's opinion of it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import Field

from controlroom.domain import untrusted_json
from controlroom.domain.canonical import preview, sha256_text
from controlroom.domain.outcomes import EventSpec, StepOutcome
from controlroom.domain.recipe import (
    DodCheck,
    SlotFieldEmpty,
    SlotMentionsEach,
    check_refs,
    check_slots,
)
from controlroom.domain.run_events import DodResult, SlotWritten
from controlroom.domain.steps import (
    STEP_KINDS,
    AgentStep,
    KnownNames,
    Phase,
    StepSpec,
    WriteFileStep,
)

#: At most this many findings go into a gate's feedback, each at most `FINDING_CHARS` long;
#: the feedback says how many were left out.
MAX_FINDINGS = 10
FINDING_CHARS = 300
#: The bound on `max_rollbacks`.
MAX_ROLLBACKS = 10

GATE_AGENT_ID = "gate"


class ReviewGateStep(StepSpec):
    """A verdict before the run goes on (phase B only). `verdict_slot`: a slot an earlier
    step wrote (a continuity report, a critic's verdict); `checks`: DoD checks over slots,
    model-free. At least one of them. On FAIL, the run's flow sends it back to
    `rollback_to` (an earlier agent step) with the findings in its prompt, at most
    `max_rollbacks` times; then a `blocking` gate goes to the ladder, an `advisory` one lets
    the run go on with its findings recorded."""

    phases: ClassVar[tuple[Phase, ...] | None] = ("b",)
    kind: Literal["review_gate"] = "review_gate"
    verdict_slot: str | None = Field(default=None, min_length=1)
    checks: list[DodCheck] = Field(default_factory=list)
    rollback_to: str = Field(min_length=1)
    max_rollbacks: int = Field(default=2, ge=0, le=MAX_ROLLBACKS)
    severity: Literal["blocking", "advisory"] = "blocking"

    def slots_read(self) -> list[str]:
        return [slot for _, slot in self.slot_reads()]

    def slot_reads(self) -> list[tuple[str, str]]:
        reads = [("verdict_slot", self.verdict_slot)] if self.verdict_slot else []
        for i, check in enumerate(self.checks):
            reads += [(f"checks[{i}].{where}", slot) for where, slot in check_slots(check)]
        return reads

    def refs(self) -> Iterator[tuple[str, str]]:
        for i, check in enumerate(self.checks):
            for where, ref in check_refs(check):
                yield f"checks[{i}].{where}", ref

    def problems(self, known: KnownNames) -> Iterator[tuple[str, str]]:
        if self.verdict_slot is None and not self.checks:
            yield "verdict_slot", "a review gate needs a verdict_slot, checks, or both"

    def placement_problems(
        self, steps: Sequence[tuple[Phase, StepSpec]], index: int
    ) -> Iterator[tuple[str, str]]:
        ids = [step.step_id for _, step in steps]
        target = self.rollback_to
        if target not in ids:
            yield "rollback_to", f"no step '{target}' in the recipe (steps: {', '.join(ids)})"
            return
        at = ids.index(target)
        phase, step = steps[at]
        if at == index:
            yield "rollback_to", "a gate cannot roll back to itself: name an earlier step"
        elif at > index:
            yield "rollback_to", f"step '{target}' comes after the gate: name an earlier step"
        elif phase == "a":
            yield (
                "rollback_to",
                f"step '{target}' is a phase A tool step: a gate rolls back to a phase B agent "
                "step, which reads the findings",
            )
        elif not isinstance(step, AgentStep):
            yield (
                "rollback_to",
                f"step '{target}' is a '{step.kind}' step: a gate rolls back to an agent step, "
                "which reads the findings",
            )
        else:
            writes = [s.step_id for _, s in steps[at:index] if isinstance(s, WriteFileStep)]
            if writes:
                yield (
                    "rollback_to",
                    f"step '{writes[0]}' writes to the workspace between '{target}' and the "
                    "gate: a gate stands before anything is written",
                )

    def actor(self) -> str:
        return "gate"


STEP_KINDS.register(ReviewGateStep)


# -- reading a verdict ---------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """PASS or FAIL, with the findings (each one line of text)."""

    passed: bool
    findings: tuple[str, ...] = ()


#: Words that mean PASS or FAIL as the value of a verdict field (any case).
PASS_WORDS = frozenset(
    "pass passed passes passing accept accepted approve approved ok okay success "
    "succeeded yes true lgtm".split()
)
FAIL_WORDS = frozenset(
    "fail failed fails failing failure revise reject rejected no false follow_up "
    "needs_revision needs_changes changes_requested blocked".split()
)
#: The words that open a prose verdict ("FAIL: …", "**PASS**", "Continuity: FAIL (…)").
PROSE_PASS = frozenset("pass passed accept accepted approve approved".split())
PROSE_FAIL = frozenset("fail failed revise reject rejected".split())
#: Fields of a JSON verdict, in order of authority.
VERDICT_FIELDS = ("pass", "passed", "verdict", "status", "decision", "result")
#: Findings that contradict a PASS (a report that passes while listing conflicts).
HARD_FINDINGS = ("conflicts", "findings", "issues", "errors")
#: Findings a passing verdict may still list (a critic's minor problems).
SOFT_FINDINGS = ("problems",)

_MARKUP = " \t*_#>`~\"'"
_WORD = re.compile(r"[A-Za-z_]+")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d{1,3}[.)])\s+(.+)$")
_FENCE = re.compile(r"```[A-Za-z]*\s*\n(.*?)```", re.DOTALL)
#: How many `{` a prose reply is searched at for a JSON verdict.
_MAX_TRIES = 50


def unreadable(why: str) -> Verdict:
    """A verdict nobody can read is a FAIL: a gate fails closed."""
    return Verdict(False, (_clip(f"the verdict could not be read: {why}", FINDING_CHARS),))


def read_verdict(value: Any, text: str | None = None) -> Verdict:
    """The verdict in a slot: `value` is what `$ref`s see (a JSON value, or the text),
    `text` what an agent is shown of it (an artifact's text, a pointer's summary)."""
    if isinstance(value, Mapping):
        return verdict_of_json(value)
    if isinstance(value, bool):
        return Verdict(True) if value else Verdict(False, ("the verdict is false",))
    if value is not None and not isinstance(value, str):
        kind = "a JSON list" if isinstance(value, list) else f"a {type(value).__name__}"
        return unreadable(f"the slot holds {kind}, not a verdict")
    source = value if isinstance(value, str) else (text or "")
    if not source.strip():
        return unreadable("the slot is empty")
    return verdict_of_text(source)


def verdict_of_text(text: str) -> Verdict:
    """A verdict written as text: prose opening with PASS or FAIL, JSON in a code fence or
    after prose, or both (then they must agree)."""
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        try:
            whole = untrusted_json.loads(stripped)
        except ValueError as exc:
            return unreadable(f"it looks like JSON but is not valid JSON ({exc})")
        return read_verdict(whole)
    prose = verdict_of_prose(stripped)
    embedded = _embedded_verdict(stripped)
    found = verdict_of_json(embedded) if embedded is not None else None
    if prose is not None and found is not None:
        if prose.passed != found.passed:
            said = "PASS" if prose.passed else "FAIL"
            return Verdict(
                False,
                (
                    f"the verdict contradicts itself: its first line says {said}, its JSON "
                    f"says {'PASS' if found.passed else 'FAIL'}",
                    *found.findings,
                    *prose.findings,
                ),
            )
        return found
    if found is not None:
        return found
    if prose is not None:
        return prose
    first = stripped.splitlines()[0]
    return unreadable(
        f"its first line says neither PASS nor FAIL and it holds no JSON verdict "
        f"(it begins: '{_clip(first, 80)}')"
    )


def verdict_of_json(obj: Mapping[Any, Any]) -> Verdict:
    """A JSON verdict: `pass` (a boolean, or "true"/"false"), `verdict`, `status`…; its
    findings from `conflicts`, `findings`, `issues`, `errors`, `problems`."""
    fields = {str(k).strip().lower(): v for k, v in obj.items()}
    present = [name for name in VERDICT_FIELDS if name in fields]
    # A field that says neither (`"status": "completed"` beside `"pass": true`) is not
    # the verdict; when no field says either, nothing is.
    flags = [(name, flag) for name in present if (flag := _flag(fields[name])) is not None]
    if not flags and present:
        name = present[0]
        shown = _clip(json.dumps(fields[name], ensure_ascii=False, default=str), 60)
        return unreadable(f"'{name}' is {shown}, which is neither a pass nor a fail")
    if not flags:
        names = ", ".join(sorted(fields)[:8]) or "none"
        return unreadable(f"a JSON object with no pass, verdict or status field (fields: {names})")
    hard = [f for name in HARD_FINDINGS for f in _findings(fields.get(name))]
    soft = [f for name in SOFT_FINDINGS for f in _findings(fields.get(name))]
    first = flags[0][0]
    if len({flag for _, flag in flags}) > 1:
        said = ", ".join(f"{name} {_said(fields[name])}" for name, _ in flags)
        return Verdict(False, (f"the verdict contradicts itself: {said}", *hard, *soft))
    passed = flags[0][1]
    if passed and hard:
        where = next(name for name in HARD_FINDINGS if _findings(fields.get(name)))
        return Verdict(
            False,
            (f"the verdict says PASS but lists {len(hard)} finding(s) under '{where}'", *hard),
        )
    if passed:
        return Verdict(True)
    findings = [*hard, *soft]
    suggestion = fields.get("suggestion")
    if isinstance(suggestion, str) and suggestion.strip():
        findings.append(f"suggestion: {suggestion.strip()}")
    if not findings:
        findings.append(f"the verdict is FAIL ({first} {_said(fields[first])}), naming no findings")
    return Verdict(False, tuple(findings))


def verdict_of_prose(text: str) -> Verdict | None:
    """PASS or FAIL as the first word of the first line, or after a short label
    (`Continuity: FAIL (2 conflicts)`, `**Verdict:** accept`); None when it is neither."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    first = lines[0].strip(_MARKUP)
    word, rest = _leading_word(first)
    if word not in PROSE_PASS | PROSE_FAIL:
        label, colon, after = first.partition(":")
        if not colon or len(label) > 40 or len(label.split()) > 4:
            return None
        word, rest = _leading_word(after.strip(_MARKUP))
        if word not in PROSE_PASS | PROSE_FAIL:
            return None
    if word in PROSE_PASS:
        return Verdict(True)
    findings: list[str] = []
    for line in lines[1:]:
        bullet = _BULLET.match(line)
        if bullet:
            findings.append(_clip(bullet.group(1).strip(), FINDING_CHARS))
        elif line.strip().lower().startswith("suggestion:"):
            findings.append(_clip("suggestion: " + line.strip()[11:].strip(), FINDING_CHARS))
    if not findings:
        said = " ".join(
            part for part in [rest.strip(_MARKUP + ":-—–,. "), *lines[1:]] if part.strip()
        )
        findings.append(_clip(said, FINDING_CHARS) if said else "FAIL, with no findings given")
    return Verdict(False, tuple(findings))


def _leading_word(text: str) -> tuple[str, str]:
    match = _WORD.match(text)
    if match is None:
        return "", text
    return match.group(0).lower(), text[match.end() :]


def _embedded_verdict(text: str) -> Mapping[Any, Any] | None:
    """The first JSON object in the text (a code fence's first) that has a verdict field."""
    sources = [block.strip() for block in _FENCE.findall(text)]
    for source in sources:
        try:
            value = untrusted_json.loads(source)
        except ValueError:
            continue
        if isinstance(value, Mapping) and _has_verdict(value):
            return value
    position = 0
    for _ in range(_MAX_TRIES):
        start = text.find("{", position)
        if start < 0:
            return None
        try:
            value, end = untrusted_json.decode_at(text, start)
        except ValueError:
            position = start + 1
            continue
        if isinstance(value, Mapping) and _has_verdict(value):
            return value
        position = end
    return None


def _has_verdict(value: Mapping[Any, Any]) -> bool:
    return any(str(k).strip().lower() in VERDICT_FIELDS for k in value)


def _flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().strip(_MARKUP + ".!").lower().replace(" ", "_").replace("-", "_")
        if word in PASS_WORDS:
            return True
        if word in FAIL_WORDS:
            return False
    return None


def _said(value: Any) -> str:
    return _clip(json.dumps(value, ensure_ascii=False, default=str), 40)


#: What a model writes for "no findings" where a list belongs.
_NONE = frozenset({"", "none", "n/a", "na", "-", "nothing", "no issues", "no conflicts"})


def _findings(value: Any) -> list[str]:
    if value is None or value in ([], {}):
        return []
    if isinstance(value, str) and value.strip().strip(".").lower() in _NONE:
        return []
    items = value if isinstance(value, list) else [value]
    return [described for item in items if (described := describe_finding(item))]


def describe_finding(item: Any) -> str:
    """One finding as one line: a continuity conflict as `Kael: eyes canon 'grey', the
    text says 'green' in "…"`, a finding with a message by its location and message,
    anything else as compact JSON; at most `FINDING_CHARS` long."""
    if isinstance(item, str):
        return _clip(" ".join(item.split()), FINDING_CHARS)
    if not isinstance(item, Mapping):
        return _clip(json.dumps(item, ensure_ascii=False, default=str), FINDING_CHARS)
    fields = {str(k): v for k, v in item.items()}
    location = _location(fields)
    if "entity" in fields and "attribute" in fields:
        text = f"{fields['entity']}: {fields['attribute']}"
        if fields.get("canon_value") is not None:
            text += f" canon '{fields['canon_value']}'"
        if fields.get("found") is not None:
            text += f", the text says '{fields['found']}'"
        sentence = fields.get("sentence") or fields.get("quote")
        if sentence:
            text += f" in “{_clip(' '.join(str(sentence).split()), 160)}”"
        if location:
            text += f" ({location})"
        return _clip(text, FINDING_CHARS)
    for name in ("message", "problem", "description", "detail", "issue", "text", "finding"):
        message = fields.get(name)
        if isinstance(message, str) and message.strip():
            message = " ".join(message.split())
            if location and location not in message:
                message = f"{location}: {message}"
            return _clip(message, FINDING_CHARS)
    return _clip(json.dumps(fields, ensure_ascii=False, default=str), FINDING_CHARS)


def _location(fields: Mapping[str, Any]) -> str:
    location = fields.get("location")
    if isinstance(location, str) and location:
        return location
    path, line = fields.get("path"), fields.get("line")
    if isinstance(path, str) and path:
        return f"{path}:{line}" if line is not None else path
    return ""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# -- a gate's judgement --------------------------------------------------------------------


@dataclass(frozen=True)
class Judgement:
    """A gate's verdict: PASS, or FAIL with every finding (the model-free checks' first)."""

    passed: bool
    findings: tuple[str, ...]
    #: Where the verdict came from, for people: `verdict in slot 'x'; 1 check over slot 'y'`.
    source: str
    #: The verdict slot's own verdict, when the gate reads one.
    verdict: Verdict | None = None
    checks: tuple[DodResult, ...] = field(default_factory=tuple)

    def shown(self) -> tuple[list[str], int]:
        """The findings feedback shows (at most `MAX_FINDINGS`), and how many it leaves out."""
        return list(self.findings[:MAX_FINDINGS]), max(0, len(self.findings) - MAX_FINDINGS)

    def record(self) -> dict[str, Any]:
        """The gate's slot: its verdict, the findings and where they came from."""
        findings, left_out = self.shown()
        record: dict[str, Any] = {
            "verdict": "PASS" if self.passed else "FAIL",
            "findings": findings,
            "source": self.source,
        }
        if left_out:
            record["findings_left_out"] = left_out
        if self.checks:
            record["checks"] = [{"passed": r.passed, "detail": r.detail} for r in self.checks]
        return record


def judge(
    step: ReviewGateStep,
    slots: Mapping[str, Any],
    texts: Mapping[str, str],
    results: Sequence[DodResult],
    failing: Sequence[Sequence[Any]] = (),
) -> Judgement:
    """The gate's verdict from its verdict slot and its checks' results (`results`, in
    the order of `step.checks`; `failing[i]`, the items that made list check i fail). A
    failed check wins over the verdict slot's PASS."""
    verdict = None
    sources: list[str] = []
    if step.verdict_slot is not None:
        slot = step.verdict_slot
        sources.append(f"verdict in slot '{slot}'")
        if slot in slots:
            verdict = read_verdict(slots[slot], texts.get(slot))
        else:
            verdict = unreadable(f"slot '{slot}' has not been written")
    check_findings: list[str] = []
    for i, (check, result) in enumerate(zip(step.checks, results, strict=True)):
        if result.passed:
            continue
        items = failing[i] if i < len(failing) else ()
        check_findings += _check_findings(check, result, items)
    if step.checks:
        read = sorted({slot for check in step.checks for _, slot in check_slots(check)})
        named = ", ".join(f"'{s}'" for s in read)
        count = f"{len(step.checks)} check{'s' if len(step.checks) > 1 else ''}"
        sources.append(
            f"{count} over slot{'s' if len(read) > 1 else ''} {named}" if read else count
        )
    checks_pass = not check_findings
    if verdict is not None and verdict.passed and not checks_pass:
        sources.append("a failed check overrides the verdict's PASS")
    passed = checks_pass and (verdict is None or verdict.passed)
    findings = () if passed else (*check_findings, *(verdict.findings if verdict else ()))
    return Judgement(passed, tuple(findings), "; ".join(sources), verdict, tuple(results))


def _check_findings(check: DodCheck, result: DodResult, items: Sequence[Any]) -> list[str]:
    """A failed check as findings: one per item of a list check, else its detail."""
    if isinstance(check, SlotFieldEmpty) and items:
        where = f"{check.slot}.{check.field}"
        return [_clip(f"{where}: {describe_finding(item)}", FINDING_CHARS) for item in items]
    if isinstance(check, SlotMentionsEach) and items:
        return [
            _clip(f"not addressed in '{check.slot}': {describe_finding(item)}", FINDING_CHARS)
            for item in items
        ]
    return [_clip(result.detail, FINDING_CHARS)]


@dataclass(frozen=True)
class GateOutcome(StepOutcome):
    """A gate that passed (its slot holds the verdict record as JSON)."""

    text: str
    output_sha256: str
    summary: str
    input_slot_refs: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, judgement: Judgement, slots_read: list[str]) -> GateOutcome:
        text = json.dumps(judgement.record(), indent=2, ensure_ascii=False)
        verdict = "PASS" if judgement.passed else "FAIL"
        return cls(text, sha256_text(text), f"{verdict} ({judgement.source})", slots_read)

    def events(self, step: StepSpec, session_id: str) -> list[EventSpec]:
        slot = {
            "slot": step.output_slot,
            "kind": "artifact",
            "agent_id": GATE_AGENT_ID,
            "text": self.text,
            "sha256": self.output_sha256,
            "summary": preview(self.summary),
        }
        return [(SlotWritten, slot)]

    def preview_source(self) -> str:
        return self.summary
