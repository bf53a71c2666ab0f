"""Phase A tools: real analysis of the workspace, confined to it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from controlroom.domain.errors import ToolError, UnknownToolError, WorkspaceError
from controlroom.tools.base import ToolRegistry, load_plugins
from controlroom.tools.workspace import Workspace

REGISTRY = ToolRegistry.default(with_plugins=False)
SCENES = [
    "Story/Scenes/SCN-01-the-arrival.md",
    "Story/Scenes/SCN-02-the-ambush.md",
    "Story/Scenes/SCN-03-the-archive.md",
]
CANON = [
    "Compendium/Characters/CHAR-kael.md",
    "Compendium/Characters/CHAR-mira.md",
    "Compendium/Characters/CHAR-orrin.md",
    "Compendium/Locations/LOC-greywatch.md",
]


def run(ws: Path, tool: str, **args: object) -> dict[str, object]:
    return REGISTRY.execute(tool, dict(args), Workspace(ws)).output


def test_the_eight_tools_of_the_recipe_map_are_registered() -> None:
    assert REGISTRY.names() == sorted(
        [
            "file_locator",
            "outline_analyzer",
            "canon_checker",
            "consistency_checker",
            "prose_analyzer",
            "stakes_mapper",
            "reader_experience_simulator",
            "scene_draft_validator",
            "file_manifest",
        ]
    )


def test_file_locator_classifies_and_ranks_the_scene_asked_for(workspace: Path) -> None:
    out = run(workspace, "file_locator", search_criteria="validate scene 2 ambush")
    assert out["outline"] == "Story/SCN-outline.md"
    assert out["canon"] == CANON
    assert out["scenes"][0] == "Story/Scenes/SCN-02-the-ambush.md"  # type: ignore[index]
    assert out["scenes_in_order"] == SCENES


def test_outline_analyzer_finds_scenes_beats_and_the_focus(workspace: Path) -> None:
    out = run(
        workspace, "outline_analyzer", outline_path="Story/SCN-outline.md", focus="Draft scene 4"
    )
    assert out["scene_count"] == 4 and out["beat_count"] == 12
    focus = out["focus"]
    assert isinstance(focus, dict) and focus["title"] == "The Reckoning"
    assert focus["characters"] == ["Kael", "Mira", "Orrin"]


def test_canon_checker_finds_the_planted_eye_colour_contradiction(workspace: Path) -> None:
    out = run(workspace, "canon_checker", canon_paths=CANON, scene_paths=SCENES)
    assert out["pass"] is False
    assert out["conflicts"] == [
        {
            "entity": "Kael",
            "attribute": "eyes",
            "canon_value": "grey",
            "found": "green",
            "path": "Story/Scenes/SCN-02-the-ambush.md",
            "line": 3,
            "sentence": "His green eyes narrowed at the cut marks on the trunk.",
            "quote": "His green eyes",
            "against": "canon",  # not another passage of the text
        }
    ]


def test_canon_checker_passes_a_scene_that_agrees_with_canon(workspace: Path) -> None:
    out = run(workspace, "canon_checker", canon_paths=CANON, scene_path=SCENES[0])
    assert out["pass"] is True and out["conflicts"] == []


def test_consistency_checker_also_catches_misspelled_names(workspace: Path) -> None:
    scene = workspace / SCENES[2]
    scene.write_text(scene.read_text() + "\nLater, Kale returned to the archive alone.\n")
    out = run(workspace, "consistency_checker", scene_paths=SCENES, canon_paths=CANON)
    kinds = sorted(f["type"] for f in out["findings"])  # type: ignore[attr-defined]
    assert kinds == ["canon_conflict", "name_variant"]
    assert out["pass"] is False


def test_prose_analyzer_measures_each_file(workspace: Path) -> None:
    out = run(workspace, "prose_analyzer", paths=SCENES[:2])
    files = out["files"]
    assert isinstance(files, dict) and set(files) == set(SCENES[:2])
    ambush = files[SCENES[1]]
    assert ambush["words"] > 150 and "slowly" in ambush["adverbs"]


def test_stakes_mapper_tracks_threads_across_scenes(workspace: Path) -> None:
    out = run(workspace, "stakes_mapper", paths=SCENES)
    threads = {t["term"]: t for t in out["threads"]}  # type: ignore[attr-defined]
    assert threads["Orrin"]["mentions"] == SCENES[1:]
    assert threads["Orrin"]["paid_off"] is True
    assert out["stakes"]


def test_reader_simulator_scores_tension_and_new_names(workspace: Path) -> None:
    out = run(workspace, "reader_experience_simulator", paths=SCENES)
    curve = out["curve"]
    assert isinstance(curve, list) and len(curve) == 3
    assert "Kael" in curve[0]["new_names"] and "Kael" not in curve[1]["new_names"]


def test_scene_draft_validator_checks_beats_against_the_outline(workspace: Path) -> None:
    out = run(
        workspace,
        "scene_draft_validator",
        scene_path=SCENES[1],
        outline_path="Story/SCN-outline.md",
    )
    checks = {c["name"]: c for c in out["checks"]}  # type: ignore[attr-defined]
    assert checks["covers_outline_beats"]["passed"] is True
    assert out["pass"] is True


def test_tools_are_deterministic(workspace: Path) -> None:
    first = run(workspace, "canon_checker", canon_paths=CANON, scene_paths=SCENES)
    assert run(workspace, "canon_checker", canon_paths=CANON, scene_paths=SCENES) == first


@pytest.mark.parametrize("path", ["../outside.md", "/etc/passwd", "Story/../../x.md"])
def test_paths_that_leave_the_workspace_are_refused(workspace: Path, path: str) -> None:
    with pytest.raises(WorkspaceError):
        run(workspace, "scene_draft_validator", scene_path=path)


def test_a_symlink_leading_outside_is_refused_and_not_listed(
    workspace: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n")
    os.symlink(secret, workspace / "Story" / "leak.md")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        run(workspace, "scene_draft_validator", scene_path="Story/leak.md")
    assert "Story/leak.md" not in Workspace(workspace).text_files


def test_bad_arguments_name_the_argument(workspace: Path) -> None:
    with pytest.raises(ToolError, match="arg 'max_results'"):
        run(workspace, "file_locator", max_results="many")
    with pytest.raises(ToolError, match="arg 'bogus'"):
        run(workspace, "file_locator", bogus=1)
    with pytest.raises(UnknownToolError):
        run(workspace, "crystal_ball")


def test_a_missing_workspace_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="does not exist"):
        Workspace(tmp_path / "nowhere")


def test_third_party_tools_plug_in_through_entry_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site"
    (package / "wordcount_tool-1.0.dist-info").mkdir(parents=True)
    (package / "wordcount_tool-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: wordcount-tool\nVersion: 1.0\n"
    )
    (package / "wordcount_tool-1.0.dist-info" / "entry_points.txt").write_text(
        "[controlroom.tools]\nword_count = wordcount_tool:WordCount\n"
    )
    (package / "wordcount_tool.py").write_text(
        "from typing import ClassVar\n"
        "from tools.base import ToolArgs, ToolResult\n"
        "class Args(ToolArgs):\n    path: str\n"
        "class WordCount:\n"
        "    name: ClassVar[str] = 'word_count'\n"
        "    description: ClassVar[str] = 'count words'\n"
        "    args_model = Args\n"
        "    def run(self, args, workspace):\n"
        "        n = len(workspace.read_text(args.path).split())\n"
        "        return ToolResult({'words': n}, f'{n} words')\n"
    )
    monkeypatch.syspath_prepend(str(package))
    monkeypatch.delitem(sys.modules, "wordcount_tool", raising=False)
    assert [t.name for t in load_plugins()] == ["word_count"]
    registry = ToolRegistry.default()
    assert "word_count" in registry.names()


def test_what_a_text_states_is_remembered_per_text_and_per_cast() -> None:
    """The memo of statements is keyed by the text and by what the cast says: the same
    text read with another cast, or a changed text, is read anew."""
    from controlroom.tools.canon import cast_from_names
    from controlroom.tools.facts import statements_in

    text = "Mara had grey eyes. Tom was tall."
    mara = cast_from_names({"Mara": ["Mara"]})
    both = cast_from_names({"Mara": ["Mara"], "Tom": ["Tom"]})
    first = statements_in(text, mara)
    assert [(s.entity, s.kind.attribute) for s in first] == [("Mara", "eyes")]
    first.clear()  # the caller's list is its own
    assert len(statements_in(text, mara)) == 1
    assert {(s.entity, s.kind.attribute) for s in statements_in(text, both)} == {
        ("Mara", "eyes"),
        ("Tom", "height"),
    }
    assert [s.words for s in statements_in(text.replace("grey", "green"), mara)] == ["green"]
    # An equal cast built again shares the memo's entry.
    assert cast_from_names({"Mara": ["Mara"]}).key == mara.key
