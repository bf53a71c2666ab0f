"""The workspace: the only folder tools may read. `..`, absolute paths and links out are refused."""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path, PurePosixPath

from controlroom.domain.errors import WorkspaceError

STATE_DIR = ".control-room"
#: Where recipes leave their reports and proposed corrections: in the workspace, for people
#: to read, and never taken by the tools for part of the manuscript, its outline or canon.
REPORTS_DIR = "control-room-reports"
TEXT_SUFFIXES = (".md", ".markdown", ".txt")
#: The common file-system limits (NAME_MAX, PATH_MAX): longer paths are refused by name
#: here rather than failing inside a tool with the operating system's error.
MAX_NAME_BYTES, MAX_PATH_BYTES = 255, 4096


class Workspace:
    def __init__(self, root: Path) -> None:
        if not root.exists():
            raise WorkspaceError(f"workspace '{root}' does not exist")
        if not root.is_dir():
            raise WorkspaceError(f"workspace '{root}' is not a folder")
        if not os.access(root, os.R_OK | os.X_OK):
            raise WorkspaceError(f"workspace '{root}' is not readable")
        self.root = root.resolve()
        self._root_text = str(self.root)
        self._root_prefix = self._root_text.rstrip(os.sep) + os.sep
        self._texts: dict[str, str] = {}

    def snapshot(self) -> Workspace:
        """A fresh view for one run: files are read anew, then stay as first read."""
        return Workspace(self.root)

    def resolve(self, relative: str) -> Path:
        """The real path of a workspace-relative path, or a WorkspaceError naming why not."""
        if not isinstance(relative, str) or not relative.strip():
            raise WorkspaceError("empty path")
        if "\x00" in relative:
            raise WorkspaceError(f"path {relative!r} contains a NUL character")
        # Plain string operations and os.path rather than pathlib objects: every file read
        # and every existence check of every step comes through here.
        posix = relative.replace("\\", "/")
        parts = [part for part in posix.split("/") if part not in ("", ".")]
        too_long = [part for part in parts if len(part.encode("utf-8")) > MAX_NAME_BYTES]
        if too_long or len(relative.encode("utf-8")) > MAX_PATH_BYTES:
            raise WorkspaceError(
                f"path '{relative[:80]}…' is too long: at most {MAX_NAME_BYTES} bytes a name "
                f"and {MAX_PATH_BYTES} in all"
            )
        if posix.startswith("/") or os.path.isabs(relative):
            raise WorkspaceError(f"path '{relative}' is absolute; use a path inside the workspace")
        if ".." in parts:
            raise WorkspaceError(f"path '{relative}' uses '..' and could leave the workspace")
        real = os.path.realpath(os.path.join(self._root_text, *parts))
        if real != self._root_text and not real.startswith(self._root_prefix):
            raise WorkspaceError(f"path '{relative}' leads outside the workspace (through a link)")
        return Path(real)

    def exists(self, relative: str) -> bool:
        try:
            return self.resolve(relative).is_file()
        except OSError as exc:  # not a file we can reach (permissions, a loop of links)
            raise WorkspaceError(f"cannot look at '{relative}': {exc.strerror}") from exc

    def read_text(self, relative: str) -> str:
        """File text, read once per workspace object (a run sees one consistent snapshot)."""
        key = str(PurePosixPath(relative.replace("\\", "/")))
        if key not in self._texts:
            path = self.resolve(relative)
            try:
                if not path.is_file():
                    raise WorkspaceError(f"file '{relative}' does not exist in the workspace")
                self._texts[key] = path.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                raise WorkspaceError(f"cannot read '{relative}': {exc.strerror}") from exc
        return self._texts[key]

    @cached_property
    def text_files(self) -> list[str]:
        """Workspace-relative paths of every text file, sorted; links out are skipped."""
        found: list[str] = []
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in filenames:
                if name.startswith(".") or not name.lower().endswith(TEXT_SUFFIXES):
                    continue
                full = Path(dirpath) / name
                if full.is_symlink() and not full.resolve().is_relative_to(self.root):
                    continue
                found.append(full.relative_to(self.root).as_posix())
        return sorted(found)
