"""The workspace's `.gitignore` files, read as git reads them (pathspec's `GitIgnoreSpec`).

Each folder's `.gitignore` speaks for the paths under it, relative to it; for a path, the
deepest file with a pattern that matches it decides, and a `!pattern` there keeps the path.
An ignored folder is not entered, so nothing under it comes back (as in git).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

IGNORE_FILE = ".gitignore"
#: A `.gitignore` bigger than this is not one a person wrote; it is not read.
MAX_IGNORE_FILE_BYTES = 1024 * 1024

#: The `.gitignore` files in force in a folder: (their folder's prefix, their patterns),
#: the workspace's own first.
Ignores = tuple[tuple[str, "GitIgnoreSpec"], ...]


def with_ignore_file(ignores: Ignores, prefix: str, text: str) -> Ignores:
    """`ignores` and the patterns of the `.gitignore` text of the folder at `prefix`."""
    spec = _spec(text.splitlines())
    in_force = any(pattern.include is not None for pattern in spec.patterns)
    return (*ignores, (prefix, spec)) if in_force else ignores


def ignored_by(ignores: Ignores, path: str) -> str | None:
    """The `.gitignore` that ignores `path` (a folder's ends with `/`), if one does."""
    for base, spec in reversed(ignores):
        verdict = spec.check_file(path[len(base) :]).include
        if verdict is not None:
            return f"{base}{IGNORE_FILE}" if verdict else None
    return None


def _spec(lines: list[str]) -> GitIgnoreSpec:
    """A line git would not understand (a lone `!`) is passed over, as git passes over
    it, rather than losing the whole file."""
    from pathspec import GitIgnoreSpec  # only workspaces with a .gitignore pay the import

    try:
        return GitIgnoreSpec.from_lines(lines)
    except ValueError:
        return GitIgnoreSpec.from_lines([line for line in lines if _understood(line)])


def _understood(line: str) -> bool:
    from pathspec import GitIgnoreSpec

    try:
        GitIgnoreSpec.from_lines([line])
    except ValueError:
        return False
    return True
