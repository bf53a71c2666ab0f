"""The drafting target: scope arguments, "the next chapter", part headings, failing early."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.errors import ToolError
from controlroom.domain.run_events import AgentResponded
from controlroom.engine.context import Context
from controlroom.engine.service import RunRequest, RunService
from controlroom.tools.base import ToolRegistry
from controlroom.tools.house_style import house_style
from controlroom.tools.outline import parse_outline
from controlroom.tools.workspace import Workspace

REPO = Path(__file__).resolve().parent.parent

# An outline laid out as a writer does: a title, part headings grouping the chapters (one
# of them naming a chapter range), chapter numbers in words and digits, CRLF line endings.
OUTLINE = (
    "# Northanger Abbey — Outline\r\n\r\n"
    "## Part One — Bath (chapters 1–2)\r\n\r\n"
    "### Chapter One: Catherine\r\n- Catherine is introduced as an unlikely heroine\r\n\r\n"
    "### Chapter 2: The Journey\r\n- Catherine travels to Bath with the Allens\r\n\r\n"
    "## Part Two — The Abbey (chapters 3–4)\r\n\r\n"
    "### Chapter 3: Arrival\r\n- Catherine arrives at Northanger Abbey\r\n\r\n"
    "### Chapter 4: The Chest\r\n- Catherine opens the mysterious chest\r\n"
)


@pytest.fixture
def book(tmp_path: Path) -> Path:
    root = tmp_path / "book"
    (root / "Chapters").mkdir(parents=True)
    (root / "Outline.md").write_bytes(OUTLINE.encode())
    for number, title in ((1, "Catherine"), (2, "The Journey")):
        text = f"# Chapter {number}\r\n\r\nNo one who had ever seen Catherine Morland...\r\n"
        (root / "Chapters" / f"Chapter {number} - {title}.md").write_bytes(text.encode())
    return root


def analyze(root: Path, **args: Any) -> dict[str, Any]:
    tools = ToolRegistry.default(with_plugins=False)
    result = tools.execute(
        "outline_analyzer", {"outline_path": "Outline.md", **args}, Workspace(root)
    )
    return dict(result.output)


def test_part_headings_group_chapters_and_are_never_units() -> None:
    chapters = parse_outline(OUTLINE)
    assert [(c["number"], c["title"]) for c in chapters] == [
        (1, "Catherine"),
        (2, "The Journey"),
        (3, "Arrival"),
        (4, "The Chest"),
    ]
    # An outline of part headings alone still has sections to work with.
    assert [s["title"] for s in parse_outline("## Act One\n- a\n## Act Two\n- b\n")] == [
        "Act One",
        "Act Two",
    ]


def test_scope_arguments_and_the_next_chapter_set_the_drafting_target(book: Path) -> None:
    by_arg = analyze(book, focus="", scope={"chapter_number": 4}, drafting=True)
    assert by_arg["focus"]["title"] == "The Chest"
    assert by_arg["target"]["path"] == "Chapters/Chapter 4 - The Chest.md"
    assert by_arg["target"]["exists"] is False
    as_text = analyze(book, focus="", scope={"scene_number": "3"}, drafting=True)
    assert as_text["target"]["number"] == 3
    following = analyze(book, focus="Write the next chapter", scope={}, drafting=True)
    assert following["target"]["path"] == "Chapters/Chapter 3 - Arrival.md"


def test_a_draft_that_cannot_be_written_fails_naming_what_exists(book: Path) -> None:
    with pytest.raises(ToolError, match=r"chapter 2 is already written at 'Chapters/Chapter 2"):
        analyze(book, focus="Draft chapter 2", scope={"chapter_number": 2}, drafting=True)
    with pytest.raises(ToolError, match=r"the outline has chapters 1–4, not 13"):
        analyze(book, focus="Draft chapter 13", scope={"chapter_number": 13}, drafting=True)
    with pytest.raises(ToolError, match=r"not 9"):
        analyze(book, focus="Draft chapter 9", drafting=True)
    for number, title in ((3, "Arrival"), (4, "The Chest")):
        (book / "Chapters" / f"Chapter {number} - {title}.md").write_text("# Chapter\n\nText.\n")
    with pytest.raises(ToolError, match="every unit of the outline already has a file"):
        analyze(book, focus="Write the next chapter", drafting=True)
    # Reading the outline without drafting never refuses.
    assert analyze(book, focus="Chapter 2")["target"]["exists"] is True


def test_drafting_a_written_scene_fails_before_any_model_call(workspace: Path) -> None:
    ctx = Context.open(workspace)
    try:
        service = RunService(ctx)
        run = service.start(RunRequest("creative_draft_scene", {"scene_number": 3}))
        final = asyncio.run(service.execute(run))
        assert final.status.value == "failed"
        assert "already written at 'Story/Scenes/SCN-03-the-archive.md'" in str(final.error)
        events = list(ctx.store.stream(run.id))
        assert not [e for e in events if isinstance(e, AgentResponded)]
    finally:
        ctx.close()


def test_a_draft_takes_the_heading_and_line_endings_of_the_chapters_beside_it(
    book: Path, tmp_path: Path
) -> None:
    draft = "# Chapter ?: Arrival\n\nCatherine saw the abbey at last.\n"
    written = house_style(Workspace(book), "Chapters/Chapter 3 - Arrival.md", draft)
    assert written == "# Chapter 3\r\n\r\nCatherine saw the abbey at last.\r\n"
    # Roman numerals in capitals, no markdown heading, LF endings: as published.
    roman = tmp_path / "roman" / "Chapters"
    roman.mkdir(parents=True)
    for number, numeral in ((1, "I"), (2, "II")):
        (roman / f"Chapter {number}.md").write_text(f"CHAPTER {numeral}.\n\nText {number}.\n")
    written = house_style(Workspace(roman.parent), "Chapters/Chapter 8.md", "Dawn came.\n")
    assert written == "CHAPTER VIII.\n\nDawn came.\n"
    # Not a unit's file (a report): left as written.
    assert house_style(Workspace(book), "control-room-reports/x/run_1.md", draft) == draft


def test_a_draft_is_titled_by_the_outline_and_loses_a_models_talk(tmp_path: Path) -> None:
    novel = tmp_path / "novel"
    shutil.copytree(
        REPO / "examples" / "novel",
        novel,
        ignore=shutil.ignore_patterns(".control-room", "SCN-04-*"),
    )
    target = "Story/Scenes/SCN-04-the-reckoning.md"
    # no heading in the reply: the outline's title for scene 4, never scene 3's
    written = house_style(Workspace(novel), target, "Kael drew his blade.\n")
    assert written == "# Scene 4: The Reckoning\n\nKael drew his blade.\n"
    # a chatty reply (as real models answer): the talk before and after is no scene
    reply = (
        "Here is the scene you asked for:\n\n# Scene 4: The Reckoning\n\nKael drew his "
        "blade.\n\nMira waited.\n\n---\n\nLet me know if you'd like any changes!\n"
    )
    assert house_style(Workspace(novel), target, reply) == (
        "# Scene 4: The Reckoning\n\nKael drew his blade.\n\nMira waited.\n"
    )
    # prose that only sounds like talk stays
    prose = "# Scene 4\n\nKael walked home.\n\nI hope you find him, he thought.\n"
    assert house_style(Workspace(novel), target, prose).endswith(
        "I hope you find him, he thought.\n"
    )


def test_the_first_chapter_of_a_new_book_gets_a_folder_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "Outline.md").write_text("# Book\n\n## Chapter 1: The Lamp\n- Maren climbs\n")
    target = analyze(tmp_path, focus="Draft chapter 1", drafting=True)["target"]
    assert target == {
        "path": "Chapters/Chapter 1 - The Lamp.md",
        "exists": False,
        "number": 1,
        "unit": "chapter",
    }
