"""The workspace: the only folder tools may read. `..`, absolute paths and links out are refused.

The listing leaves out what is not manuscript, and says what it left out (`skipped`): hidden
files and folders, folders of installed packages or build output (`node_modules`, a Python
environment, `build`, …), what the workspace's `.gitignore` files ignore, and links to
nothing. A workspace with a `node_modules` of 75,000 files is listed in milliseconds, and a
dangling link never fails a recipe. A file over the size limit per file is refused when it
is read, before a byte of it is (`FileTooLargeError`; the layout skips it with a warning).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from controlroom.domain.errors import WorkspaceError
from controlroom.tools.ignores import (
    IGNORE_FILE,
    MAX_IGNORE_FILE_BYTES,
    Ignores,
    ignored_by,
    with_ignore_file,
)
from controlroom.tools.stopping import checkpoint

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
MAX_FILE_BYTES_VAR = "CONTROLROOM_MAX_FILE_BYTES"
#: A manuscript file is a scene, a chapter or at most a whole book (War and Peace is 3.2 MB
#: of text); a bigger one is a log, a data dump or an export, and the tools would spend
#: minutes on it.
DEFAULT_MAX_FILE_BYTES = 5_000_000
#: Folders of installed packages and build output, left out wherever they are: nobody
#: writes a novel in them, and a `node_modules` alone holds tens of thousands of files.
#: Matched by exact name; a folder holding `pyvenv.cfg` (a Python environment) too.
SKIPPED_FOLDERS = frozenset(
    "node_modules bower_components jspm_packages vendor __pycache__ site-packages venv "
    "build dist _build target".split()
)
T = TypeVar("T")

SkipReason = Literal[
    "package_folder", "ignored", "too_large", "dangling_link", "broken_link", "unreadable"
]


@dataclass(frozen=True)
class Skipped:
    """A file or folder (its path ends with `/`) the listing left out, and why."""

    path: str
    reason: SkipReason
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason, "detail": self.detail}


def megabytes(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB" if size >= 100_000 else f"{size:,} bytes"


def over_the_limit(size: int, limit: int) -> str:
    return f"{megabytes(size)}, over the {megabytes(limit)} limit per file ({MAX_FILE_BYTES_VAR})"


class FileTooLargeError(WorkspaceError):
    """A file over the size limit per file: refused before a byte of it is read."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        self.path, self.size, self.limit = path, size, limit
        self.detail = over_the_limit(size, limit)
        super().__init__(f"file '{path}' is not read: {self.detail}")


@dataclass(frozen=True)
class _Listing:
    files: list[str]
    #: Those of them that are plain files under plain folders.
    plain: frozenset[str]
    skipped: tuple[Skipped, ...]


class Workspace:
    def __init__(self, root: Path, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> None:
        if not root.exists():
            raise WorkspaceError(f"workspace '{root}' does not exist")
        if not root.is_dir():
            raise WorkspaceError(f"workspace '{root}' is not a folder")
        if not os.access(root, os.R_OK | os.X_OK):
            raise WorkspaceError(f"workspace '{root}' is not readable")
        self._open(root.resolve(), max_file_bytes)

    def _open(self, real_root: Path, max_file_bytes: int) -> None:
        self.root = real_root
        #: Files bigger than this are refused by `read_text` (and links to them not listed).
        self.max_file_bytes = max_file_bytes
        self._root_text = str(real_root)
        self._root_prefix = self._root_text.rstrip(os.sep) + os.sep
        self._texts: dict[str, str] = {}
        self._listing: _Listing | None = None
        self._derived: dict[str, Any] = {}

    def snapshot(self) -> Workspace:
        """A fresh view for one run: files are read anew, then stay as first read. The
        folder was checked when this workspace was opened; one removed since is named in
        the error of the run's first listing or read."""
        fresh = Workspace.__new__(Workspace)
        fresh._open(self.root, self.max_file_bytes)
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

    def uses_crlf(self, relative: str) -> bool:
        """The file's lines end in CRLF (`read_text` gives every file LF endings)."""
        path = self.resolve(relative)
        try:
            with path.open("rb") as handle:
                return b"\r\n" in handle.read(1 << 16)
        except OSError:
            return False

    def read_text(self, relative: str) -> str:
        """File text, read once per workspace object (a run sees one consistent snapshot).
        Every read is a checkpoint: a tool going through many files stops between two."""
        checkpoint()
        key = _key(relative)
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = self._read(relative, key)
        return text

    def _read(self, relative: str, key: str) -> str:
        fd = -1
        if self._listing is not None and key in self._listing.plain:
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
            if status.st_size > self.max_file_bytes:
                raise FileTooLargeError(relative, status.st_size, self.max_file_bytes)
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
        """Workspace-relative paths of every text file, sorted; links out are left out, and
        whatever `skipped` names."""
        return self._listed().files

    @property
    def skipped(self) -> tuple[Skipped, ...]:
        """What the listing left out besides hidden files and links out, by path."""
        return self._listed().skipped

    def _listed(self) -> _Listing:
        if self._listing is None:
            self._listing = self._list_text_files()
        return self._listing

    def _list_text_files(self) -> _Listing:
        """Hidden files and folders are left out; linked folders are not entered; folders of
        packages, what `.gitignore` files ignore and links to nothing (or to a file over the
        size limit) are left out and named in `skipped`."""
        found: list[str] = []
        plain: set[str] = set()
        skipped: list[Skipped] = []
        folders: list[tuple[str, str, Ignores]] = [("", self._root_text, ())]
        while folders:
            checkpoint()
            prefix, folder, ignores = folders.pop()
            try:
                with os.scandir(folder) as entries:
                    listed = list(entries)
            except OSError as exc:
                if not prefix:  # the workspace itself: removed or unreadable since opened
                    raise WorkspaceError(
                        f"workspace '{self.root}' cannot be read: {exc.strerror}"
                    ) from exc
                continue  # a folder inside that cannot be read holds no text we can use
            names = {entry.name for entry in listed}
            if prefix and "pyvenv.cfg" in names:
                skipped.append(Skipped(prefix, "package_folder", "a Python environment"))
                continue
            if IGNORE_FILE in names:
                text = _ignore_file_text(os.path.join(folder, IGNORE_FILE))
                ignores = ignores if text is None else with_ignore_file(ignores, prefix, text)
            for entry in listed:
                name = entry.name
                if name.startswith("."):
                    continue
                path = prefix + name
                try:
                    if entry.is_dir():
                        if entry.is_symlink():
                            continue
                        if name in SKIPPED_FOLDERS:
                            skipped.append(
                                Skipped(f"{path}/", "package_folder", "packages or build output")
                            )
                        elif ignores and (source := ignored_by(ignores, f"{path}/")):
                            skipped.append(Skipped(f"{path}/", "ignored", f"ignored by {source}"))
                        else:
                            folders.append((f"{path}/", entry.path, ignores))
                        continue
                    linked = entry.is_symlink()
                except OSError:
                    continue
                if not name.lower().endswith(TEXT_SUFFIXES):
                    continue
                if ignores and (source := ignored_by(ignores, path)):
                    skipped.append(Skipped(path, "ignored", f"ignored by {source}"))
                    continue
                if linked:
                    real = os.path.realpath(entry.path)
                    if real != self._root_text and not real.startswith(self._root_prefix):
                        continue
                    problem = self._unusable_link(entry, path)
                    if problem is not None:
                        skipped.append(problem)
                        continue
                else:
                    # A plain file's size is checked when it is read (`fstat`, no call
                    # more): most are read, and the listing is made for every run.
                    plain.add(path)
                found.append(path)
        skipped.sort(key=lambda s: s.path)
        return _Listing(sorted(found), frozenset(plain), tuple(skipped))

    def _unusable_link(self, entry: os.DirEntry[str], path: str) -> Skipped | None:
        """Why a link to a text file cannot be read as part of the manuscript, if it
        cannot: it links to nothing, or cannot be followed, or to a file over the limit."""
        try:
            size = entry.stat().st_size  # follows the link
        except FileNotFoundError:
            try:
                target = os.readlink(entry.path)
            except OSError:
                target = "?"
            return Skipped(path, "dangling_link", f"a link to '{target}', which does not exist")
        except OSError as exc:
            return Skipped(path, "broken_link", f"a link that cannot be followed: {exc.strerror}")
        if size > self.max_file_bytes:
            return Skipped(path, "too_large", over_the_limit(size, self.max_file_bytes))
        return None

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


def _ignore_file_text(path: str) -> str | None:
    """The text of the `.gitignore` at `path`; None for a link, a FIFO, an unreadable or
    oversized file, which is not read."""
    try:
        fd = os.open(path, _READ_FLAGS | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or status.st_size > MAX_IGNORE_FILE_BYTES:
            return None
        return _read_all(fd, status.st_size).decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)
