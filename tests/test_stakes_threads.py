"""The foreshadowing audit's threads: names a writer plants, not any capitalised word."""

from __future__ import annotations

from pathlib import Path

from controlroom.tools.base import ToolRegistry
from controlroom.tools.workspace import Workspace

CHAPTERS = [
    """# Chapter 1

I'll tell you of the Tinker. English was not his tongue, and the Tinker spoke it badly.
Perhaps the Tinker knew more than he said. English travellers laughed at the Tinker.
I'll say no more. The Tinker left in June. Perhaps he will come back; perhaps not.
""",
    """# Chapter 2

It rained all week. Nobody spoke of him. We were English, after all, and I'll own it.
""",
]


def test_contractions_languages_and_sentence_openers_are_not_planted_threads(
    tmp_path: Path,
) -> None:
    for number, text in enumerate(CHAPTERS, start=1):
        (tmp_path / f"CH-0{number}.md").write_text(text)
    output = (
        ToolRegistry.default(with_plugins=False)
        .execute("stakes_mapper", {"paths": ["CH-01.md", "CH-02.md"]}, Workspace(tmp_path))
        .output
    )
    terms = {thread["term"] for thread in output["threads"]}
    assert "Tinker" in terms
    assert not terms & {"I'll", "English", "Perhaps", "June"}
    assert output["unresolved"] == ["Tinker"]  # planted in chapter 1, never returned
    reader = (
        ToolRegistry.default(with_plugins=False)
        .execute(
            "reader_experience_simulator", {"paths": ["CH-01.md", "CH-02.md"]}, Workspace(tmp_path)
        )
        .output
    )
    assert reader["curve"][0]["new_names"] == ["Tinker"]
