"""The scene validator on a first-person novel, and every unit of a range reported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controlroom.tools.base import ToolRegistry
from controlroom.tools.workspace import Workspace

# Moby-Dick (1851, public domain), narrated by Ishmael: the narration says "I" throughout,
# and "he" and "his" of everyone else. Hard-wrapped as published.
MOBY = [
    """# Chapter 1. Loomings

Call me Ishmael. Some years ago--never mind how long precisely--having
little or no money in my purse, and nothing particular to interest me on
shore, I thought I would sail about a little and see the watery part of
the world. It is a way I have of driving off the spleen and regulating the
circulation. Whenever I find myself growing grim about the mouth, then, I
account it high time to get to sea as soon as I can. He who will may take
his pistol and ball; I quietly take to the ship.
""",
    """# Chapter 2. The Carpet-Bag

I stuffed a shirt or two into my old carpet-bag, tucked it under my arm,
and started for Cape Horn and the Pacific. Quitting the good city of old
Manhatto, I duly arrived in New Bedford. It was a Saturday night in
December. Much was I disappointed upon learning that the little packet for
Nantucket had already sailed, and that no way of reaching that place would
offer, till the following Monday. The landlord told me his house was full;
he said I might share a harpooneer's blanket, if I had no objection.
""",
    """# Chapter 3. The Spouter-Inn

Entering that gable-ended Spouter-Inn, I found myself in a wide, low,
straggling entry with old-fashioned wainscots. On one side hung a very
large oil-painting so thoroughly besmoked that I could hardly make out what
it was. The landlord came up and told me that the harpooneer was a dark
complexioned chap who never ate dumplings; he said the man was out selling
his heads, and I wondered what he could mean by it, and I asked him.
""",
]
# Third-person narration dropped into Ishmael's book: a point of view that does not fit.
THIRD = """# Chapter 4. The Counterpane

Upon waking next morning about daylight, Queequeg lay with his arm thrown
over the counterpane in the most loving and affectionate manner. He rose,
dressed in his own fashion, and went about his toilette while the landlord
watched him from the door; she, the landlady, said nothing of it to him.
"""


@pytest.fixture
def moby(tmp_path: Path) -> Path:
    root = tmp_path / "moby"
    (root / "Chapters").mkdir(parents=True)
    for number, text in enumerate(MOBY, start=1):
        (root / "Chapters" / f"Chapter {number}.md").write_bytes(
            text.replace("\n", "\r\n").encode()
        )
    return root


def run(root: Path, tool: str, **args: Any) -> dict[str, Any]:
    tools = ToolRegistry.default(with_plugins=False)
    return dict(tools.execute(tool, args, Workspace(root)).output)


def pov(output: dict[str, Any]) -> bool:
    return bool(next(c for c in output["checks"] if c["name"] == "consistent_pov")["passed"])


def test_a_first_person_chapter_passes_in_a_first_person_book(moby: Path) -> None:
    output = run(moby, "scene_draft_validator", scene_path="Chapters/Chapter 2.md", min_words=50)
    assert output["point_of_view"] == "first"
    assert pov(output), output["checks"]


def test_a_third_person_chapter_fails_in_a_first_person_book(moby: Path) -> None:
    (moby / "Chapters" / "Chapter 4.md").write_text(THIRD)
    output = run(moby, "scene_draft_validator", scene_path="Chapters/Chapter 4.md", min_words=50)
    assert not pov(output) and not output["pass"]


def test_every_unit_of_a_range_is_validated_and_reported(moby: Path) -> None:
    found = run(moby, "file_locator", scope={"chapter_numbers": [1, 2, 3]}, require=["units"])
    assert found["scoped_units"] == [f"Chapters/Chapter {n}.md" for n in (1, 2, 3)]
    output = run(moby, "scene_draft_validator", scene_paths=found["scoped_units"], min_words=1000)
    assert [unit["scene_path"] for unit in output["units"]] == found["scoped_units"]
    assert [c["name"] for c in output["checks"]] == found["scoped_units"]
    assert not output["pass"]  # every chapter is shorter than 1000 words, and each says so
    assert all("min_length" in c["detail"] for c in output["checks"])
    unscoped = run(moby, "file_locator", search_criteria="validate the chapter")
    assert unscoped["scoped_units"] == []
