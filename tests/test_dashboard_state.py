"""The run page's word on a run (`GET /api/runs/{id}/state`), decided on the server from
the run's fold: a running run whose process is gone is interrupted (with the reason and the
resume action), a DoD failure offers no "retry from the failed step", and the totals count
every step's tokens."""

from __future__ import annotations

import os
import socket
import subprocess
from typing import Any

from controlroom.api.run_page import run_state
from controlroom.projections.run_view import RunView


def view_of(run: dict[str, Any], steps: list[dict[str, Any]], dod: Any = None) -> RunView:
    base = {
        "run_id": "run_x",
        "status": "running",
        "total_steps": 3,
        "task": {"description": "d", "initial_args": {"scene_number": 9}},
    }
    return RunView.from_state(
        {"run": {**base, **run}, "steps": steps, "slots": {}, "dod": dod, "version": 7}
    )


def step(instance: str, status: str, **more: Any) -> dict[str, Any]:
    return {"step_id": instance.split("#")[0], "instance_id": instance, "status": status, **more}


def dead_owner() -> str:
    """The owner name of a process of this host that has ended."""
    child = subprocess.Popen(["true"])
    child.wait()
    return f"{socket.gethostname()}:{child.pid}"


def test_a_running_run_whose_process_is_gone_is_interrupted_with_resume() -> None:
    state = run_state(view_of({"owner": dead_owner()}, [step("draft", "running")]))
    assert state.shown == "interrupted"
    assert state.reason is not None and "is gone" in state.reason
    assert state.actions == ["resume", "cancel"]
    assert state.args == {"scene_number": 9}
    assert state.current_step == "draft"


def test_a_run_its_live_process_holds_is_running_and_only_cancellable() -> None:
    alive = f"{socket.gethostname()}:{os.getpid()}"
    state = run_state(view_of({"owner": alive}, [step("draft", "running")]))
    assert (state.shown, state.reason, state.actions) == ("running", None, ["cancel"])
    assert state.dod == "not_checked"


def test_a_dod_failure_is_retried_from_a_chosen_step_only() -> None:
    dod = {"passed": False, "results": []}
    steps = [step("draft", "done"), step("review", "done")]
    state = run_state(view_of({"status": "failed"}, steps, dod))
    assert (state.failure_kind, state.actions, state.dod) == ("dod", ["retry_from_step"], "failed")


def test_a_step_retried_and_then_done_counts_as_done_and_tokens_add_up() -> None:
    usage = {"input_tokens": 10, "output_tokens": 2}
    steps = [
        step("draft", "failed", usage=usage),
        step("draft#2", "done", usage=usage, micro_steps=[{"usage": usage}]),
    ]
    state = run_state(view_of({"status": "done", "cost_usd": 0.5}, steps))
    assert (state.shown, state.failure_kind, state.actions) == ("done", None, [])
    assert (state.steps_done, state.input_tokens, state.output_tokens) == (1, 30, 6)
    assert state.cost_usd == 0.5
    failed = run_state(view_of({"status": "failed"}, [step("draft", "failed")]))
    assert (failed.failure_kind, failed.actions) == ("step", ["retry", "retry_from_step"])
