"""What a session plan refuses: bad input naming its field, and controls out of turn."""

from __future__ import annotations

from controlroom.domain.errors import BadInputError, ControlRoomError


class PlanInputError(BadInputError):
    """A task, dep, order or answer that cannot be used (exit 64, HTTP 400 naming `field`)."""

    def __init__(self, message: str, field: str) -> None:
        self.field = field
        super().__init__(message)


class PlanNotFoundError(BadInputError):
    def __init__(self, plan_id: str) -> None:
        self.plan_id = plan_id
        super().__init__(f"no plan '{plan_id}' (list them with `controlroom plan list`)")


class PlanStateError(ControlRoomError):
    """A control the plan's (or the task's) state does not allow now (exit 64, HTTP 409)."""

    def __init__(self, plan_id: str, state: str, wanted: str) -> None:
        self.plan_id, self.state, self.wanted = plan_id, state, wanted
        super().__init__(f"plan {plan_id} is {state}: cannot {wanted}")


class ChiefReplyError(ControlRoomError):
    """The Chief's replies were not what was asked (a plan, a review), every time it was
    asked (exit 1, HTTP 502)."""

    def __init__(self, attempts: int, errors: list[str], wanted: str = "plan") -> None:
        self.attempts, self.errors, self.wanted = attempts, list(errors), wanted
        listed = "; ".join(errors[:8])
        super().__init__(
            f"the Chief's reply was not a valid {wanted} after {attempts} attempt(s): {listed}"
        )


class ChiefUnavailableError(ControlRoomError):
    """The Chief's model server failed, after the engine's transport retries, or refused
    the request (exit 1, HTTP 502 naming the server's failure)."""

    def __init__(self, message: str, kind: str | None = None, status: int | None = None) -> None:
        self.kind, self.status = kind, status
        super().__init__(message)
