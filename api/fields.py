"""The field types request bodies share, built on the limits of api/limits.py, so no body
spells a number of its own."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from controlroom.api.limits import MAX_ID, MAX_TASK, MAX_TEXT

#: A string field of a request body that may not be empty: 1 to `MAX_TEXT` characters.
Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]
#: A string field that may be left empty (a reason given or not).
Note = Annotated[str, Field(max_length=MAX_TEXT)]
#: An id in a request body: 1 to `MAX_ID` characters.
Id = Annotated[str, Field(min_length=1, max_length=MAX_ID)]
#: A plan's task, by its number.
TaskNumber = Annotated[int, Field(ge=1, le=MAX_TASK)]
