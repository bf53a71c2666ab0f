"""What an event keeps of text a model wrote: a reply of any length must not make an event
larger than the store takes (`CONTROLROOM_MAX_EVENT_BYTES`), or the run would fail on the
event's size with nothing recorded of why.

A long reply is kept by its head and tail, with its length and sha256 (`ReplyDigest`);
errors found in a reply are kept to a bounded number of bounded lines.
"""

from __future__ import annotations

from controlroom.domain.canonical import sha256_text
from controlroom.domain.run_events import ReplyDigest

#: Characters kept from the start and the end of a long reply: three rejected replies, their
#: errors and the rest of a `StopHook` stay far below the smallest sensible event limit.
KEPT_HEAD = 16_000
KEPT_TAIL = 4_000
#: Errors kept from one check, each cut to `MAX_ERROR_CHARS` characters.
MAX_ERRORS = 50
MAX_ERROR_CHARS = 300


def digest_of(text: str) -> ReplyDigest:
    return ReplyDigest(chars=len(text), sha256=sha256_text(text))


def kept_reply(text: str) -> tuple[str, ReplyDigest | None]:
    """The reply whole (and no digest), or its head and tail around a note of what was left
    out, with the length and sha256 of the whole."""
    if len(text) <= KEPT_HEAD + KEPT_TAIL:
        return text, None
    digest = digest_of(text)
    left_out = len(text) - KEPT_HEAD - KEPT_TAIL
    note = (
        f"\n[… {left_out:,} characters not kept: the reply has {digest.chars:,}, "
        f"sha256:{digest.sha256} …]\n"
    )
    return text[:KEPT_HEAD] + note + text[-KEPT_TAIL:], digest


def bounded_errors(errors: list[str]) -> list[str]:
    """At most `MAX_ERRORS` errors of at most `MAX_ERROR_CHARS` characters, and how many
    more there were."""
    kept = [e if len(e) <= MAX_ERROR_CHARS else e[: MAX_ERROR_CHARS - 1] + "…" for e in errors]
    if len(kept) > MAX_ERRORS:
        return [*kept[:MAX_ERRORS], f"… and {len(kept) - MAX_ERRORS} more error(s)"]
    return kept
