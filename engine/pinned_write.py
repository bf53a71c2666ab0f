"""Writing one workspace file through folders held open, so no link or swap can redirect it.

A path checked and then written later is a race: a folder swapped for a link in between
sends the write anywhere (the check-then-write race), and a name checked as text says
nothing of where a link in the workspace leads (`reports/x.md -> ../.control-room/events.sqlite`
once replaced the whole event log). Here every folder of the path is opened in turn
relative to the one before (`openat`), none followed if it is a link (`O_NOFOLLOW`), and each
is compared by device and inode with the folders Control Room keeps its state in. The file
itself is read, created and renamed relative to its folder's descriptor, and a link in its
place is refused rather than followed. What the descriptors point at cannot be changed by
renaming paths afterwards, so what is checked is what is written.

The temporary file has a name fixed by the content it will hold, so a write killed half-way
leaves a file that the resumed step finds, removes and writes again (never a second stray).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from controlroom.domain.errors import FileWriteConflictError, WorkspaceError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
#: A new file's mode before the umask, as any editor creates one.
_NEW_FILE_MODE = 0o666
#: How many names of a folder are looked at to learn its files' usual mode.
_MODE_SAMPLE = 64
_NAME_MAX = 255


@dataclass(frozen=True)
class Protected:
    """What no write may touch: folders (by device and inode, whatever path or link leads
    there) and single files (the event store, when it lives in the workspace)."""

    folders: frozenset[tuple[int, int]]
    files: frozenset[tuple[int, int, str]]

    @classmethod
    def of(cls, folders: Iterable[Path], files: Iterable[Path]) -> Protected:
        folder_ids: set[tuple[int, int]] = set()
        for folder in folders:
            with contextlib.suppress(OSError):
                status = os.stat(folder)
                folder_ids.add((status.st_dev, status.st_ino))
        file_ids: set[tuple[int, int, str]] = set()
        for file in files:
            with contextlib.suppress(OSError):
                parent = os.stat(file.parent)
                for name in (file.name, *(file.name + s for s in ("-wal", "-shm", "-journal"))):
                    file_ids.add((parent.st_dev, parent.st_ino, name))
        return cls(frozenset(folder_ids), frozenset(file_ids))


def _error(relative: str, exc: OSError, doing: str) -> WorkspaceError:
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ENOSPC:
        reason = "the disk is full"
    return WorkspaceError(f"cannot {doing} '{relative}': {reason}")


class PinnedFile:
    """A workspace file whose folder is held open: read, check and replace it there."""

    def __init__(self, root: Path, parts: list[str], protected: Protected, relative: str):
        self.relative = relative
        self.name = parts[-1]
        self._root = root
        self._folders = parts[:-1]
        self._protected = protected
        self._folder = -1
        #: False while a folder of the path does not exist yet: there is no file to read,
        #: and the folders are made when the file is written.
        self._complete = False
        self._open_folder(create=False)

    # -- the folder ---------------------------------------------------------------------

    def _open_folder(self, *, create: bool) -> None:
        try:
            fd = os.open(self._root, _DIR_FLAGS & ~os.O_NOFOLLOW)  # resolved when opened
        except OSError as exc:
            raise _error(self.relative, exc, "open the workspace to write") from exc
        complete = True
        try:
            self._check_folder(fd)
            for name in self._folders:
                child = self._enter(fd, name, create=create)
                if child < 0:
                    complete = False
                    break
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        self.close()
        self._folder, self._complete = fd, complete

    def _enter(self, parent: int, name: str, *, create: bool) -> int:
        """The folder `name` inside `parent`, opened without following a link; -1 when it
        does not exist and is not to be made."""
        try:
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=parent)
            except FileNotFoundError:
                if not create:
                    return -1
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, dir_fd=parent)
                child = os.open(name, _DIR_FLAGS, dir_fd=parent)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise WorkspaceError(
                    f"path '{self.relative}' passes through '{name}', which is a link or a "
                    "file, not a folder: Control Room writes only through plain folders"
                ) from None
            raise _error(self.relative, exc, "open the folder of") from exc
        try:
            self._check_folder(child)
        except BaseException:
            os.close(child)
            raise
        return child

    def _check_folder(self, fd: int) -> None:
        status = os.fstat(fd)
        if (status.st_dev, status.st_ino) in self._protected.folders:
            raise WorkspaceError(
                f"path '{self.relative}' leads into Control Room's own state folder: refused"
            )

    def close(self) -> None:
        if self._folder >= 0:
            os.close(self._folder)
            self._folder = -1

    def __enter__(self) -> PinnedFile:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- the file -----------------------------------------------------------------------

    def _status(self) -> os.stat_result | None:
        if not self._complete:
            return None
        try:
            return os.stat(self.name, dir_fd=self._folder, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _error(self.relative, exc, "look at") from exc

    def check_target(self) -> os.stat_result | None:
        """The target's status (None: no file yet); a link, a folder, a device or the event
        store in its place is refused."""
        folder = os.fstat(self._folder)
        if self._complete and (folder.st_dev, folder.st_ino, self.name) in self._protected.files:
            raise WorkspaceError(f"path '{self.relative}' is Control Room's event store: refused")
        status = self._status()
        if status is None:
            return None
        if stat.S_ISLNK(status.st_mode):
            raise WorkspaceError(
                f"path '{self.relative}' is a link: Control Room writes only plain files, "
                "never through a link"
            )
        if stat.S_ISDIR(status.st_mode):
            raise WorkspaceError(f"path '{self.relative}' is a folder, not a file")
        if not stat.S_ISREG(status.st_mode):
            raise WorkspaceError(f"path '{self.relative}' is not a regular file")
        return status

    def sha256(self) -> str | None:
        """The file's hash, None when there is no file."""
        if self.check_target() is None:
            return None
        try:
            fd = os.open(self.name, _READ_FLAGS, dir_fd=self._folder)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _error(self.relative, exc, "read") from exc
        digest = hashlib.sha256()
        try:
            while chunk := os.read(fd, 1 << 20):
                digest.update(chunk)
        except OSError as exc:
            raise _error(self.relative, exc, "read") from exc
        finally:
            os.close(fd)
        return digest.hexdigest()

    def writable(self) -> bool:
        if self.check_target() is None:
            return True
        return os.access(self.name, os.W_OK, dir_fd=self._folder, follow_symlinks=False)

    def temp_name(self, intended: str) -> str:
        """The temporary file's name: fixed by the target and the content (see module doc)."""
        name = f".{self.name}.{intended[:12]}.tmp"
        if len(name.encode("utf-8")) > _NAME_MAX:
            short = hashlib.sha256(self.name.encode("utf-8")).hexdigest()[:16]
            name = f".{short}.{intended[:12]}.tmp"
        return name

    def remove_temp(self, intended: str) -> None:
        """Remove what a killed write of this content left behind, if anything."""
        if not self._complete:
            return
        try:
            os.unlink(self.temp_name(intended), dir_fd=self._folder)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise _error(self.relative, exc, "remove the temporary file beside") from exc

    def _usual_mode(self) -> int | None:
        """The read/write bits most regular files in the folder share; None when it has
        none. Execute bits are never copied: a manuscript file is not a program."""
        modes: dict[int, int] = {}
        for name in sorted(os.listdir(self._folder))[:_MODE_SAMPLE]:
            if name == self.name or name.startswith("."):
                continue
            try:
                found = os.stat(name, dir_fd=self._folder, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(found.st_mode):
                mode = stat.S_IMODE(found.st_mode) & 0o666
                modes[mode] = modes.get(mode, 0) + 1
        return max(modes, key=lambda m: (modes[m], m)) if modes else None

    def replace_with(self, data: bytes, before: str | None) -> None:
        """Write `data` to a temporary file in the folder, sync it, check the target still
        holds what was read (`before`), rename it over. The folders are created as needed
        (again without following links) and the file keeps its mode; a new one takes the
        mode of the files beside it (a draft beside 0644 chapters is 0644 even under a
        0077 umask), or the umask's in an empty folder."""
        intended = hashlib.sha256(data).hexdigest()
        if not self._complete:
            self._open_folder(create=True)
        existing = self.check_target()
        temp = self.temp_name(intended)
        self.remove_temp(intended)
        try:
            fd = os.open(temp, _NEW_FLAGS, _NEW_FILE_MODE, dir_fd=self._folder)
        except OSError as exc:
            raise _error(self.relative, exc, "write") from exc
        try:
            try:
                mode = (
                    stat.S_IMODE(existing.st_mode) if existing is not None else self._usual_mode()
                )
                if mode is not None:
                    os.fchmod(fd, mode)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            now = self.sha256()
            if now != before:
                raise FileWriteConflictError(
                    self.relative,
                    now,
                    {"as the run read it": before},
                    "the file was changed by someone else after the run read it",
                )
            os.replace(temp, self.name, src_dir_fd=self._folder, dst_dir_fd=self._folder)
            self._check_still_in_place(intended)
        except OSError as exc:
            self._drop(temp)
            raise _error(self.relative, exc, "write") from exc
        except BaseException:
            self._drop(temp)
            raise
        with contextlib.suppress(OSError):  # the rename is durable once its folder is synced
            os.fsync(self._folder)

    def _check_still_in_place(self, intended: str) -> None:
        """The folder written to is still the one at the path: a folder moved out of the
        workspace while it was held open would otherwise keep the file outside. If it
        moved, the file just written there is taken back and the step fails."""
        held = os.fstat(self._folder)
        now: os.stat_result | None = None
        try:
            here = PinnedFile(self._root, [*self._folders, self.name], self._protected, "")
        except WorkspaceError:
            pass  # the path now passes through a link: not where the file was written
        else:
            try:
                now = os.fstat(here._folder) if here._complete else None
            finally:
                here.close()
        if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
            return
        with contextlib.suppress(OSError):
            os.unlink(self.name, dir_fd=self._folder)
        raise WorkspaceError(
            f"the folder of '{self.relative}' was moved or replaced while the file was "
            "written: the write was taken back (nothing is left outside the workspace)"
        )

    def _drop(self, temp: str) -> None:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=self._folder)
