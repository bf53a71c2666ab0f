"""file_manifest: which files, and their hashes (the Archive Snapshot and Post-Mortem loops).

Lists the files it is given (`paths`, as the file locator found them) and every text file
under the folders it is given (`under`, e.g. `control-room-reports/`), each with the sha256
of its bytes as they are on disk (a CRLF file hashes as CRLF: the snapshot names the file,
not Control Room's reading of it), its size and its first heading. `excerpt_chars` adds the
start of each file's text, for a step that reviews what the files say (the reports earlier
runs left). The manifest's own hash covers every `path sha256` line, so two snapshots of
the same manuscript have the same one.
"""

from __future__ import annotations

import hashlib
from typing import Any, ClassVar

from pydantic import Field

from controlroom.domain.errors import ToolError, WorkspaceError
from controlroom.tools.base import ToolArgs, ToolResult
from controlroom.tools.workspace import Workspace

#: At most this many files are listed; the rest are counted (a receipt stays small).
MAX_FILES = 500
MAX_EXCERPT_CHARS = 2000


class FileManifestArgs(ToolArgs):
    paths: list[str] = Field(default_factory=list)
    #: The file locator's `layout`: its units in reading order, its outline (when the
    #: workspace has one) and its canon cards are listed, the whole manuscript.
    layout: dict[str, Any] | None = None
    #: Folders (workspace-relative) whose text files are listed too, recursively.
    under: list[str] = Field(default_factory=list)
    excerpt_chars: int = Field(default=0, ge=0, le=MAX_EXCERPT_CHARS)


def _heading(text: str) -> str:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped:
            return stripped.lstrip("#").strip()[:120]
    return ""


def _layout_paths(layout: dict[str, Any] | None) -> list[str]:
    if not layout:
        return []
    units = [u.get("path") for u in layout.get("units") or [] if isinstance(u, dict)]
    outline = [layout.get("outline")]
    canon = list(layout.get("canon") or [])
    return [p for p in [*units, *outline, *canon] if isinstance(p, str) and p]


class FileManifest:
    name: ClassVar[str] = "file_manifest"
    #: Reads the workspace: in a worker thread (tools/base.py `Tool`).
    slow: ClassVar[bool] = True
    description: ClassVar[str] = "List files with their sha256, size and first heading"
    args_model: ClassVar[type[ToolArgs]] = FileManifestArgs

    def run(self, args: FileManifestArgs, workspace: Workspace) -> ToolResult:
        folders = [u.replace("\\", "/").strip("/") + "/" for u in args.under if u.strip("/")]
        listed = [p for p in workspace.text_files if any(p.startswith(f) for f in folders)]
        wanted = list(dict.fromkeys([*args.paths, *_layout_paths(args.layout), *listed]))
        entries: list[dict[str, Any]] = []
        for path in wanted[:MAX_FILES]:
            try:
                data = workspace.resolve(path).read_bytes()
            except (OSError, WorkspaceError) as exc:
                raise ToolError(self.name, f"cannot read '{path}': {exc}") from None
            digest = hashlib.sha256(data).hexdigest()
            text = workspace.read_text(path)
            entry: dict[str, Any] = {
                # `name` and `summary` label the entry in a work list (path, then hash).
                "name": path,
                "summary": f"sha256:{digest} · {len(data)} bytes",
                "path": path,
                "sha256": digest,
                "bytes": len(data),
                "heading": _heading(text),
            }
            if args.excerpt_chars:
                entry["excerpt"] = text[: args.excerpt_chars]
            entries.append(entry)
        lines = "".join(f"{e['path']} {e['sha256']}\n" for e in entries)
        output: dict[str, Any] = {
            "entries": entries,
            "file_count": len(entries),
            "not_listed": max(0, len(wanted) - MAX_FILES),
            "total_bytes": sum(e["bytes"] for e in entries),
            "manifest_sha256": hashlib.sha256(lines.encode("utf-8")).hexdigest(),
            "folders": folders,
        }
        summary = [
            f"{len(entries)} file(s), {output['total_bytes']} bytes, "
            f"manifest sha256:{output['manifest_sha256'][:16]}…"
        ]
        summary += [f"- {e['path']}: sha256:{e['sha256'][:16]}…" for e in entries[:10]]
        return ToolResult(output, "\n".join(summary))
