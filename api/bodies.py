"""Request bodies, parsed once at the edge: size-capped, JSON, then validated."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator
from starlette.requests import Request

from controlroom.api.errors import HttpError

MAX_BODY_BYTES = 1024 * 1024
B = TypeVar("B", bound=BaseModel)


class StartRunBody(BaseModel):
    """Start a run: a recipe id (appendix D), or a task description for the router."""

    model_config = ConfigDict(extra="forbid")
    recipe_id: str | None = Field(default=None, min_length=1)
    task: str | None = Field(
        default=None, min_length=1, description="task description; routed when recipe_id is absent"
    )
    args: dict[str, JsonValue] = Field(default_factory=dict)
    session_id: str | None = None

    @model_validator(mode="after")
    def _needs_recipe_or_task(self) -> StartRunBody:
        if self.recipe_id is None and self.task is None:
            raise ValueError("give recipe_id, or a task description to route")
        return self


class RouteBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: str = Field(min_length=1)


async def read_body(request: Request, model: type[B]) -> B:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise HttpError(413, "body_too_large", f"request body over {MAX_BODY_BYTES} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise HttpError(413, "body_too_large", f"request body over {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    raw = b"".join(chunks)
    try:
        data: Any = json.loads(raw or b"null")
    except ValueError as exc:
        raise HttpError(400, "malformed_json", f"request body is not valid JSON: {exc}") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or None
        raise HttpError(400, "invalid_body", first["msg"], field) from None
