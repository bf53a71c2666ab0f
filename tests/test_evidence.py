"""Evidence enforcement of conference replies: exactly one Evidence line, role contracts,
receipts of this round only, quotes really in the cited file (whitespace and wrapping
normalised), ABSTAIN allowed."""

from __future__ import annotations

from controlroom.domain.evidence import check_reply

SCENE = "Kael rode ahead.\nHis green\n   eyes searched the pass,\nand the rain came on."
FILES = {"Story/Scenes/SCN-02.md": SCENE}
RECEIPTS = {"rcpt_abc"}


def verdict(text: str, role: str = "continuity") -> tuple[bool, str | None]:
    found = check_reply(text, role, RECEIPTS, FILES.get)
    return found.accepted, found.reason


def test_a_grounded_reply_is_accepted_even_across_a_line_wrap() -> None:
    ok, _ = verdict(
        "Eyes contradict canon.\n"
        'Evidence: receipt_id: rcpt_abc; file: Story/Scenes/SCN-02.md "His green eyes searched"'
    )
    assert ok


def test_abstaining_is_allowed() -> None:
    found = check_reply("ABSTAIN: nothing for continuity", "continuity", RECEIPTS, FILES.get)
    assert found.accepted and found.abstained


def test_two_evidence_lines_are_rejected() -> None:
    ok, why = verdict("A.\nEvidence: receipt_id: rcpt_abc\nEvidence: question")
    assert not ok and "exactly one Evidence" in (why or "")


def test_no_evidence_line_is_rejected() -> None:
    ok, why = verdict("Kael's eyes are wrong.")
    assert not ok and "found 0" in (why or "")


def test_a_receipt_not_in_the_round_is_rejected() -> None:
    ok, why = verdict("A.\nEvidence: receipt_id: rcpt_elsewhere")
    assert not ok and "not a receipt of this round" in (why or "")


def test_a_misquote_is_rejected() -> None:
    ok, why = verdict('A.\nEvidence: file: Story/Scenes/SCN-02.md "His blue eyes"')
    assert not ok and "is not in Story/Scenes/SCN-02.md" in (why or "")


def test_a_file_that_does_not_exist_is_rejected() -> None:
    ok, why = verdict('A.\nEvidence: file: Story/nope.md "x"')
    assert not ok and "does not exist" in (why or "")


def test_a_source_the_role_may_not_cite_is_rejected() -> None:
    ok, why = verdict("A.\nEvidence: question", role="continuity")
    assert not ok and "may cite file, receipt, not question" in (why or "")
    ok, why = verdict("A.\nEvidence: receipt_id: rcpt_abc", role="editor")
    assert not ok and "editor role may cite file" in (why or "")


def test_an_unreadable_source_is_rejected_with_the_grammar() -> None:
    ok, why = verdict("A.\nEvidence: trust me")
    assert not ok and "receipt_id: rcpt_" in (why or "")
