"""Named errors to HTTP: a status and a JSON body that names the problem and the field."""

from __future__ import annotations

import sqlite3

from eventsourcing.persistence import PersistenceError
from starlette.requests import Request
from starlette.responses import JSONResponse

from controlroom.api.faults import RETRY_AFTER_S, StoreFault, store_fault
from controlroom.api.limits import LimitError
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
from controlroom.domain.issue import IssueStateError
from controlroom.domain.plan_errors import (
    ChiefReplyError,
    PlanInputError,
    PlanNotFoundError,
    PlanStateError,
)
from controlroom.projections.plan_queries import RoundNotFoundError
from controlroom.projections.status_queries import PipelineNotFoundError


class HttpError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.field = status, code, message, field
        self.headers = headers


def error_body(code: str, message: str, field: str | None = None) -> dict[str, object]:
    error: dict[str, object] = {"code": code, "message": message}
    if field is not None:
        error["field"] = field
    return {"error": error}


def to_http(exc: ControlRoomError) -> HttpError:
    message = str(exc)
    fault = store_fault(exc)
    if fault is not None:
        return unavailable(fault)
    if isinstance(exc, LimitError):
        return HttpError(400, "limit_exceeded", exc.reason, exc.field)
    if isinstance(exc, UnknownRecipeError):
        return HttpError(400, "unknown_recipe", message, "recipe_id")
    if isinstance(exc, MissingArgsError):
        return HttpError(400, "missing_args", message, "args." + exc.missing[0])
    if isinstance(exc, NotRoutableError):
        return HttpError(400, "not_routable", message, "task")
    if isinstance(exc, RecipeInvalidError):
        return HttpError(400, "invalid_recipe", message)
    if isinstance(exc, IssueStateError):
        return HttpError(409, "conflict", message)
    if isinstance(exc, PlanInputError):
        return HttpError(400, "bad_input", message, exc.field)
    if isinstance(exc, PlanNotFoundError | RoundNotFoundError | PipelineNotFoundError):
        return HttpError(404, "not_found", message)
    if isinstance(exc, PlanStateError):
        return HttpError(409, "conflict", message)
    if isinstance(exc, ChiefReplyError):
        return HttpError(502, "chief_reply_invalid", message)
    if isinstance(exc, RunNotFoundError | IssueNotFoundError):
        return HttpError(404, "not_found", message)
    if isinstance(exc, RunStateError):
        return HttpError(409, "conflict", message)
    if isinstance(exc, RunConflictError):
        return HttpError(409, "conflict", message)
    if isinstance(exc, BadInputError):
        return HttpError(400, "bad_input", message)
    return HttpError(500, "internal", message)


def unavailable(fault: StoreFault) -> HttpError:
    """503: the store cannot be used just now; the client may try again after a while."""
    return HttpError(503, fault.kind, str(fault), headers={"Retry-After": str(RETRY_AFTER_S)})


def _response(http: HttpError) -> JSONResponse:
    body = error_body(http.code, http.message, http.field)
    return JSONResponse(body, status_code=http.status, headers=http.headers)


async def handle_http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HttpError)
    return _response(exc)


async def handle_domain_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ControlRoomError)
    return _response(to_http(exc))


async def handle_store_error(request: Request, exc: Exception) -> JSONResponse:
    """A driver's error from the store (disk full, read-only, locked): 503, never a 500."""
    fault = store_fault(exc)
    if fault is None:
        raise exc
    return _response(unavailable(fault))


async def handle_damaged_event(request: Request, exc: Exception) -> JSONResponse:
    """A run whose stored events cannot be decoded: its own operations answer 422 and say
    so; every other run is unaffected."""
    message = f"the run's stored events cannot be read: {' '.join(str(exc).split())[:300]}"
    return _response(HttpError(422, "damaged", message))


#: The driver errors `handle_store_error` answers, for the app's exception handlers.
STORE_ERRORS: tuple[type[Exception], ...] = (sqlite3.Error, PersistenceError)
