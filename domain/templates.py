"""Path templates of `write_file` steps: a literal path with `{{ ref }}` placeholders.

The language is deliberately small:

- ``{{task.args.scene_number}}`` inserts the value of a `$ref` (appendix C paths);
- ``{{task.args.scene_number:02d}}`` formats a whole number with zero padding (`0Nd` or `d`);
- ``{{outline_beat.focus.title|slug}}`` makes a file-name slug (lower case, words joined by `-`).

Only strings and whole numbers may be inserted; nothing else is evaluated.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from controlroom.domain.errors import PathTemplateError
from controlroom.domain.refs import resolve_ref

_PLACEHOLDER = re.compile(
    r"\{\{\s*(?P<ref>[^{}|:\s]+)\s*(?::(?P<format>0?\d*d))?\s*(?:\|\s*(?P<filter>slug))?\s*\}\}"
)


def slug(text: str) -> str:
    """`The Reckoning` -> `the-reckoning`: letters and digits, words joined by `-`."""
    return re.sub(r"[^0-9a-z]+", "-", text.lower()).strip("-")


def placeholders(template: str) -> Iterator[str]:
    """Each placeholder's `$ref` text; raises PathTemplateError for a malformed template."""
    rest = _PLACEHOLDER.sub("", template)
    if "{{" in rest or "}}" in rest:
        raise PathTemplateError(
            template, "malformed placeholder: use {{ref}}, {{ref:02d}} or {{ref|slug}}"
        )
    for match in _PLACEHOLDER.finditer(template):
        yield match["ref"]


def render(template: str, task: Mapping[str, Any], slots: Mapping[str, Any]) -> str:
    list(placeholders(template))  # malformed templates fail before anything is resolved

    def value(match: re.Match[str]) -> str:
        found = resolve_ref(match["ref"], task, slots)
        if isinstance(found, bool) or not isinstance(found, str | int):
            raise PathTemplateError(template, f"'{match['ref']}' is not a string or a whole number")
        if match["format"]:
            try:
                number = int(found)
            except ValueError:
                raise PathTemplateError(
                    template, f"'{match['ref']}' is {found!r}, not a whole number"
                ) from None
            text = format(number, match["format"])
        else:
            text = str(found)
        return slug(text) if match["filter"] else text

    return _PLACEHOLDER.sub(value, template)
