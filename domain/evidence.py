"""Evidence enforcement for conference replies (seed 000, "Conference Evidence Enforcement").

A phase-2 reply interprets the round's evidence from one role, or abstains (`ABSTAIN`, with
or without a reason). A reply that interprets carries exactly one `Evidence:` line, whose
sources are separated by `;`:

- `receipt_id: rcpt_…` — a tool's receipt; it must be one of this round's receipts;
- `file: PATH "QUOTE"` — a passage of a workspace file; the quote must really be in that
  file (compared with whitespace and line wrapping normalised; straight or curly quotes);
- `question` — the user's message itself.

Which sources a role may cite is its role contract (`ROLE_SOURCES`): a continuity checker
must ground what it says in tools or the text, a writer in the text, and so on. A reply that
breaks any rule is rejected with the reason: a grounding failure, never a tool failure.
Pure: the caller passes the round's receipt ids and a reader of workspace files.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

SourceKind = Literal["receipt", "file", "question"]

#: The role contracts: which kinds of source each role may cite (documented in README).
ROLE_SOURCES: dict[str, frozenset[SourceKind]] = {
    "continuity": frozenset({"receipt", "file"}),
    "critic": frozenset({"file", "receipt"}),
    "editor": frozenset({"file"}),
    "writer": frozenset({"file", "question"}),
    "planner": frozenset({"receipt", "question"}),
    "librarian": frozenset({"receipt", "file"}),
}
DEFAULT_SOURCES: frozenset[SourceKind] = frozenset({"receipt", "file"})

#: `Evidence:` at the start of a line, also in markdown emphasis (`**Evidence:**`,
#: `__Evidence__:`, `*Evidence:*`): models write it so, and the sources after it are the same.
_EVIDENCE = re.compile(
    r"^[ \t]*(?P<mark>[*_]{0,3})evidence(?P<closed>[*_]{0,3}\s*:\s*[*_]{0,3})\s*(?P<sources>.*)$",
    re.IGNORECASE | re.MULTILINE,
)
_RECEIPT = re.compile(r"^receipt_id\s*:\s*(rcpt_[A-Za-z0-9_]+)$", re.IGNORECASE)
_FILE = re.compile(r"""^file\s*:\s*(\S+)\s+["“](.+)["”]$""", re.IGNORECASE)
_ABSTAIN = re.compile(r"^\W*abstain\b", re.IGNORECASE)


@dataclass(frozen=True)
class Citation:
    kind: SourceKind
    ref: str
    quote: str | None = None


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    abstained: bool = False
    reason: str | None = None
    citations: list[Citation] = field(default_factory=list)


def sources_for(role: str) -> frozenset[SourceKind]:
    return ROLE_SOURCES.get(role, DEFAULT_SOURCES)


def normalised(text: str) -> str:
    """Whitespace and line wrapping do not matter; curly quotes read as straight ones."""
    text = text.replace("“", '"').replace("”", '"').replace("’", "'").replace("‘", "'")
    return " ".join(text.split()).lower()


def parse_sources(line: str) -> list[Citation] | str:
    """The citations of one Evidence line, or why they cannot be read."""
    citations: list[Citation] = []
    for raw in (part.strip() for part in line.split(";")):
        if not raw:
            continue
        if raw.lower() == "question":
            citations.append(Citation("question", "question"))
        elif match := _RECEIPT.match(raw):
            citations.append(Citation("receipt", match.group(1)))
        elif match := _FILE.match(raw):
            citations.append(Citation("file", match.group(1), match.group(2)))
        else:
            return (
                f"cannot read the source '{raw[:80]}' "
                '(use receipt_id: rcpt_…, file: PATH "QUOTE", or question)'
            )
    if not citations:
        return "the Evidence line cites nothing"
    return citations


def _unemphasised(match: re.Match[str]) -> str:
    """The sources, without the marks that close a whole line in bold (`**Evidence: …**`)."""
    sources, mark = match.group("sources").rstrip(), match.group("mark")
    if mark and not any(c in "*_" for c in match.group("closed")) and sources.endswith(mark):
        return sources[: -len(mark)].rstrip()
    return sources


def check_reply(
    text: str,
    role: str,
    receipts: Iterable[str],
    read_file: Callable[[str], str | None],
) -> Verdict:
    """Accept, abstain, or reject (with the reason) one phase-2 reply."""
    if _ABSTAIN.match(text.strip()):
        return Verdict(accepted=True, abstained=True)
    lines = [_unemphasised(m) for m in _EVIDENCE.finditer(text)]
    if len(lines) != 1:
        return Verdict(False, reason=f"exactly one Evidence: line is required, found {len(lines)}")
    parsed = parse_sources(lines[0])
    if isinstance(parsed, str):
        return Verdict(False, reason=parsed)
    allowed = sources_for(role)
    known = set(receipts)
    for citation in parsed:
        if citation.kind not in allowed:
            return Verdict(
                False,
                reason=f"the {role} role may cite {', '.join(sorted(allowed))}, "
                f"not {citation.kind}",
            )
        if citation.kind == "receipt" and citation.ref not in known:
            return Verdict(False, reason=f"{citation.ref} is not a receipt of this round")
        if citation.kind == "file":
            content = read_file(citation.ref)
            if content is None:
                return Verdict(False, reason=f"the cited file '{citation.ref}' does not exist")
            if normalised(citation.quote or "") not in normalised(content):
                return Verdict(
                    False,
                    reason=f'the quote "{(citation.quote or "")[:60]}" is not in {citation.ref}',
                )
    return Verdict(True, citations=parsed)
