"""The workspace: the only folder tools may read. `..`, absolute paths and links out are refused."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from controlroom.domain.errors import WorkspaceError

STATE_DIR = ".control-room"
#: Where recipes leave their reports and proposed corrections: in the workspace, for people
#: to read, and never taken by the tools for part of the manuscript, its outline or canon.
REPORTS_DIR = "control-room-reports"
TEXT_SUFFIXES = (".md", ".markdown", ".txt")
#: The common file-system limits (NAME_MAX, PATH_MAX): longer paths are refused by name
#: here rather than failing inside a tool with the operating system's error.
MAX_NAME_BYTES, MAX_PATH_BYTES = 255, 4096
#: Non-blocking, so that a FIFO among the files is refused at once rather than waited on.
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
T = TypeVar("T")


class Workspace:
    def __init__(self, root: Path) -> None:
        if not root.exists():
            raise WorkspaceError(f"workspace '{root}' does not exist")
        if not root.is_dir():
            raise WorkspaceError(f"workspace '{root}' is not a folder")
        if not os.access(root, os.R_OK | os.X_OK):
            raise WorkspaceError(f"workspace '{root}' is not readable")
        self._open(root.resolve())

    def _open(self, real_root: Path) -> None:
        self.root = real_root
        self._root_text = str(real_root)
        self._root_prefix = self._root_text.rstrip(os.sep) + os.sep
        self._texts: dict[str, str] = {}
        self._listing: tuple[list[str], frozenset[str]] | None = None
        self._derived: dict[str, Any] = {}

    def snapshot(self) -> Workspace:
        """A fresh view for one run: files are read anew, then stay as first read. The
        folder was checked when this workspace was opened; one removed since is named in
        the error of the run's first listing or read."""
        fresh = Workspace.__new__(Workspace)
        fresh._open(self.root)
        return fresh

    def resolve(self, relative: str) -> Path:
        """The real path of a workspace-relative path, or a WorkspaceError naming why not."""
        return Path(self._real(relative))

    def _real(self, relative: str) -> str:
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
        return real

    def exists(self, relative: str) -> bool:
        try:
            return self.resolve(relative).is_file()
        except OSError as exc:  # not a file we can reach (permissions, a loop of links)
            raise WorkspaceError(f"cannot look at '{relative}': {exc.strerror}") from exc

    def read_text(self, relative: str) -> str:
        """File text, read once per workspace object (a run sees one consistent snapshot)."""
        key = _key(relative)
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = self._read(relative, key)
        return text

    def _read(self, relative: str, key: str) -> str:
        fd = -1
        if self._listing is not None and key in self._listing[1]:
            # Seen by the listing as a plain file under plain folders: its real path is
            # its joined path, no `realpath` needed (one `lstat` per part, for every file
            # of every run). Opened without following a final link, so a file turned into
            # a link since the listing takes the checked way below.
            try:
                fd = os.open(self._root_prefix + key, _READ_FLAGS | os.O_NOFOLLOW)
            except OSError:
                fd = -1
        try:
            if fd < 0:
                fd = os.open(self._real(relative), _READ_FLAGS)
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode):
                raise WorkspaceError(f"file '{relative}' does not exist in the workspace")
            data = _read_all(fd, status.st_size)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise WorkspaceError(f"file '{relative}' does not exist in the workspace") from None
        except OSError as exc:
            raise WorkspaceError(f"cannot read '{relative}': {exc.strerror}") from exc
        finally:
            if fd >= 0:
                os.close(fd)
        # As `Path.read_text` reads: UTF-8 with bad bytes replaced, universal newlines
        # (CRLF and CR become LF).
        text = data.decode("utf-8", errors="replace")
        return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text

    @property
    def text_files(self) -> list[str]:
        """Workspace-relative paths of every text file, sorted; links out are skipped."""
        if self._listing is None:
            self._listing = self._list_text_files()
        return self._listing[0]

    def _list_text_files(self) -> tuple[list[str], frozenset[str]]:
        """The text files, and those of them that are plain files under plain folders.
        Hidden files and folders are left out; linked folders are not entered."""
        found: list[str] = []
        plain: set[str] = set()
        folders = [("", self._root_text)]
        while folders:
            prefix, folder = folders.pop()
            try:
                with os.scandir(folder) as entries:
                    listed = list(entries)
            except OSError as exc:
                if not prefix:  # the workspace itself: removed or unreadable since opened
                    raise WorkspaceError(
                        f"workspace '{self.root}' cannot be read: {exc.strerror}"
                    ) from exc
                continue  # a folder inside that cannot be read holds no text we can use
            for entry in listed:
                name = entry.name
                if name.startswith("."):
                    continue
                try:
                    if entry.is_dir():
                        if not entry.is_symlink():
                            folders.append((f"{prefix}{name}/", entry.path))
                        continue
                    linked = entry.is_symlink()
                except OSError:
                    continue
                if not name.lower().endswith(TEXT_SUFFIXES):
                    continue
                if linked:
                    real = os.path.realpath(entry.path)
                    if real != self._root_text and not real.startswith(self._root_prefix):
                        continue
                else:
                    plain.add(prefix + name)
                found.append(prefix + name)
        return sorted(found), frozenset(plain)

    def derived(self, name: str, compute: Callable[[Workspace], T]) -> T:
        """What `compute` makes of this workspace object's files, made once per object (as
        its texts are read once): two tools of one run asking for the layout share it."""
        if name not in self._derived:
            self._derived[name] = compute(self)
        value: T = self._derived[name]
        return value


def _read_all(fd: int, size: int) -> bytes:
    """The file's bytes: one read when it holds what `fstat` said (what it held then, as
    if read a moment earlier), else reads to the end (it grew, or a file system gave a
    short read). Each read lets go of the interpreter lock, and while many runs read at
    once each taking it back is a wake-up; `open()` asks the size again and reads once
    more to find the end, twice the system calls."""
    first = os.read(fd, size + 1)
    if len(first) == size:
        return first
    chunks = [first]
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def _key(relative: str) -> str:
    """The cache key of a path: separators normalised, empty and `.` parts dropped (a
    leading `/` kept, so an absolute path never meets a relative one's text)."""
    posix = relative.replace("\\", "/")
    parts = [part for part in posix.split("/") if part not in ("", ".")]
    return ("/" if posix.startswith("/") else "") + "/".join(parts)
