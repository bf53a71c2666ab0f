"""A recorded model request as text a person can diff: its system text, its user text and
the rest of the body (model, decoding parameters, schema) as sorted JSON lines.

Bodies differ by provider (OpenAI-style `messages`, Anthropic's top-level `system`); both
read the same here, so two runs served by different providers still diff by meaning.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from typing import Any


def _content_text(content: Any) -> str:
    """A message's content: a string, or a list of parts of which the text ones count."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return json.dumps(content, sort_keys=True, ensure_ascii=False)


def split_request(body: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(system text, user text, everything else) of a request body as it was sent."""
    system: list[str] = []
    user: list[str] = []
    if isinstance(body.get("system"), str):
        system.append(body["system"])
    for message in body.get("messages") or ():
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        target = system if role in ("system", "developer") else user
        target.append(_content_text(message.get("content")))
    rest = {k: v for k, v in body.items() if k not in ("system", "messages")}
    return "\n\n".join(system), "\n\n".join(user), rest


def request_lines(body: Mapping[str, Any] | None) -> list[str]:
    """The request as lines, in three labelled sections (empty for no request)."""
    if body is None:
        return []
    system, user, rest = split_request(body)
    lines = ["## system", *system.splitlines(), "## user", *user.splitlines(), "## parameters"]
    lines += [
        f"{k}: {json.dumps(rest[k], sort_keys=True, ensure_ascii=False)}" for k in sorted(rest)
    ]
    return lines


def text_diff(old: list[str], new: list[str], old_name: str, new_name: str) -> str:
    """A unified diff of two texts given as lines ("" when they are the same)."""
    return "\n".join(
        difflib.unified_diff(old, new, fromfile=old_name, tofile=new_name, lineterm="", n=2)
    )


def request_diff(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, old_name: str, new_name: str
) -> str:
    return text_diff(request_lines(old), request_lines(new), old_name, new_name)
