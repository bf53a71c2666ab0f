"""Whether a workspace's own recipe files were checked, and found sound, as they are now.

Every reading command warns about broken recipe files, which needs the whole catalog (and
pydantic). The quick reads of `runs` and `show` (api/quick_reads.py) skip it safely: when
the full path loads a catalog with no problems, it writes a stamp of what it checked — the
release, and the name, size and modification time of every file in the workspace's recipe
and prompt folders (a recipe names prompt types) — and a quick read goes ahead only while
the stamp still matches. Any change, or no stamp, and the full path checks (and warns) again.
A stamp is a cache beside the store, never a record: deleting it costs one slower read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from controlroom import __version__

_STAMP = "recipes-checked.json"
_FOLDERS = ("recipes", "prompts")


def current(workspace: Path) -> dict[str, Any]:
    """What a check of the workspace's recipes depends on, as it is now."""
    state = workspace / ".control-room"
    files: dict[str, list[int]] = {}
    for folder in _FOLDERS:
        for root, _, names in os.walk(state / folder):
            for name in names:
                path = Path(root, name)
                try:
                    found = path.stat()
                except OSError:
                    continue
                files[str(path.relative_to(state))] = [found.st_size, found.st_mtime_ns]
    return {"release": __version__, "files": files}


def has_own_files(workspace: Path) -> bool:
    state = workspace / ".control-room"
    return any(_non_empty(state / folder) for folder in _FOLDERS)


def still_sound(workspace: Path) -> bool:
    """The workspace has no recipe or prompt files of its own, or they are as a check that
    found no problem last saw them."""
    if not has_own_files(workspace):
        return True
    try:
        stamp = json.loads((workspace / ".control-room" / _STAMP).read_text())
    except (OSError, ValueError):
        return False
    return bool(stamp == current(workspace))


def record_sound(workspace: Path) -> None:
    """Stamp what was just checked and found sound (only when there is something of the
    workspace's own to stamp; a stamp that cannot be written only costs speed)."""
    if not has_own_files(workspace):
        return
    path = workspace / ".control-room" / _STAMP
    try:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(current(workspace)))
        tmp.replace(path)
    except OSError:
        pass


def _non_empty(folder: Path) -> bool:
    try:
        return any(folder.iterdir())
    except OSError:  # no such folder: the usual case
        return False
