"""Named errors to HTTP: a status and a JSON body that names the problem and the field."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse

from controlroom.domain.errors import (
    BadInputError,
    ControlRoomError,
    IssueNotFoundError,
    MissingArgsError,
    NotRoutableError,
    RecipeInvalidError,
    RunConflictError,
    RunNotFoundError,
    RunStateError,
    UnknownRecipeError,
)


class HttpError(Exception):
    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.field = status, code, message, field


def error_body(code: str, message: str, field: str | None = None) -> dict[str, object]:
    error: dict[str, object] = {"code": code, "message": message}
    if field is not None:
        error["field"] = field
    return {"error": error}


def to_http(exc: ControlRoomError) -> HttpError:
    message = str(exc)
    if isinstance(exc, UnknownRecipeError):
        return HttpError(400, "unknown_recipe", message, "recipe_id")
    if isinstance(exc, MissingArgsError):
        return HttpError(400, "missing_args", message, "args." + exc.missing[0])
    if isinstance(exc, NotRoutableError):
        return HttpError(400, "not_routable", message, "task")
    if isinstance(exc, RecipeInvalidError):
        return HttpError(400, "invalid_recipe", message)
    if isinstance(exc, RunNotFoundError | IssueNotFoundError):
        return HttpError(404, "not_found", message)
    if isinstance(exc, RunStateError):
        return HttpError(409, "conflict", message)
    if isinstance(exc, RunConflictError):
        return HttpError(409, "conflict", message)
    if isinstance(exc, BadInputError):
        return HttpError(400, "bad_input", message)
    return HttpError(500, "internal", message)


async def handle_http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HttpError)
    return JSONResponse(error_body(exc.code, exc.message, exc.field), status_code=exc.status)


async def handle_domain_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ControlRoomError)
    http = to_http(exc)
    return JSONResponse(error_body(http.code, http.message, http.field), status_code=http.status)
