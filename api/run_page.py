"""`GET /api/runs/{id}/state`: the run as its page shows it, from the server's one fold of the
run's whole stream (`RunView`, the same fold `controlroom show` prints), judged the way the
CLI judges it.

The page folds events too, to draw its timeline as they stream; what it *says* about the run
(its status, whether anyone advances it, what it cost, which actions are valid) comes from
here, so the page and the CLI never disagree. A running run whose process is gone is
`interrupted`, with the reason and the resume action, exactly when `controlroom show` says
"not advancing".
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse

from controlroom.api.errors import HttpError
from controlroom.api.run_text import not_advancing
from controlroom.domain.errors import RunNotFoundError
from controlroom.projections.models import LoopView
from controlroom.projections.run_tree import own_tokens, rollups
from controlroom.projections.run_view import RunView

Shown = Literal[
    "pending", "running", "waiting", "interrupted", "queued", "done", "failed", "cancelled",
    "damaged",
]  # fmt: skip
FailureKind = Literal["dod", "step", "run"]
Action = Literal["cancel", "resume", "retry", "retry_from_step"]


class RunState(BaseModel):
    """What the run page says about a run, decided on the server."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    version: int = Field(description="the last event folded: the page's events catch up to it")
    status: str = Field(description="the stored status (`RunDetail.status`)")
    shown: Shown = Field(description="what the page shows: the status, or why it stands still")
    reason: str | None = Field(description="why a running run is not advancing, and what to do")
    failure_kind: FailureKind | None = Field(
        description="a failed run: its Definition of Done failed, a step failed, or neither"
    )
    actions: list[Action] = Field(description="the actions valid now, in the order shown")
    args: dict[str, Any] = Field(description="the arguments the run was started with")
    current_step: str | None = Field(description="the step instance it is at (or stopped at)")
    steps_done: int
    total_steps: int
    cost_usd: float | None = Field(
        description="every model reply paid for, rejected included; a fork's copies of its "
        "source's replies are not its cost (`copied_cost_usd`)"
    )
    input_tokens: int = Field(
        description="tokens of the replies the run kept (a fork's copied steps left out)"
    )
    output_tokens: int
    copied_cost_usd: float | None = Field(
        default=None,
        description="a fork: what the source's replies it copied had cost (not paid again)",
    )
    dod: Literal["not_checked", "passed", "failed"]
    parent: dict[str, Any] | None = Field(
        default=None, description="a child run: the run and step that started it (seed 004)"
    )
    children: list[dict[str, Any]] = Field(
        default_factory=list, description="the runs its child_run steps started, in order"
    )
    tree: dict[str, Any] | None = Field(
        default=None,
        description="with children: the run and every run below it rolled up (runs, depth, "
        "cost, tokens, outcomes); only on the single run's state",
    )
    forked_from: dict[str, Any] | None = Field(
        default=None, description="a fork: the run it was taken from (run_id) and its step"
    )
    forks: list[dict[str, Any]] = Field(
        default_factory=list,
        description="the runs forked from this one (run_id, step, created_at), in order",
    )
    family: dict[str, Any] | None = Field(
        default=None,
        description="a fork or a run forked from: its fork family (root_run_id, runs, "
        "cost_usd, input_tokens, output_tokens, copied_cost_usd), each run's own spend "
        "summed; only on the single run's state",
    )
    eval_forks: list[dict[str, Any]] = Field(
        default_factory=list,
        description="an eval: the forks it ran (run_id, source_run_id, step), in order",
    )
    eval: dict[str, Any] | None = Field(
        default=None,
        description="an eval: its forks' own spend summed (forks, cost_usd, input_tokens, "
        "output_tokens, copied_cost_usd); only on the single run's state",
    )
    loop: dict[str, Any] | None = Field(
        default=None,
        description="an adaptive loop's turns and ending (`RunDetail.loop`): the page's "
        "Loop turns panel",
    )


def run_state(view: RunView) -> RunState:
    run = view.run
    status: str = run.get("status", "pending")
    stalled = not_advancing(run) if run else None
    shown: Shown = _shown(status, stalled, run)
    if shown == "waiting":
        stalled = None
    failure_kind = _failure_kind(view) if status == "failed" else None
    latest = _latest_instances(view)
    input_tokens, output_tokens = own_tokens({"steps": view.steps})
    current = view.steps[-1]["instance_id"] if view.steps else None
    return RunState(
        run_id=run.get("run_id", ""),
        version=view.version,
        status=status,
        shown=shown,
        reason=_reason(shown, stalled),
        failure_kind=failure_kind,
        actions=_actions(shown, failure_kind),
        args=dict((run.get("task") or {}).get("initial_args") or {}),
        current_step=current,
        steps_done=sum(1 for s in latest if s["status"] in ("done", "answered")),
        total_steps=run.get("total_steps", 0),
        cost_usd=run.get("cost_usd"),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        dod="not_checked" if view.dod is None else "passed" if view.dod["passed"] else "failed",
        parent=run.get("parent"),
        children=list(run.get("children") or []),
        copied_cost_usd=run.get("copied_cost_usd"),
        forked_from=run.get("forked_from"),
        forks=list(run.get("forks") or []),
        eval_forks=list(run.get("eval_forks") or []),
        loop=_loop(run.get("loop")),
    )


def _loop(loop: dict[str, Any] | None) -> dict[str, Any] | None:
    """The loop's turns in `RunDetail.loop`'s shape (fields without a value left out)."""
    return LoopView.model_validate(loop).model_dump(mode="json") if loop else None


def _shown(status: str, stalled: str | None, run: dict[str, Any]) -> Shown:
    if status == "running" and run.get("waiting_for_person"):
        return "waiting"  # on a person, not on a process: nothing is stalled
    if stalled is not None:
        return "queued" if not run.get("owner") else "interrupted"
    known: tuple[str, ...] = ("pending", "running", "done", "failed", "cancelled", "damaged")
    return status if status in known else "running"  # type: ignore[return-value]


def _reason(shown: Shown, stalled: str | None) -> str | None:
    if stalled is None:
        return None
    if shown == "queued":
        return "Queued: no process holds it yet. A worker takes it, or resume it here."
    return f"Not advancing: {stalled}. Resume it to continue from where it stopped."


def _latest_instances(view: RunView) -> list[dict[str, Any]]:
    """Each recipe step's latest instance: a step retried and then done counts as done."""
    latest: dict[str, dict[str, Any]] = {}
    for step in view.steps:
        latest[step["step_id"]] = step
    return list(latest.values())


def _failure_kind(view: RunView) -> FailureKind:
    if view.dod is not None and not view.dod["passed"]:
        return "dod"
    if any(s["status"] == "failed" for s in _latest_instances(view)):
        return "step"
    return "run"


def _actions(shown: Shown, failure_kind: FailureKind | None) -> list[Action]:
    if shown in ("running", "waiting", "pending", "queued"):
        return ["cancel"]
    if shown == "interrupted":
        return ["resume", "cancel"]
    if shown == "failed":
        # A Definition of Done failure has no failed step to go back to: the person names
        # the step to retry from (each step's "Retry from here").
        return ["retry_from_step"] if failure_kind == "dod" else ["retry", "retry_from_step"]
    return []


#: The most runs one `GET /api/run-states` answers for: a page of the runs list.
MAX_STATES = 100


def get_run_states(request: Request) -> JSONResponse:
    """`?ids=a,b,c`: the state of each run named that exists, in the order asked (the runs
    list asks for the page it shows). A blocking read: Starlette runs it in a thread."""
    ids = [i for i in request.query_params.get("ids", "").split(",") if i]
    if len(ids) > MAX_STATES:
        raise HttpError(400, "bad_filter", f"at most {MAX_STATES} ids at once", "ids")
    queries = request.app.state.server.read_views().query
    found = []
    for run_id in dict.fromkeys(ids):
        try:
            found.append(run_state(queries.view(run_id)).model_dump(mode="json"))
        except RunNotFoundError:
            continue
    return JSONResponse(found)


def get_run_state(request: Request) -> JSONResponse:
    """A blocking read of the read model: Starlette runs it in a thread."""
    queries = request.app.state.server.read_views().query
    run_id = request.path_params["run_id"]
    state = run_state(queries.view(run_id))
    lists = {
        "children": state.children,
        "forked_from": state.forked_from,
        "forks": state.forks,
        "eval_forks": state.eval_forks,
    }
    state = state.model_copy(update=rollups(lists, queries.state_of, run_id))
    return JSONResponse(state.model_dump(mode="json"))
