"""Phase A on manuscripts as writers keep them: markdown, hard wraps, CRLF, real casts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from controlroom.api.cli import main
from controlroom.domain.errors import ToolError
from controlroom.tools.base import ToolRegistry
from controlroom.tools.canon import build_cast, facts_of, parse_card
from controlroom.tools.facts import find_conflicts_in, plan_checks
from controlroom.tools.layout import SCHEMA_PATH, detect_layout, layout_schema
from controlroom.tools.text import read_document
from controlroom.tools.workspace import Workspace

REPO = Path(__file__).resolve().parent.parent
DORIAN = REPO / "examples" / "dorian"
TOOLS = ToolRegistry.default(with_plugins=False)
DORIAN_CARD = """# Dorian Gray
- **Aliases:** Mr. Gray
- **Pronouns:** he
- **Eyes:** frank blue
- **Hair:** crisp gold
- **Role:** sitter for the portrait
"""
HENRY_CARD = "# Lord Henry Wotton\n- **Aliases:** Harry\n- **Eyes:** brown\n"


def conflicts(text: str, *cards: str) -> list[str]:
    parsed = [parse_card(f"card{i}.md", c) for i, c in enumerate(cards)]
    found, _ = find_conflicts_in("ch.md", text, plan_checks(facts_of(parsed)), build_cast(parsed))
    return [f"{c.line}:{c.entity}:{c.found}:{c.quote}" for c in found]


def test_hard_wrapped_crlf_paragraphs_are_unwrapped_into_real_sentences() -> None:
    text = (
        "CHAPTER I.\r\n\r\nThe studio was filled with the rich odour of roses, and when\r\n"
        "the light summer wind stirred, there came the scent of the lilac. Mr.\r\n"
        "Gray was late.\r\n"
    )
    doc = read_document(text)
    assert doc.title == "CHAPTER I."
    assert [(s.line, s.text) for s in doc.sentences] == [
        (
            3,
            "The studio was filled with the rich odour of roses, and when the light summer "
            "wind stirred, there came the scent of the lilac.",
        ),
        (4, "Mr. Gray was late."),
    ]


def test_front_matter_and_markup_do_not_reach_the_sentences() -> None:
    doc = read_document("---\nchapter: 3\n---\n# Three\n\nShe was *very* tired.\n\n> A quote.\n")
    assert doc.front_matter == {"chapter": "3"}
    assert [(s.line, s.text) for s in doc.sentences] == [
        (6, "She was very tired."),
        (8, "A quote."),
    ]


def test_a_surname_that_is_a_colour_is_a_name_not_an_eye_colour() -> None:
    text = "Dorian Gray looked up, and his blue eyes met the gray ones of Mr. Gray's portrait.\n"
    assert conflicts(text, DORIAN_CARD) == []


def test_an_eye_falling_on_a_yellow_book_is_not_a_yellow_eye() -> None:
    assert conflicts("Dorian sat down. His eye fell on the yellow book.\n", DORIAN_CARD) == []


def test_a_pronoun_opening_a_paragraph_means_the_one_person_named_just_before() -> None:
    text = "Dorian Gray came in.\n\nHis green eyes were tired.\n"
    assert [c.split(":", 1)[1] for c in conflicts(text, DORIAN_CARD)] == [
        "Dorian Gray:green:His green eyes"
    ]
    # Not when two men were named, when another man is in play here, when the name is
    # three paragraphs back, or when the card does not say who the pronoun can mean.
    for text in (
        "Dorian Gray came in with Lord Henry.\n\nHis green eyes were tired.\n",
        "Dorian Gray came in.\n\nThe boy followed. His green eyes were tired.\n",
        "Dorian Gray came in.\n\nIt rained.\n\nIt rained.\n\nHis green eyes were tired.\n",
    ):
        assert conflicts(text, DORIAN_CARD, HENRY_CARD) == [], text
    genderless = "# Dorian Gray\n- **Eyes:** frank blue\n"
    assert conflicts("Dorian Gray came in.\n\nHis green eyes were tired.\n", genderless) == []


def test_a_pronoun_is_not_resolved_when_two_men_are_in_play() -> None:
    text = "Lord Henry looked at him. His grey eyes were full of tears.\n"
    assert conflicts(text, DORIAN_CARD, HENRY_CARD) == []


def test_facts_in_the_cards_own_words_agree_with_their_variants() -> None:
    assert conflicts("Dorian shook his golden hair.\n", DORIAN_CARD) == []
    assert conflicts("Dorian shook his dark hair.\n", DORIAN_CARD) == [
        "1:Dorian Gray:dark:his dark hair"
    ]


def test_a_contradiction_carries_the_exact_quote_and_the_line_it_is_on() -> None:
    text = "Dorian Gray turned to the painter,\nwhose hair was black, and\nsmiled.\n"
    assert conflicts(text, DORIAN_CARD) == []  # "whose" is the painter's: nobody on a card
    text = "The painter turned to Dorian Gray,\nwhose hair was black, and\nsmiled.\n"
    assert conflicts(text, DORIAN_CARD) == ["2:Dorian Gray:black:whose hair was black"]
    text = "Dorian Gray turned. His hair\nwas black as night.\n"
    assert conflicts(text, DORIAN_CARD) == ["2:Dorian Gray:black:His hair was black"]


def test_every_fact_is_checked_or_reported_as_not_checkable(workspace: Path) -> None:
    cards = ["Compendium/Characters/CHAR-kael.md", "Compendium/Locations/LOC-greywatch.md"]
    out = TOOLS.execute("canon_checker", {"canon_paths": cards}, Workspace(workspace)).output
    rows = {(r["entity"], r["attribute"]): r for r in out["facts"]}
    assert rows[("Kael", "eyes")]["checked"] is True
    assert rows[("Kael", "role")]["status"] == "not checkable"
    assert "no check for 'role'" in rows[("Kael", "role")]["reason"]
    assert {r["attribute"] for r in out["unchecked"]} == {"role", "region", "features"}


def test_lord_does_not_make_ford_a_misspelling_but_kale_is(workspace: Path) -> None:
    scene = workspace / "Story/Scenes/SCN-03-the-archive.md"
    scene.write_text(scene.read_text() + "\nThey met Ford at the gate. Later, Kale left.\n")
    card = workspace / "Compendium/Characters/CHAR-kael.md"
    card.write_text(card.read_text().replace("the Warden's Blade", "Lord Kael"))
    out = TOOLS.execute(
        "consistency_checker",
        {
            "scene_paths": ["Story/Scenes/SCN-03-the-archive.md"],
            "canon_paths": ["Compendium/Characters/CHAR-kael.md"],
        },
        Workspace(workspace),
    ).output
    assert [f["found"] for f in out["findings"] if f["type"] == "name_variant"] == ["Kale"]


def test_the_unmodified_novel_gives_no_false_contradictions() -> None:
    ws = Workspace(DORIAN)
    found = TOOLS.execute("file_locator", {"require": ["units", "canon"]}, ws).output
    out = TOOLS.execute(
        "consistency_checker",
        {"scene_paths": found["scenes_in_order"], "canon_paths": found["canon"]},
        ws,
    ).output
    conflicts_found = [f for f in out["findings"] if f["type"] == "canon_conflict"]
    assert conflicts_found == []
    # The name findings are real: the Gutenberg text spells her "Sybil" twice, once
    # opening a sentence ("Sybil rushed to her").
    assert [(f["found"], f["line"]) for f in out["findings"]] == [("Sybil", 66), ("Sybil", 407)]


def test_chapters_in_story_chapters_are_found_in_number_order() -> None:
    layout = detect_layout(Workspace(DORIAN))
    assert layout.source == "detected" and layout.unit == "chapter"
    assert [u.number for u in layout.units] == [1, 2, 3, 4, 5, 6, 7]
    assert layout.outline == "Story/Outline.md" and len(layout.canon) == 5


def test_a_declared_layout_wins_over_detection(tmp_path: Path) -> None:
    (tmp_path / "book").mkdir()
    for n in (10, 9):
        (tmp_path / "book" / f"part-{n}.md").write_text(f"# Part {n}\n\nText.\n")
    (tmp_path / "notes.md").write_text("# Notes\n")
    (tmp_path / ".control-room").mkdir()
    (tmp_path / ".control-room" / "workspace.json").write_text(
        json.dumps({"unit": "chapter", "units": ["book/*.md"], "outline": "notes.md"})
    )
    layout = detect_layout(Workspace(tmp_path))
    assert layout.source == "declared" and layout.outline == "notes.md"
    assert [u.path for u in layout.units] == ["book/part-9.md", "book/part-10.md"]


def test_the_layout_schema_file_is_current() -> None:
    assert json.loads(SCHEMA_PATH.read_text()) == layout_schema()


def test_zero_manuscript_files_is_an_error_naming_the_layout(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# Notes\n")
    with pytest.raises(ToolError, match="folder named Scenes, Chapters"):
        TOOLS.execute("file_locator", {"require": ["units"]}, Workspace(tmp_path))


def test_scope_limits_the_work_to_the_chapter_asked_for() -> None:
    ws = Workspace(DORIAN)
    out = TOOLS.execute("file_locator", {"scope": {"chapter_number": 3}}, ws).output
    assert out["scenes_in_order"] == ["Story/Chapters/Chapter 3.md"]
    assert out["scope"] == "limited to chapter 3"


def test_a_chapter_the_outline_does_not_have_is_a_clear_error() -> None:
    ws = Workspace(DORIAN)
    with pytest.raises(ToolError, match=r"chapter 8 is not in the outline .*chapters 1–7"):
        TOOLS.execute("file_locator", {"scope": {"chapter_number": 8}, "scope_in": "outline"}, ws)
    with pytest.raises(ToolError, match="chapter 9 is not in this workspace"):
        TOOLS.execute("file_locator", {"scope": {"chapter_number": 9}}, ws)


def test_a_scope_number_that_is_no_whole_number_is_refused_not_widened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = Workspace(DORIAN)
    for bad in ("abc", "2.5", True, 2.5, ["x"]):
        key = "chapter_numbers" if isinstance(bad, list) else "chapter_number"
        with pytest.raises(ToolError, match=f"{key} must be a whole number"):
            TOOLS.execute("file_locator", {"scope": {key: bad}}, ws)
    out = TOOLS.execute("file_locator", {"scope": {"chapter_number": "3"}}, ws).output
    assert out["scope"] == "limited to chapter 3"  # a number sent as text is still one
    # through the CLI: the run stops in phase A, before any agent, naming the argument
    workspace = tmp_path / "dorian"
    shutil.copytree(DORIAN, workspace, ignore=shutil.ignore_patterns(".control-room"))
    code = main(["run", "analytical_prose", "--arg", "chapter_number=abc", "-w", str(workspace)])
    assert code != 0
    assert "chapter_number must be a whole number" in capsys.readouterr().err


def test_workspace_check_shows_the_layout_and_fails_on_an_empty_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["workspace", "check", "-w", str(DORIAN)]) == 0
    assert "chapter 7: Story/Chapters/Chapter 7.md" in capsys.readouterr().out
    empty = tmp_path / "empty"
    shutil.copytree(DORIAN / "Story" / "Characters", empty)
    assert main(["workspace", "check", "-w", str(empty)]) == 1
    assert "no scene or chapter files found" in capsys.readouterr().err


def test_a_workspace_json_may_declare_only_the_narrator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = tmp_path / "dorian"
    shutil.copytree(DORIAN, workspace, ignore=shutil.ignore_patterns(".control-room"))
    (workspace / ".control-room").mkdir()
    declared = workspace / ".control-room" / "workspace.json"
    declared.write_text('{"narrator": "Dorian Gray"}')
    assert main(["workspace", "check", "-w", str(workspace)]) == 0
    out = capsys.readouterr().out
    assert "layout: detected (chapters)" in out and "narrator: Dorian Gray (declared)" in out
    # a misspelt field is named plainly, with the fields there are
    declared.write_text('{"narator": "Dorian Gray"}')
    assert main(["workspace", "check", "-w", str(workspace)]) != 0
    err = capsys.readouterr().err
    assert "narator: Extra inputs are not permitted" in err and "narrator, ignore_names" in err
    assert "pydantic" not in err


def test_workspace_check_says_who_narrates_and_how_it_knows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["workspace", "check", "-w", str(DORIAN)]) == 0
    assert "narrator: none (none)" in capsys.readouterr().out  # told in the third person
    book = tmp_path / "book"
    shutil.copytree(DORIAN, book)
    settings = book / ".control-room" / "workspace.json"
    settings.parent.mkdir(exist_ok=True)
    settings.write_text(
        json.dumps(
            {
                "unit": "chapter",
                "units": ["Story/Chapters/*.md"],
                "canon": ["Story/Characters/*.md"],
                "narrator": "Basil Hallward",
            }
        )
    )
    assert main(["workspace", "check", "-w", str(book)]) == 0
    assert "narrator: Basil Hallward (declared)" in capsys.readouterr().out


def test_cards_in_a_folder_of_any_name_are_known_by_their_lines(tmp_path: Path) -> None:
    (tmp_path / "Chapters").mkdir()
    (tmp_path / "Chapters" / "Chapter 01.md").write_text(
        "# Chapter 1\n\nEyes: that was all he saw of her. Hair: none to speak of.\n"
    )
    cards = tmp_path / "Dramatis Personae"
    cards.mkdir()
    (cards / "silver.md").write_text("# John Silver\n\n- Eyes: grey\n- Height: tall\n")
    (cards / "hawkins.md").write_text(
        "# Jim\n\n| Attribute | Value |\n|---|---|\n| Hair | fair |\n| Age | twelve |\n"
    )
    (tmp_path / "research.md").write_text("# Ships\n\nA brig has two masts. Role: none.\n")
    layout = detect_layout(Workspace(tmp_path))
    assert layout.canon == ("Dramatis Personae/hawkins.md", "Dramatis Personae/silver.md")
    assert [u.path for u in layout.units] == ["Chapters/Chapter 01.md"]


def test_a_titled_stranger_or_another_woman_in_play_keeps_a_pronoun_unresolved() -> None:
    bennet = "# Mr. Bennet\n- **Pronouns:** he\n- **Height:** short\n"
    said = "Mr. Collins was received by Mr. Bennet. He was a tall, heavy-looking young man.\n"
    assert conflicts(said, bennet) == []  # Mr. Collins has no card, but he is in play
    kitty = "# Catherine Bennet\n- **Aliases:** Kitty\n- **Pronouns:** she\n- **Height:** short\n"
    assert conflicts("Lady Catherine was a tall, large woman.\n", kitty) == []
    darcy = "# Fitzwilliam Darcy\n- **Pronouns:** he\n- **Height:** short\n"
    assert conflicts("Miss Darcy was tall, and on a larger scale.\n", darcy) == []
    assert conflicts("Mr. Darcy was tall.\n", darcy) == ["1:Fitzwilliam Darcy:tall:tall"]
    havisham = "# Miss Havisham\n- **Pronouns:** she\n- **Hair:** white\n"
    said = "Miss Havisham beckoned her to come close, and tried a jewel against her brown hair.\n"
    assert conflicts(said, havisham) == []
    said = "Miss Havisham sat; I was watching her. Her brown hair was loose.\n"
    assert conflicts(said, havisham) == ["1:Miss Havisham:brown:Her brown hair"]


def test_chapters_in_book_or_part_folders_follow_the_folders_order(tmp_path: Path) -> None:
    for path in (
        "Book the First/Chapter 04.txt",
        "Book the First/Chapter 05.txt",
        "Book the Second/Chapter 02.txt",
        "Book the Second/Chapter 06.txt",
    ):
        (tmp_path / path).parent.mkdir(exist_ok=True)
        (tmp_path / path).write_text(f"# {path}\n\nText.\n")
    layout = detect_layout(Workspace(tmp_path))
    assert [u.path for u in layout.units] == [
        "Book the First/Chapter 04.txt",
        "Book the First/Chapter 05.txt",
        "Book the Second/Chapter 02.txt",
        "Book the Second/Chapter 06.txt",
    ]
    parts = tmp_path / "parts"
    for path in ("Part Three/Chapter 15.md", "Part One/Chapter 01.md", "Part Two/Chapter 08.md"):
        (parts / path).parent.mkdir(parents=True, exist_ok=True)
        (parts / path).write_text("# Chapter\n\nText.\n")
    layout = detect_layout(Workspace(parts))
    assert [u.number for u in layout.units] == [1, 8, 15]


def test_numbered_part_folders_hold_chapters_named_after_a_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Jude the Obscure as a fifth audit laid it out: "Part 1/01 Chapter I.md", the numbers
    starting again in each part."""
    for part, chapters in ((1, 3), (2, 2)):
        for n in range(1, chapters + 1):
            path = tmp_path / f"Part {part}" / f"{n:02} Chapter {'I' * n}.md"
            path.parent.mkdir(exist_ok=True)
            path.write_text(f"{'I' * n}\n\nJude walked on.\n")
    layout = detect_layout(Workspace(tmp_path))
    assert layout.unit == "chapter"
    assert [u.path for u in layout.units] == [
        "Part 1/01 Chapter I.md",
        "Part 1/02 Chapter II.md",
        "Part 1/03 Chapter III.md",
        "Part 2/01 Chapter I.md",
        "Part 2/02 Chapter II.md",
    ]
    assert [u.number for u in layout.units] == [1, 2, 3, 4, 5]
    empty = tmp_path / "empty"
    (empty / "Story").mkdir(parents=True)
    (empty / "Story" / "01.md").write_text("Jude walked on.\n")
    assert main(["workspace", "check", "-w", str(empty)]) == 1
    out, err = capsys.readouterr()
    assert "layout: detected (no scenes or chapters found)" in out  # not "(scenes)"
    assert "Draft or Text (or numbered Part/Book/Volume folders)" in err


def test_a_sentence_ends_before_a_title_and_never_after_one() -> None:
    from controlroom.tools.text import split_sentences

    text = (
        "He was poor. Mr. Smith was rich. She went home! Mrs. Prideaux followed. "
        '"I know." Dr. Lane came. Mr. and Mrs. Hale sat down.'
    )
    assert [s for _, s in split_sentences(text)] == [
        "He was poor.",
        "Mr. Smith was rich.",
        "She went home!",
        "Mrs. Prideaux followed.",
        '"I know."',
        "Dr. Lane came.",
        "Mr. and Mrs. Hale sat down.",
    ]
    # each sentence is found where it stands in the paragraph
    assert all(text[start:].startswith(s) for start, s in split_sentences(text))


def test_declaring_the_chapters_keeps_the_cards_found_and_a_unit_alone_applies(
    tmp_path: Path,
) -> None:
    """A seventh audit declared `"units": ["Text/*.md"]` and lost its `Cast/` cards to
    "other files"; `{"unit": "chapter"}` alone was ignored."""
    (tmp_path / "Text").mkdir()
    (tmp_path / "Text" / "01.md").write_text("Isabel walked on.\n")
    (tmp_path / "Cast").mkdir()
    (tmp_path / "Cast" / "isabel.md").write_text("# Isabel Archer\n- Eyes: grey\n")
    state = tmp_path / ".control-room"
    state.mkdir()
    (state / "workspace.json").write_text('{"unit": "chapter", "units": ["Text/*.md"]}')
    layout = detect_layout(Workspace(tmp_path))
    assert layout.source == "declared" and layout.canon == ("Cast/isabel.md",)
    (state / "workspace.json").write_text('{"unit": "chapter"}')
    layout = detect_layout(Workspace(tmp_path))
    assert (layout.source, layout.unit) == ("detected", "chapter")
    assert [u.path for u in layout.units] == ["Text/01.md"]


def test_units_in_a_folder_that_does_not_say_are_chapters_when_their_headings_say_so(
    tmp_path: Path,
) -> None:
    """Round 9's Far from the Madding Crowd: `Text/01-title.md` opening `# Chapter 1`, and
    `workspace check` called its chapters scenes."""
    (tmp_path / "Text").mkdir()
    for n, heading in ((1, "# Chapter 1"), (2, "CHAPTER II.")):
        (tmp_path / "Text" / f"{n:02}-slug.md").write_text(f"{heading}\r\n\r\nOak walked.\r\n")
    assert detect_layout(Workspace(tmp_path)).unit == "chapter"
    # Round 13's Master of Ballantrae: the book's dedication among them says nothing
    (tmp_path / "Text" / "00-slug.md").write_text("# DEDICATION\n\nTo a friend.\n")
    assert detect_layout(Workspace(tmp_path)).unit == "chapter"
    (tmp_path / "Text" / "03-slug.md").write_text("# The Storm\n\nOak walked.\n")
    assert detect_layout(Workspace(tmp_path)).unit == "scene"  # one that does not say


def test_a_two_column_table_of_attribute_names_over_one_row_is_a_header() -> None:
    """Round 10's Valley of Fear cards: `| Aliases | Pronouns |` over one row of values lost
    every alias (read as "aliases" = "Pronouns")."""
    card = parse_card(
        "Characters/watson.md",
        "# John Watson\n\n| Aliases | Pronouns |\n|---|---|\n| Watson, Dr. Watson | he/him |\n",
    )
    assert card.aliases == ("Watson", "Dr. Watson") and card.attributes == {"pronouns": "he/him"}
    card = parse_card("Characters/x.md", "# X\n\n| Eyes | Hair |\n|---|---|\n| grey | dark |\n")
    assert card.attributes == {"eyes": "grey", "hair": "dark"}
    # a two-column table of attributes, its first row written as the header, is still one
    card = parse_card("Characters/x.md", "# X\n\n| Eyes | grey |\n|---|---|\n| Hair | black |\n")
    assert card.attributes == {"eyes": "grey", "hair": "black"}


def test_cards_declared_alone_named_dramatis_personae_or_in_sections_are_found(
    tmp_path: Path,
) -> None:
    """Round 13's The Way of All Flesh and The Egoist: `{"canon": [...]}` alone was ignored,
    `Dramatis Personae/` with `## Eyes` section cards was not found, `Egoist/` chapters were
    not found, and declared units without `unit` were called scenes."""
    (tmp_path / "Chapters").mkdir()
    (tmp_path / "Chapters" / "01.md").write_text("# Chapter 1\n\nJane came in.\n")
    card = "# Jane\n\n## Pronouns\n\nshe\n\n## Eyes\n\ngrey\n"
    (tmp_path / "DP").mkdir()
    (tmp_path / "DP" / "jane.md").write_text("# Jane\n\nPronouns she. Eyes grey.\n")
    (tmp_path / ".control-room").mkdir()
    (tmp_path / ".control-room" / "workspace.json").write_text('{"canon": ["DP/*.md"]}')
    layout = detect_layout(Workspace(tmp_path))
    assert layout.canon == ("DP/jane.md",) and [u.path for u in layout.units] == ["Chapters/01.md"]
    (tmp_path / ".control-room" / "workspace.json").unlink()
    (tmp_path / "Dramatis Personae").mkdir()
    (tmp_path / "Dramatis Personae" / "jane.md").write_text(card)
    (tmp_path / "Notes").mkdir()
    (tmp_path / "Notes" / "ann.md").write_text(card.replace("Jane", "Ann"))
    layout = detect_layout(Workspace(tmp_path))
    assert "Dramatis Personae/jane.md" in layout.canon and "Notes/ann.md" in layout.canon
    egoist = tmp_path / "book"
    (egoist / "Egoist").mkdir(parents=True)
    for n in (1, 2, 3):
        (egoist / "Egoist" / f"0{n}-slug.md").write_text(f"# CHAPTER {n}\n\nSir Willoughby.\n")
    (egoist / "Egoist" / "00-prelude.md").write_text("# PRELUDE\n\nComedy.\n")
    layout = detect_layout(Workspace(egoist))
    assert layout.unit == "chapter" and len(layout.units) == 3
    (egoist / ".control-room").mkdir()
    (egoist / ".control-room" / "workspace.json").write_text('{"units": ["Egoist/*.md"]}')
    layout = detect_layout(Workspace(egoist))
    assert layout.source == "declared" and layout.unit == "chapter" and len(layout.units) == 4


def test_round_fifteen_layouts_chapters_in_words_declared_order_and_a_stray_apostrophe(
    tmp_path: Path,
) -> None:
    """Where Angels Fear to Tread: files opening `# Chapter One` were no chapters. Middlemarch:
    `numbering: order` put the Finale first, and a card's `'blue ("Fred's face")'` (an
    apostrophe YAML refuses in single quotes) was read as `blue ("Fred`."""
    angels = tmp_path / "angels"
    (angels / "angels").mkdir(parents=True)
    for n, word in enumerate(("One", "Two", "THREE"), start=1):
        (angels / "angels" / f"wa_ch{n:02d}.md").write_text(f"# Chapter {word}\n\nText.\n")
    layout = detect_layout(Workspace(angels))
    assert layout.unit == "chapter"
    assert [u.path for u in layout.units] == [f"angels/wa_ch0{n}.md" for n in (1, 2, 3)]

    book = tmp_path / "middlemarch"
    for path in ("M/Prelude.md", "M/Book I/Chapter 01.md", "M/Book II/Chapter 02.md"):
        (book / path).parent.mkdir(parents=True, exist_ok=True)
        (book / path).write_text("# Text\n\nWords.\n")
    (book / "M/Finale.md").write_text("# Finale\n\nWords.\n")
    (book / ".control-room").mkdir()
    declared = ["M/Prelude.md", "M/Book */Chapter *.md", "M/Finale.md"]
    (book / ".control-room/workspace.json").write_text(
        json.dumps({"units": declared, "numbering": "order"})
    )
    units = detect_layout(Workspace(book)).units
    assert [(u.number, u.path) for u in units] == [
        (1, "M/Prelude.md"),
        (2, "M/Book I/Chapter 01.md"),
        (3, "M/Book II/Chapter 02.md"),
        (4, "M/Finale.md"),
    ]

    card = parse_card(
        "Cast/fred.md", "---\nname: Fred Vincy\neyes: 'blue (\"Fred's face\")'\n---\n"
    )
    assert card.attributes["eyes"] == 'blue ("Fred\'s face")'


def test_round_fifteen_parts_with_titles_numeral_headings_and_a_stray_front_file(
    tmp_path: Path,
) -> None:
    """O Pioneers!: `Part 1 - The Wild Land/01.md` folders were not found; Rebecca of
    Sunnybrook Farm: `Draft/` files headed `# XII. “SEE THE PALE MARTYR”` were scenes;
    Vanity Fair: "Before the Curtain" among the chapters made every chapter a scene."""
    pioneers = tmp_path / "pioneers"
    for part, title in ((1, "The Wild Land"), (2, "Neighbouring Fields")):
        folder = pioneers / "O Pioneers" / f"Part {part} - {title}"
        folder.mkdir(parents=True)
        for n in (1, 2):
            (folder / f"{n:02d}.md").write_text(f"# {'I' * n}\n\nText.\n")
    layout = detect_layout(Workspace(pioneers))
    assert len(layout.units) == 4 and layout.unit == "chapter"

    rebecca = tmp_path / "rebecca" / "Draft"
    rebecca.mkdir(parents=True)
    for n, title in enumerate(("“WE ARE SEVEN”", "REBECCA’S RELATIONS", "A DIFFERENCE"), 1):
        (rebecca / f"{n:02d}-title.md").write_text(f"# {'I' * n}. {title}\n\nText.\n")
    assert detect_layout(Workspace(rebecca.parent)).unit == "chapter"
    # a first line in the first person is no numeral heading
    scenes = tmp_path / "scenes" / "Draft"
    scenes.mkdir(parents=True)
    for n in range(1, 4):
        (scenes / f"{n:02d}.md").write_text("I went out into the rain.\n")
    assert detect_layout(Workspace(scenes.parent)).unit == "scene"

    vanity = tmp_path / "vanity" / "Manuscript"
    vanity.mkdir(parents=True)
    (vanity / "VF-00-before-the-curtain.md").write_text("## Before the Curtain\n\nText.\n")
    for n in range(1, 11):
        (vanity / f"VF-{n:02d}-slug.md").write_text(f"## Chapter {n}: A Title\n\nText.\n")
    assert detect_layout(Workspace(vanity.parent)).unit == "chapter"
