"""Which part of a request is the task: the router weighs a match by the clause it is in.

A writer's request mixes what to do with why and with what is there: "I've got dangling
plot threads everywhere. Go through them and decide what to do with each." or "revise
chapter 8 — check it against canon first and then do a prose pass". The task is the first
clause that asks for something (an imperative, a question, "can you …", "I need …"); the
clauses after it say how, and the statements around it say what is there. A match in the
task clause counts whole; elsewhere it counts for less, so the words of a detail or of the
situation ("the prose is flabby", "the outline under chapter 4") inform the choice without
making it.
"""

from __future__ import annotations

import re

#: Where a clause ends: a sentence's stop, a semicolon or colon, a dash between words.
_CLAUSE_END = re.compile(r"[.!?;:]+(?=\s|$)|\s[—–-]+\s|[—–]")
#: Openers a request may start with before what it asks ("hey,", "ok so", "quick:").
_OPENERS = frozenset("hey hi hello ok okay so quick quickly also and then now right".split())
#: How a clause that asks for something may begin, once its openers are set aside.
_ASKING = re.compile(
    r"^(?:please|pls|plz|kindly|can|could|would|will|i need|i'd like|i would like|i want|"
    r"we need|help|let's|lets|go ahead|time to|is|are|was|were|does|do|did|has|have|which|"
    r"what|where|who|whose|when|why|how)\b"
)
#: A clause that begins so states what is there ("I've got …", "It's flabby", "The
#: chapters mention …", "outline feels lopsided" is caught by its verb below).
_STATING = re.compile(
    r"^(?:i|i'm|im|i've|ive|i'd|it|it's|its|this|that|these|those|there|there's|the|my|our|"
    r"his|her|their|he|she|they|we|you|a|an|some|most|all|every|each)\b"
)
#: A clause whose second or third word is one of these is a statement about something.
_STATING_VERB = re.compile(
    r"^\S+(?:\s+\S+)?\s+(?:is|are|was|were|feels?|seems?|looks?|reads?|has|have|drags?|"
    r"sags?|needs?|says?|said|shows?|mentions?|calls?|holds?|gives?)\b"
)

#: Courtesies around a request ("Thanks for the notes yesterday!", "Many thanks, Gwen",
#: "Hope you're well") ask for nothing and state nothing about the work: they weigh nothing.
_COURTESY = re.compile(
    r"^(?:many thanks|thanks|thank you|thx|ty|cheers|best|regards|kind regards|all the best|"
    r"hope you(?:'re| are) well|hope all is well|good (?:morning|afternoon|evening)|"
    r"dear \w+|hi there|hello there)\b"
)
#: A clause that opens with a subordinating word sets the scene for the ask ("before my
#: beta readers get it", "since the wedding moved"), or announces it ("quick question").
_SETTING = re.compile(
    r"^(?:before|after|since|because|as|while|until|although|though|now that|"
    r"(?:a |one )?(?:quick )?question|one (?:more )?thing|context|background|fyi|btw)\b"
)
#: "X needs writing", "it needs a prose pass", "chapter 3 needs to be checked": a statement
#: in form that asks for the work.
_NEEDS_WORK = re.compile(r"\bneeds? (?:\w+ing\b|to be\b|an? \w+|some \w+|another\b)")

#: What a match weighs by where it is: in the task clause, in a later clause that asks for
#: something (how to do the task), in a statement (what is there).
TASK, HOW, CONTEXT, COURTESY = 1.0, 0.7, 0.5, 0.0


def clauses(text: str) -> list[tuple[int, str]]:
    """The request's clauses, in order, each with where it starts; empty ones left out."""
    found, start = [], 0
    for end in [*_CLAUSE_END.finditer(text), None]:
        stop = end.start() if end is not None else len(text)
        if text[start:stop].strip():
            found.append((start, text[start:stop]))
        if end is not None:
            start = end.end()
    return found


def _opened(clause: str) -> str:
    words = clause.lower().replace("’", "'").split()
    while words and words[0].strip(",") in _OPENERS:
        words = words[1:]
    return " ".join(words).strip(", ")


def _asks(clause: str) -> bool:
    opened = _opened(clause)
    if not opened or _SETTING.match(opened):
        return False
    if _ASKING.match(opened) or clause.rstrip().endswith("?") or _NEEDS_WORK.search(opened):
        return True
    return not (_STATING.match(opened) or _STATING_VERB.match(opened))


def _courtesy(clause: str) -> bool:
    return bool(_COURTESY.match(_opened(clause)))


def clause_weights(parts: list[str]) -> list[float]:
    """Each clause's weight: the first that asks is the task, later ones say how, the rest
    say what is there; courtesies weigh nothing. A request with no clause that asks is all
    task."""
    courtesy = [_courtesy(part) for part in parts]
    asking = [_asks(part) and not polite for part, polite in zip(parts, courtesy, strict=True)]
    if not any(asking):
        return [COURTESY if polite else TASK for polite in courtesy]
    first = asking.index(True)
    return [
        COURTESY if courtesy[index] else TASK if index == first else HOW if asks else CONTEXT
        for index, asks in enumerate(asking)
    ]
