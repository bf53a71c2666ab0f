"""Request bodies, parsed once at the edge: size-capped, JSON, then validated."""

from __future__ import annotations

from typing import Any, TypeVar

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    field_validator,
    model_validator,
)
from starlette.requests import Request

from controlroom.api.errors import HttpError
from controlroom.api.fields import Id, Text
from controlroom.api.limits import MAX_DEPTH, LimitError, check_args, check_text

MAX_BODY_BYTES = 1024 * 1024
B = TypeVar("B", bound=BaseModel)


class StartRunBody(BaseModel):
    """Start a run: a recipe id (appendix D), or a task description for the router."""

    model_config = ConfigDict(extra="forbid")
    recipe_id: Id | None = None
    task: Text | None = Field(
        default=None, description="task description; routed when recipe_id is absent"
    )
    args: dict[str, JsonValue] = Field(
        default_factory=dict,
        description=f"recipe arguments: JSON values nested at most {MAX_DEPTH} levels, "
        "no NUL characters",
    )
    session_id: Id | None = None

    @field_validator("recipe_id", "task", "session_id")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        if value is not None and "\x00" in value:
            raise ValueError("contains a NUL character")
        return value

    @model_validator(mode="after")
    def _needs_recipe_or_task(self) -> StartRunBody:
        if self.recipe_id is None and self.task is None:
            raise ValueError("give recipe_id, or a task description to route")
        return self


class RouteBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: Text

    @field_validator("task")
    @classmethod
    def _no_nul(cls, value: str) -> str:
        return check_text(value, "task")


async def read_body(request: Request, model: type[B]) -> B:
    declared = request.headers.get("content-length")
    too_large = declared is not None and declared.isascii() and declared.isdigit()
    if too_large and int(declared or 0) > MAX_BODY_BYTES:
        raise HttpError(413, "body_too_large", f"request body over {MAX_BODY_BYTES} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise HttpError(413, "body_too_large", f"request body over {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    raw = b"".join(chunks)
    try:
        # orjson, not json: it refuses nesting past 1024 levels with an error instead of
        # exhausting the interpreter's stack (a RecursionError, so a 500).
        data: Any = orjson.loads(raw or b"null")
    except orjson.JSONDecodeError as exc:
        raise HttpError(400, "malformed_json", f"request body is not valid JSON: {exc}") from None
    if isinstance(data, dict) and isinstance(data.get("args"), dict):
        # Before pydantic sees it: its own limits are deeper than what reads back safely.
        try:
            check_args(data["args"])
        except LimitError as exc:
            raise HttpError(400, "limit_exceeded", exc.reason, exc.field) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or None
        raise HttpError(400, "invalid_body", first["msg"], field) from None
