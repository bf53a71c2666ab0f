"""What each role does offline, per prompt type: real, deterministic work on its inputs.

Each handler gets the task description and the (slot, text) pairs the agent was shown,
and returns the agent's reply. They reuse the phase A analysis so, for example, the
continuity report's `pass` comes from checking the draft against the canon facts.

The handlers that write or edit scene prose take `slip=True` for the `contradict_canon`
fault (`models/offline_faults.py`): one canon detail is written with a value its card
rules out, which the continuity check really finds. `failing_continuity` and
`failing_verdict` turn a check's or a critic's reply into a failing one (`verdict_fail`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import partial
from typing import Any

from controlroom.domain import untrusted_json
from controlroom.domain.canonical import sha256_text
from controlroom.tools.analysis import Fact, find_conflicts, parse_fact_lines, sentences
from controlroom.tools.builtin.prose_analyzer import prose_metrics
from controlroom.tools.vocabulary import SHADES, describes_the_person, kind_of

Inputs = list[tuple[str, str]]


def _joined(inputs: Inputs) -> str:
    return "\n".join(text for _, text in inputs)


def _pick(seed: str, options: list[str]) -> str:
    return options[int(sha256_text(seed)[:8], 16) % len(options)]


def _json_of(inputs: Inputs) -> dict[str, Any]:
    for _, text in inputs:
        stripped = text.strip()
        if stripped.startswith("{"):
            try:  # a slot another model wrote: read within bounds
                value = untrusted_json.loads(stripped)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return {}


def _marked(inputs: Inputs, mark: str = "!") -> list[str]:
    return [
        line.strip()[len(mark) :].strip()
        for line in _joined(inputs).splitlines()
        if line.strip().startswith(mark + " ")
    ]


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


# -- careless and harsh answers (the offline faults) ------------------------------------------

#: Values a careless writer gives instead of the canon's, tried in order: the first whose
#: colour class the canon value does not share is used (a contradiction the check finds).
_CONTRARY = {
    "eyes": ["blue", "green", "brown", "grey"],
    "hair": ["red", "blond", "black", "brown"],
}
#: A detail written with a wrong value, phrased so the description is pinned on its owner.
_SLIP = {"eyes": "{n}'s {v} eyes caught the thin light.", "hair": "Wind pulled at {n}'s {v} hair."}
_SLIPPABLE = re.compile(r"\b([A-Za-z]+) (eyes|hair)\b")


def contrary(attribute: str, value: str) -> str | None:
    """A value of the attribute that the canon `value` rules out, or None if none is known."""
    kind = kind_of(attribute)
    if kind is None or attribute not in _CONTRARY:
        return None
    canon = kind.classes(value)
    if not canon:
        return None
    return next((v for v in _CONTRARY[attribute] if not kind.classes(v) & canon), None)


def slip_text(text: str) -> str:
    """The text with its first stated eye or hair colour changed to one of another colour
    class: for an editor shown no canon (if the text agreed with canon, it no longer does)."""
    for match in _SLIPPABLE.finditer(text):
        other = contrary(match.group(2), match.group(1))
        if other is not None:
            return f"{text[: match.start(1)]}{other}{text[match.end(1) :]}"
    return text


def slip_sentence(subject: str, facts: list[Fact]) -> str | None:
    """A sentence giving `subject` (else the first entity with such a fact) an eye or hair
    colour its canon rules out; None when the facts state no colour to contradict."""
    ordered = sorted(facts, key=lambda f: f.entity != subject)
    for fact in ordered:
        attribute = fact.attribute.strip().lower()
        other = contrary(attribute, fact.value)
        if other is not None:
            return _SLIP[attribute].format(n=fact.entity, v=other)
    return None


def checked_fact(inputs: Inputs) -> tuple[Fact | None, str]:
    """The first canon fact shown whose entity the checked text names (else the first),
    and a sentence of that text naming it (else its first sentence): what a harsh checker
    calls a conflict."""
    facts = parse_fact_lines(_joined(inputs))
    checked = _joined([(n, t) for n, t in inputs if not parse_fact_lines(t)])
    said = [text for _, text in sentences(checked)] if checked.strip() else []
    for fact in facts:
        named = next((s for s in said if fact.entity.split()[0] in s), None)
        if named is not None:
            return fact, named
    return (facts[0] if facts else None), (said[0] if said else "")


def failing_continuity(report: dict[str, Any], inputs: Inputs) -> dict[str, Any]:
    """A continuity report that fails: `pass: false`, with at least one conflict (a canon
    fact the text is said to contradict, whether or not it does)."""
    conflicts = list(report.get("conflicts") or [])
    if not conflicts:
        fact, sentence = checked_fact(inputs)
        if fact is not None:
            found = contrary(fact.attribute.strip().lower(), fact.value) or "something else"
            conflicts.append(
                {
                    "entity": fact.entity,
                    "attribute": fact.attribute,
                    "canon_value": fact.value,
                    "found": found,
                    "sentence": sentence,
                }
            )
        else:
            conflicts.append(
                {
                    "entity": "the scene",
                    "attribute": "canon",
                    "canon_value": "the canon cards",
                    "found": "no canon fact to check against",
                    "sentence": sentence,
                }
            )
    return {**report, "pass": False, "conflicts": conflicts}


_HARSH_PROBLEM = "the scene does not earn its ending: the stakes are never made plain"


def failing_verdict(verdict: dict[str, Any]) -> dict[str, Any]:
    """A critic's verdict that asks for a revision, with at least one problem named."""
    problems = list(verdict.get("problems") or []) or [_HARSH_PROBLEM]
    score = verdict.get("score")
    low = min(score, 4) if isinstance(score, int) and not isinstance(score, bool) else 4
    return {**verdict, "verdict": "revise", "score": max(1, low), "problems": problems}


# -- creative pipeline ------------------------------------------------------------------------

_FOCUS = re.compile(r"Focus: Scene (\d+) '(.+)'")
_CAST = re.compile(r"^Characters: (.+)$", re.MULTILINE)
_BEAT = re.compile(r"^- beat: (.+)$", re.MULTILINE)


def refine_brief(task: str, inputs: Inputs) -> str:
    text = _joined(inputs)
    focus = _FOCUS.search(text)
    number, title = (focus.group(1), focus.group(2)) if focus else ("?", task.strip())
    cast_match = _CAST.search(text)
    cast = [c.strip() for c in cast_match.group(1).split(",")] if cast_match else []
    cast = [c for c in cast if c and c != "unspecified"]
    beats = _BEAT.findall(text) or [task.strip()]
    facts = [f for f in parse_fact_lines(text) if not cast or f.entity in cast]
    lines = [
        f"# Scene brief: Scene {number} — {title}",
        f"POV: {cast[0] if cast else 'unspecified'}",
        f"Characters: {', '.join(cast) or 'unspecified'}",
        f"Goal: {task.strip()}",
        "Beats:",
    ]
    lines += [f"{i}. {beat}" for i, beat in enumerate(beats, start=1)]
    lines.append("Canon to honour:")
    lines += [f"- {f.line()}" for f in facts] or ["- (no canon facts for this cast)"]
    return "\n".join(lines)


_IRREGULAR = {
    "flees": "fled",
    "rings": "rang",
    "finds": "found",
    "meets": "met",
    "leads": "led",
    "takes": "took",
    "sees": "saw",
    "runs": "ran",
    "comes": "came",
    "goes": "went",
    "holds": "held",
    "is": "was",
    "are": "were",
    "has": "had",
    "falls": "fell",
    "rides": "rode",
    "speaks": "spoke",
    "breaks": "broke",
    "gives": "gave",
}


def _past(verb: str) -> str:
    lowered = verb.lower()
    if lowered in _IRREGULAR:
        return _IRREGULAR[lowered]
    if not lowered.endswith("s") or lowered.endswith("ss"):
        return verb
    stem = verb[:-2] if lowered.endswith(("shes", "ches", "xes", "sses")) else verb[:-1]
    if stem.endswith("e"):
        return stem + "d"
    if stem.endswith("y") and stem[-2:-1] not in "aeiou":
        return stem[:-1] + "ied"
    return stem + "ed"


def _past_tense(beat: str, names: set[str]) -> str:
    tokens = beat.split()
    out = []
    for i, token in enumerate(tokens):
        after_name = i > 0 and tokens[i - 1].strip(",'’s") in names
        after_and = i > 0 and tokens[i - 1] == "and" and i > 1
        bare = token.strip(",.")
        if (after_name or after_and or bare.lower() in _IRREGULAR) and bare.islower():
            token = token.replace(bare, _past(bare))
        out.append(token)
    sentence = " ".join(out)
    return sentence[0].upper() + sentence[1:].rstrip(".") + "."


_DETAIL = {
    "eyes": [
        "{n}'s {v} eyes did not waver.",
        "{n}'s {v} eyes caught the thin light.",
        "{n} looked up, {v} eyes hard as flint.",
    ],
    "hair": ["{n}'s {v} hair was dark with rain.", "Wind pulled at {n}'s {v} hair."],
}
_LINES = [
    '"We end this here," {n} said.',
    '"You knew," {n} said. "You always knew."',
    '"Not yet," {n} said quietly.',
    '"Then show me," {n} said.',
]
_BEATS_CLOSE = [
    "For a moment neither of them moved, and the silence said more than {n} wanted it to.",
    "{n} let the words settle like frost on the stones.",
    "Somewhere below, a door shut, and {n} did not look away.",
    "The wind took the rest, and {n} let it.",
]
_HOOKS = [
    "Behind {n}, something that should have stayed shut stood open.",
    "Only later would {n} ask who else had known?",
    "And somewhere below, something answered…",
]


def draft_scene(task: str, inputs: Inputs, *, slip: bool = False) -> str:
    """The scene from its brief; `slip`: the first canon detail it writes is wrong."""
    brief = next((t for _, t in inputs if t.lstrip().startswith("# Scene brief")), _joined(inputs))
    heading = re.search(r"# Scene brief: (Scene \S+) — (.+)", brief)
    title = f"{heading.group(1)}: {heading.group(2)}" if heading else task.strip()
    cast_match = _CAST.search(brief)
    cast = [c.strip() for c in cast_match.group(1).split(",")] if cast_match else []
    cast = [c for c in cast if c and c != "unspecified"]
    beats = re.findall(r"^\d+\. (.+)$", brief, re.MULTILINE) or [task.strip()]
    facts = parse_fact_lines(_joined(inputs))
    by_entity: dict[str, dict[str, str]] = {}
    for fact in facts:
        by_entity.setdefault(fact.entity, {})[fact.attribute] = fact.value
    names = set(cast) | set(by_entity)
    paragraphs = [f"# {title}"]
    places = [e for e, attrs in by_entity.items() if "region" in attrs or "features" in attrs]
    # Only what this workspace's canon names: never a place from another manuscript.
    place = places[0] if places else "the place"
    paragraphs.append(
        f"Grey light came slowly over {place}. The wind carried the smell of rain "
        f"and iron, and every sound seemed to wait for the next."
    )
    rotation = int(sha256_text(title)[:8], 16)  # varied lines, never the same one twice
    pending = slip
    for i, beat in enumerate(beats):
        subject = next((c for c in cast if c in beat), cast[0] if cast else "No one")
        other = next(
            (c for c in cast if c != subject and c in beat),
            next((c for c in cast if c != subject), subject),
        )
        parts = [_past_tense(beat, names)]
        attrs = by_entity.get(subject, {})
        for attribute in ("eyes", "hair"):
            if attribute in attrs:
                wrong = contrary(attribute, attrs[attribute]) if pending else None
                if wrong is not None:
                    parts.append(_SLIP[attribute].format(n=subject, v=wrong))
                    pending = False  # one detail only
                    break
                template = _pick(f"{beat}:{attribute}", _DETAIL[attribute])
                parts.append(template.format(n=subject, v=attrs[attribute].split(",")[0]))
                break
        parts.append(_LINES[(rotation + i) % len(_LINES)].format(n=other))
        parts.append(_BEATS_CLOSE[(rotation + i) % len(_BEATS_CLOSE)].format(n=subject))
        paragraphs.append(" ".join(parts))
    wrong_detail = slip_sentence(cast[0] if cast else "", facts) if pending else None
    if wrong_detail is not None:  # no beat's subject carried a detail: one is added
        paragraphs[-1] = f"{paragraphs[-1]} {wrong_detail}"
    paragraphs.append(_pick(title, _HOOKS).format(n=cast[0] if cast else "anyone"))
    return "\n\n".join(paragraphs) + "\n"


_FILLER = re.compile(r"\b(?:very|really|just|suddenly|quite|somewhat|rather)\s+", re.IGNORECASE)
_DOUBLED = re.compile(r"\b(\w+)(\s+\1\b)+", re.IGNORECASE)


def polish_draft(task: str, inputs: Inputs, *, slip: bool = False) -> str:
    """The draft edited; `slip`: its first eye or hair colour changed as well."""
    text = inputs[0][1] if inputs else task
    if slip:
        text = slip_text(text)
    edited_lines = []
    for line in text.splitlines():
        if line.startswith("#"):
            edited_lines.append(line.strip())
            continue
        line = _FILLER.sub("", line)
        line = _DOUBLED.sub(r"\1", line)
        line = re.sub(r"[ \t]{2,}", " ", line).strip()
        line = re.sub(r"([.!?…]\s+)([a-z])", lambda m: m.group(1) + m.group(2).upper(), line)
        line = re.sub(r"\s+([,.;:!?])", r"\1", line)
        edited_lines.append(line[:1].upper() + line[1:] if line else line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(edited_lines)).strip() + "\n"


def check_continuity(task: str, inputs: Inputs) -> str:
    facts = parse_fact_lines(_joined(inputs))
    candidates = [(n, t) for n, t in inputs if not parse_fact_lines(t)]
    name, text = candidates[0] if candidates else (inputs[0] if inputs else ("text", ""))
    names: dict[str, list[str]] = {}
    for fact in facts:
        names.setdefault(fact.entity, list(dict.fromkeys([fact.entity, fact.entity.split()[0]])))
    conflicts = find_conflicts(name, text, facts, names)
    seen = sorted(e for e, ns in names.items() if any(n in text for n in ns))
    report = {
        "pass": not conflicts,
        "conflicts": [
            {
                k: v
                for k, v in c.as_dict().items()
                if k in ("entity", "attribute", "canon_value", "found", "sentence")
            }
            for c in conflicts
        ],
        "facts_checked": len(facts),
        "entities_seen": seen,
    }
    return _dumps(report)


def evaluate_reader_experience(task: str, inputs: Inputs) -> str:
    text = inputs[0][1] if inputs else ""
    m = prose_metrics(text)
    hook = bool(re.search(r"[?…—]", text.strip()[-120:]))
    score = max(
        1, min(10, 8 - len(m["flags"]) + (1 if hook else -1) - (1 if m["pacing"] == "slow" else 0))
    )
    strengths = [
        f"{m['pacing']} pacing ({m['avg_sentence_words']} words a sentence), dialogue "
        f"{m['dialogue_ratio']:.0%} of the text"
    ]
    if hook:
        strengths.append("the ending pulls the reader on")
    suggestion = (
        "vary sentence length around the confrontation."
        if m["pacing"] == "brisk"
        else "cut the longest sentences."
    )
    return _verdict(score, strengths, list(m["flags"]), suggestion)


def _verdict(score: int, strengths: list[str], problems: list[str], suggestion: str) -> str:
    """The `verdict` contract: what a critic's reply must look like."""
    return _dumps(
        {
            "verdict": "accept" if score >= 7 and not problems else "revise",
            "score": max(1, min(10, score)),
            "strengths": strengths,
            "problems": problems,
            "suggestion": suggestion,
        }
    )


# -- analytical pipelines ---------------------------------------------------------------------


def review_consistency(task: str, inputs: Inputs) -> str:
    findings = []
    for message in _marked(inputs):
        location = message.split(": ", 1)[0]
        kind = "name_variant" if "looks like a misspelling" in message else "canon_conflict"
        findings.append({"type": kind, "location": location, "message": message})
    # The card facts the checker could not read ("~ Kael: eyes = pink: value 'pink' is not
    # in the eyes vocabulary"): said, so that "no contradictions" is never read as "all
    # checked".
    not_checked = []
    for line in _marked(inputs, "~"):
        entity, _, rest = line.partition(": ")  # "Kael", "eyes = pink: value 'pink' is …"
        attribute, _, rest = rest.partition(" = ")
        value, _, why = rest.partition(": ")
        if describes_the_person(attribute):
            not_checked.append(f"{entity}'s {attribute} ('{value}'): {why}")
    summary = (
        f"{len(findings)} consistency finding(s) across the checked scenes"
        if findings
        else "no contradictions with canon and no misspelt names"
    )
    if not_checked:
        summary += f"; {len(not_checked)} card fact(s) not checked: " + "; ".join(not_checked)
    return _dumps(
        {"pass": not findings, "findings": findings, "summary": summary, "not_checked": not_checked}
    )


_CONFLICT_MSG = re.compile(
    r"^(.+?):(\d+): (.+?)'s (.+?) (?:is|are) '(.+?)' but (canon|\S+:\d+) says '(.+?)'"
    r"(?: \((?:no card states it; )?in “(.+)”\))?$"
)
_VARIANT_MSG = re.compile(r"^(.+?):(\d+): '(.+?)' looks like a misspelling of '(.+?)'$")


_VALUE_WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")


def _value_words(attribute: str, canon: str) -> str:
    """The words of a card's value that name it ("brown" of "waving brown hair; a handsome
    brunette"), with a shade before it ("light brown"): what replaces the flagged word
    in the text. The whole value when no word of it is in the attribute's vocabulary."""
    kind = kind_of(attribute)
    if kind is None:
        return canon
    words: list[str] = _VALUE_WORD.findall(canon)
    for n, word in enumerate(words):
        following = words[n + 1] if n + 1 < len(words) else ""
        if word.lower() in SHADES and kind.word_classes(following.lower()):
            return f"{word} {following}"
        if kind.word_classes(word.lower()):
            return word
    return canon


def propose_corrections(task: str, inputs: Inputs) -> str:
    report = _json_of(inputs)
    findings = report.get("findings") or report.get("conflicts") or []
    not_checked = report.get("not_checked") or []
    unread = (
        "\n\n## Not checked\n" + "\n".join(f"- {item}" for item in not_checked)
        if isinstance(not_checked, list) and not_checked
        else ""
    )
    if not findings:
        return "No corrections needed: the continuity report lists no findings." + unread
    lines = ["## Proposed corrections"]
    for i, finding in enumerate(findings, start=1):
        message = str(finding.get("message", finding))
        conflict, variant = _CONFLICT_MSG.match(message), _VARIANT_MSG.match(message)
        if conflict:
            path, line, entity, attribute, found, source, canon, quote = conflict.groups()
            per = "per the canon card" if source == "canon" else f"as {source} gives it"
            # Only the flagged words change, and only inside the quoted phrase.
            where = f"in “{quote}”, " if quote else ""
            # The card's own word replaces the flagged one; its whole line is quoted beside.
            word = _value_words(attribute, canon)
            card = f": '{canon}'" if word != canon else ""
            lines.append(
                f"{i}. {path} line {line}: {where}change '{found}' to '{word}' "
                f"({entity}'s {attribute} {per}{card})."
            )
        elif variant:
            path, line, found, expected = variant.groups()
            lines.append(f"{i}. {path} line {line}: replace '{found}' with '{expected}'.")
        else:
            lines.append(f"{i}. Review: {message}")
    return "\n".join(lines) + unread


def revise_prose(task: str, inputs: Inputs) -> str:
    advice = {
        "sentence(s) over": "split the longest sentences at their turns",
        "adverb density": "trade -ly adverbs for stronger verbs",
        "repeated words": "vary the repeated words or cut the repeats",
        "passive": "rewrite passive constructions with their actors first",
    }
    lines, current = ["## Revision notes"], None
    for raw in _joined(inputs).splitlines():
        if raw.startswith("- ") and ":" in raw:
            current = raw[2:].split(":", 1)[0]
        elif raw.strip().startswith("! ") and current:
            flag = raw.strip()[2:]
            fix = next((v for k, v in advice.items() if k in flag), "tighten this passage")
            lines.append(f"- {current}: {flag} → {fix}.")
    if len(lines) == 1:
        lines.append("- No measured problems; keep the prose as it is and read it aloud once.")
    return "\n".join(lines)


def evaluate_prose(task: str, inputs: Inputs) -> str:
    notes = [line for line in _joined(inputs).splitlines() if " → " in line]
    flags = [line for line in _joined(inputs).splitlines() if line.strip().startswith("! ")]
    addressed = min(len(notes), len(flags))
    left = [flag.strip()[2:] for flag in flags[addressed:]]
    score = 8 if not flags else max(1, round(10 * addressed / len(flags)))
    return _verdict(
        score,
        [f"the notes address {addressed} of {len(flags)} measured problem(s)"],
        left,
        "revise again for the problems left" if left else "apply the notes as written",
    )


def assess_foreshadowing(task: str, inputs: Inputs) -> str:
    unresolved = [
        line.split(":", 1)[1].strip()
        for line in _joined(inputs).splitlines()
        if line.startswith("- unresolved:")
    ]
    drops = _marked(inputs)
    lines = ["## Foreshadowing assessment"]
    lines += [
        f"- Setup without payoff: '{term}' is planted and never returns." for term in unresolved
    ] or ["- Every planted name returns later."]
    lines += [f"- Tension sag: {drop}." for drop in drops] or ["- Tension holds scene to scene."]
    return "\n".join(lines)


def plan_foreshadowing(task: str, inputs: Inputs) -> str:
    lines = ["## Foreshadowing plan"]
    for line in _joined(inputs).splitlines():
        setup = re.search(r"'(.+?)' is planted", line)
        if setup:
            lines.append(f"- Pay off '{setup.group(1)}' in the next scene that shares its cast.")
        elif "Tension sag:" in line:
            lines.append(
                f"- Raise the stakes where {line.split('entering', 1)[-1].strip(' .')}"
                " opens: give its first beat a threat or a deadline."
            )
    if len(lines) == 1:
        lines.append("- No changes needed.")
    return "\n".join(lines)


def draft_foreshadowing(task: str, inputs: Inputs) -> str:
    lines = ["## Inserts"]
    for line in _joined(inputs).splitlines():
        payoff = re.search(r"Pay off '(.+?)'", line)
        stakes = re.search(r"where (.+?) opens", line)
        if payoff:
            lines.append(
                f'- "{payoff.group(1)}" — no one had spoken of it since, but everyone remembered.'
            )
        elif stakes:
            lines.append(
                f'- Opening of {stakes.group(1)}: "Before the day is out this must be '
                'settled, or none of us walks away."'
            )
    if len(lines) == 1:
        lines.append("- (nothing to insert)")
    return "\n".join(lines)


def review_scene_structure(task: str, inputs: Inputs) -> str:
    failed = _marked(inputs, "- FAIL")
    warned = _marked(inputs, "- WARN")
    lines = ["## Structure review"]
    lines += [f"{i}. Fix {item}" for i, item in enumerate(failed, start=1)]
    lines += [f"- Consider: {item}" for item in warned]
    if not failed and not warned:
        lines.append("The scene's structure holds: no changes needed.")
    return "\n".join(lines)


def confirm_scene_validity(task: str, inputs: Inputs) -> str:
    failed = [item.split(":", 1)[0] for item in _marked(inputs, "- FAIL")]
    warned = [item.split(":", 1)[0] for item in _marked(inputs, "- WARN")]
    return _dumps({"pass": not failed, "failed_checks": failed, "warnings": warned})


def find_canon_gaps(task: str, inputs: Inputs) -> str:
    text = _joined(inputs)
    facts = parse_fact_lines(text)
    kinds = dict(
        re.findall(
            r"([^,:]+?) \((\w+)\)",
            next(
                (
                    line[len("Cards: ") :]
                    for line in text.splitlines()
                    if line.startswith("Cards: ")
                ),
                "",
            ),
        )
    )
    kinds = {k.strip(): v for k, v in kinds.items()}
    attributes: dict[str, set[str]] = {}
    for fact in facts:
        attributes.setdefault(fact.entity, set()).add(fact.attribute)
    read = [m.groupdict() for m in _READ_FACT.finditer(text)]
    # What the scenes state is proposed with its value, never asked for as "missing".
    for row in read:
        attributes.setdefault(row["entity"], set()).add(row["attribute"])
    proposed = [
        {
            "entity": row["entity"],
            "attribute": row["attribute"],
            "value": row["value"],
            "where": row["where"],
        }
        for row in read
        if row["new"]
    ]
    new_cards = [
        {"name": m["name"], "mentions": int(m["mentions"]), "where": m["where"]}
        for m in _UNCARDED.finditer(text)
    ]
    gaps = []
    for kind in sorted(set(kinds.values())):
        members = [e for e, k in kinds.items() if k == kind]
        counts: dict[str, int] = {}
        for entity in members:
            for attribute in attributes.get(entity, set()):
                counts[attribute] = counts.get(attribute, 0) + 1
        expected = {a for a, n in counts.items() if n * 2 > len(members)}
        for entity in members:
            missing = sorted(expected - attributes.get(entity, set()))
            if missing:
                gaps.append({"entity": entity, "missing": missing})
    conflicts = _marked(inputs)
    return _dumps(
        {
            "gaps": gaps,
            "conflicts": conflicts,
            "pass": not (gaps or conflicts or proposed or new_cards),
            "proposed": proposed,
            "new_cards": new_cards,
        }
    )


#: `canon_checker`'s digest: "+ Kael: eyes = grey (2 statement(s), first at ch1.md:4; not
#: on the card)" and "+ card: Miss Gryce (3 mention(s), first at ch10.md:122)".
_READ_FACT = re.compile(
    r"^\+ (?P<entity>(?!card: )[^:\n]+): (?P<attribute>[a-z ]+) = (?P<value>.+?) "
    r"\(\d+ statement\(s\), first at (?P<where>[^;)]+)(?P<new>; not on the card)?\)$",
    re.MULTILINE,
)
_UNCARDED = re.compile(
    r"^\+ card: (?P<name>.+?) \((?P<mentions>\d+) mention\(s\), first at (?P<where>[^)]+)\)$",
    re.MULTILINE,
)


def update_canon(task: str, inputs: Inputs) -> str:
    report = _json_of(inputs)
    lines = ["## Canon updates"]
    for fact in report.get("proposed", []):
        lines.append(
            f"- {fact['entity']}: add {fact['attribute']} = {fact['value']} "
            f"(read in the scenes, first at {fact['where']})."
        )
    for card in report.get("new_cards", []):
        lines.append(
            f"- New card: {card['name']} (named {card['mentions']} times, first at "
            f"{card['where']}); no card holds this person yet."
        )
    for gap in report.get("gaps", []):
        lines.append(
            f"- {gap['entity']}: add {', '.join(gap['missing'])} "
            "(ask the author, or take it from the scenes)."
        )
    for message in report.get("conflicts", []):
        match = _CONFLICT_MSG.match(message)
        if match:
            path, line, entity, attribute, found, source, canon, _ = match.groups()
            if source == "canon":
                lines.append(
                    f"- {entity}: card says {attribute} = {canon}, {path}:{line} says "
                    f"{found}; keep the card and fix the scene, or update the card."
                )
            else:
                lines.append(
                    f"- {entity}: no card states the {attribute}; {source} says {canon}, "
                    f"{path}:{line} says {found}: choose one, put it on the card, and "
                    "fix the other scene."
                )
        else:
            lines.append(f"- Resolve: {message}")
    if len(lines) == 1:
        lines.append("- The canon cards are complete and consistent with the scenes.")
    return "\n".join(lines)


_OUTLINE_SCENE = re.compile(
    r"^- Scene (\d+): (.+) \((\d+) beats; characters: (.+)\)$", re.MULTILINE
)


def restructure_outline(task: str, inputs: Inputs) -> str:
    scenes = _OUTLINE_SCENE.findall(_joined(inputs))
    lines = ["## Proposed structure"]
    for number, title, beats, cast in scenes:
        note = "keep" if int(beats) >= 3 else f"thin ({beats} beats): merge or deepen"
        if cast == "none listed":
            note += "; name its point-of-view character"
        lines.append(f"{number}. {title} — {note}")
    if not scenes:
        lines.append("No scenes found in the outline analysis; nothing to restructure.")
    return "\n".join(lines)


def evaluate_outline(task: str, inputs: Inputs) -> str:
    items = re.findall(r"^\d+\. (.+) — (.+)$", _joined(inputs), re.MULTILINE)
    kept = [title for title, note in items if note.startswith("keep")]
    weak = [f"{title}: {note}" for title, note in items if not note.startswith("keep")]
    score = round(10 * len(kept) / len(items)) if items else 1
    return _verdict(
        max(1, score),
        [f"{len(kept)} of {len(items)} scene(s) carry their weight as planned"],
        weak,
        "deepen or merge the thin scenes" if weak else "keep the structure",
    )


def apply_fix_list(task: str, inputs: Inputs) -> str:
    """The text with each canon conflict of the fix list mended: in the sentence the
    finding quotes, the value found becomes the card's (whole words, case kept)."""
    shown = dict(inputs)
    text = shown.get("text") or (inputs[0][1] if inputs else "")
    try:
        fix_list = json.loads(shown.get("fix_list") or "{}")
    except ValueError:
        return text
    report = fix_list.get("report") if isinstance(fix_list, dict) else None
    conflicts = report.get("conflicts") if isinstance(report, dict) else None
    for conflict in conflicts if isinstance(conflicts, list) else []:
        if not isinstance(conflict, dict):
            continue
        found, canon = str(conflict.get("found") or ""), str(conflict.get("canon_value") or "")
        if not found or not canon or found == canon:
            continue
        word = re.compile(rf"\b{re.escape(found)}\b", re.IGNORECASE)

        def mend(match: re.Match[str], canon: str = canon) -> str:
            return canon.capitalize() if match.group(0)[:1].isupper() else canon

        sentence = str(conflict.get("sentence") or "")
        if sentence and sentence in text:
            text = text.replace(sentence, word.sub(mend, sentence))
        else:
            text = word.sub(mend, text)
    return text


#: Prompt types whose handler writes or edits scene prose, answered with one canon detail
#: wrong (the `contradict_canon` fault); `draft_foreshadowing` writes inserts that state no
#: canon attribute, so it has none to get wrong.
SLIPS: dict[str, Callable[[str, Inputs], str]] = {
    "draft_scene": partial(draft_scene, slip=True),
    "polish_draft": partial(polish_draft, slip=True),
}
#: Checks and critiques whose verdict is inside their work (a receipt's), answered failing
#: (the `verdict_fail` fault); a JSON verdict is failed from outside (`offline_faults`).
FAILING: dict[str, Callable[[str, Inputs], str]] = {}

HANDLERS: dict[str, Callable[[str, Inputs], str]] = {
    "refine_brief": refine_brief,
    "draft_scene": draft_scene,
    "polish_draft": polish_draft,
    "check_continuity": check_continuity,
    "check_beat": check_continuity,
    "evaluate_reader_experience": evaluate_reader_experience,
    "review_consistency": review_consistency,
    "propose_corrections": propose_corrections,
    "revise_prose": revise_prose,
    "evaluate_prose": evaluate_prose,
    "assess_foreshadowing": assess_foreshadowing,
    "plan_foreshadowing": plan_foreshadowing,
    "draft_foreshadowing": draft_foreshadowing,
    "review_scene_structure": review_scene_structure,
    "confirm_scene_validity": confirm_scene_validity,
    "find_canon_gaps": find_canon_gaps,
    "update_canon": update_canon,
    "restructure_outline": restructure_outline,
    "evaluate_outline": evaluate_outline,
    "apply_fix_list": apply_fix_list,
}

__all__ = ["HANDLERS", "Fact", "sentences"]


def _register_chief() -> None:
    # The Chief's prompt types live in their own module; registered here, where the
    # offline provider looks every prompt type up.
    from controlroom.models.offline_chief import HANDLERS as CHIEF

    HANDLERS.update(CHIEF)


_register_chief()


def _register_packet_roles() -> None:
    # The playbook's packet-answering roles live in their own module too.
    from controlroom.models.offline_packets import FAILING as FAILING_PACKETS
    from controlroom.models.offline_packets import HANDLERS as PACKETS
    from controlroom.models.offline_packets import SLIPS as PACKET_SLIPS

    HANDLERS.update(PACKETS)
    SLIPS.update(PACKET_SLIPS)
    FAILING.update(FAILING_PACKETS)


_register_packet_roles()


def _register_conference_roles() -> None:
    from controlroom.models.offline_conference import HANDLERS as CONFERENCE

    HANDLERS.update(CONFERENCE)


_register_conference_roles()


def _register_micro_steps() -> None:
    from controlroom.models.offline_micro import HANDLERS as MICRO

    HANDLERS.update(MICRO)


_register_micro_steps()


def _register_ladder_roles() -> None:
    from controlroom.models.offline_ladder import HANDLERS as LADDER

    HANDLERS.update(LADDER)


_register_ladder_roles()


def _register_pipeline_roles() -> None:
    from controlroom.models.offline_pipeline import HANDLERS as PIPELINE

    HANDLERS.update(PIPELINE)


_register_pipeline_roles()


def _register_loop_roles() -> None:
    from controlroom.models.offline_loops import HANDLERS as LOOPS

    HANDLERS.update(LOOPS)


_register_loop_roles()
