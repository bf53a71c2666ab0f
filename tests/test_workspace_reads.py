"""How tools read the workspace: once per run's snapshot, the same text a plain read gives,
and never through a link out, a FIFO or a folder, however the file changed since it was
listed."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from controlroom.domain.errors import WorkspaceError
from controlroom.tools.layout import detect_layout
from controlroom.tools.workspace import Workspace


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "book"
    (root / "Chapters").mkdir(parents=True)
    (root / "Chapters" / "Chapter 1.md").write_text("# One\n\nIt began.\n")
    (root / "Chapters" / "Chapter 2.md").write_text("# Two\n\nIt went on.\n")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "notes.md").write_text("not part of the book\n")
    (root / ".draft.md").write_text("hidden too\n")
    return root


def test_the_listing_is_the_sorted_visible_text_files(folder: Path) -> None:
    (folder / "Chapters" / "image.png").write_bytes(b"\x89PNG")
    (folder / "outline.txt").write_text("1. One\n")
    assert Workspace(folder).text_files == [
        "Chapters/Chapter 1.md",
        "Chapters/Chapter 2.md",
        "outline.txt",
    ]


def test_a_linked_folder_is_not_entered_and_a_link_inside_is_kept(
    folder: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.md").write_text("secret\n")
    os.symlink(outside, folder / "Linked")
    os.symlink(folder / "Chapters" / "Chapter 1.md", folder / "alias.md")
    workspace = Workspace(folder)
    assert "Linked/secret.md" not in workspace.text_files
    assert "alias.md" in workspace.text_files
    assert workspace.read_text("alias.md") == "# One\n\nIt began.\n"


def test_a_file_turned_into_a_link_out_after_the_listing_is_refused(
    folder: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("secret\n")
    workspace = Workspace(folder)
    assert "Chapters/Chapter 2.md" in workspace.text_files
    target = folder / "Chapters" / "Chapter 2.md"
    target.unlink()
    os.symlink(secret, target)
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        workspace.read_text("Chapters/Chapter 2.md")


def test_a_fifo_is_refused_at_once_not_waited_on(folder: Path) -> None:
    os.mkfifo(folder / "Chapters" / "Chapter 3.md")
    workspace = Workspace(folder)
    assert "Chapters/Chapter 3.md" in workspace.text_files
    outcome: list[BaseException | str] = []

    def read() -> None:
        try:
            outcome.append(workspace.read_text("Chapters/Chapter 3.md"))
        except BaseException as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert isinstance(outcome[0], WorkspaceError)
    assert "does not exist" in str(outcome[0])


@pytest.mark.parametrize("path", ["Chapters", "Chapters/none.md", "nowhere/x.md", ""])
def test_a_folder_or_a_missing_file_is_a_clear_error(folder: Path, path: str) -> None:
    workspace = Workspace(folder)
    workspace.text_files  # noqa: B018 - listed first, so the quick way is tried
    with pytest.raises(WorkspaceError):
        workspace.read_text(path)


def test_line_endings_are_read_as_a_plain_text_read_gives_them(folder: Path) -> None:
    (folder / "Chapters" / "Chapter 3.md").write_bytes(b"# Three\r\n\r\nCR\rLF\nbad \xff\n")
    workspace = Workspace(folder)
    workspace.text_files  # noqa: B018
    expected = (folder / "Chapters" / "Chapter 3.md").read_text(encoding="utf-8", errors="replace")
    assert workspace.read_text("Chapters/Chapter 3.md") == expected
    assert workspace.read_text("Chapters//./Chapter 3.md") == expected


def test_an_absolute_path_never_meets_a_relative_ones_text(folder: Path) -> None:
    workspace = Workspace(folder)
    workspace.read_text("Chapters/Chapter 1.md")
    with pytest.raises(WorkspaceError, match="absolute"):
        workspace.read_text("/Chapters/Chapter 1.md")


def test_a_snapshot_keeps_its_layout_and_a_new_one_sees_the_change(folder: Path) -> None:
    workspace = Workspace(folder)
    run = workspace.snapshot()
    first = detect_layout(run)
    assert [u.number for u in first.units] == [1, 2]
    (folder / "Chapters" / "Chapter 3.md").write_text("# Three\n")
    assert detect_layout(run) is first  # one run, one layout
    assert [u.number for u in detect_layout(workspace.snapshot()).units] == [1, 2, 3]


def test_a_workspace_removed_after_it_was_opened_is_named_in_the_error(folder: Path) -> None:
    workspace = Workspace(folder)
    shutil.rmtree(folder)
    with pytest.raises(WorkspaceError, match="cannot be read"):
        detect_layout(workspace.snapshot())


def test_every_example_file_reads_as_a_plain_text_read_gives_it() -> None:
    for example in ("novel", "dorian"):
        root = Path(__file__).resolve().parents[1] / "examples" / example
        workspace = Workspace(root)
        assert workspace.text_files
        for relative in workspace.text_files:
            expected = (root / relative).read_text(encoding="utf-8", errors="replace")
            assert workspace.read_text(relative) == expected, relative


def test_short_reads_are_read_to_the_end(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Some file systems (FUSE, network mounts) return fewer bytes than asked before the end."""
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: real_read(fd, min(n, 3)))
    assert Workspace(folder).read_text("Chapters/Chapter 2.md") == "# Two\n\nIt went on.\n"


def test_a_file_grown_since_its_size_was_taken_is_read_whole(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = folder / "Chapters" / "Chapter 2.md"
    real_fstat = os.fstat

    def fstat_then_grow(fd: int) -> os.stat_result:
        status = real_fstat(fd)
        with path.open("a") as file:
            file.write("And on.\n")
        return status

    monkeypatch.setattr(os, "fstat", fstat_then_grow)
    assert Workspace(folder).read_text("Chapters/Chapter 2.md").endswith("It went on.\nAnd on.\n")
