"""Files a process keeps for the next one under the user's cache folder
(`$XDG_CACHE_HOME/controlroom`, else `~/.cache/controlroom`): work that is slow to redo and
never wrong to redo (a word list split into sets, the router's trained classifier). A cache
that cannot be written is skipped: the next process does the work again."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO


def cache_folder(kind: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "controlroom" / kind


def write_whole(path: Path, write: Callable[[IO[bytes]], object]) -> bool:
    """`write` into a new file beside `path`, then renamed over it: a process reading `path`
    never sees half a file. False when it could not be written (nothing is left behind)."""
    temporary: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False, suffix=".tmp") as out:
            temporary = out.name
            write(out)
        os.replace(temporary, path)
    except OSError:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
        return False
    return True
