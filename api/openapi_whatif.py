"""The OpenAPI entries of the "what if" routes: fork a run, diff two runs."""

from __future__ import annotations

from typing import Any

_STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}
_SIDE = {
    "type": ["object", "null"],
    "description": "one run's step: status, calls, tokens, cost, latency, verdicts, request ref",
    "additionalProperties": True,
}
_DIFF = {
    "type": "object",
    "properties": {
        "run_a": {"type": "string"},
        "run_b": {"type": "string"},
        "steps": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "step": {"type": "string"},
                    "changed": {"type": "boolean"},
                    "a": _SIDE,
                    "b": _SIDE,
                    "request_diff": {"type": "string"},
                    "output_diff": {"type": "string"},
                },
            },
        },
        "dod": {
            "type": "object",
            "description": "each run's DoD verdicts by check index",
            "additionalProperties": True,
        },
        "totals": {
            "type": "object",
            "description": "each run's calls, tokens, cost and latency",
            "additionalProperties": True,
        },
    },
}


def whatif_paths() -> dict[str, Any]:
    from controlroom.api import openapi as o

    fork_body = {
        "type": "object",
        "required": ["from"],
        "additionalProperties": False,
        "properties": {
            "from": {"type": "string", "minLength": 1,
                     "description": "the step (id or instance) to run live from"},
            "prompts": {**_STRINGS, "description": "prompt type -> the template's new text"},
            "models": {**_STRINGS, "description": "role -> PROVIDER:MODEL"},
            "args": {"type": "object", "description": "task args changed"},
        },
    }  # fmt: skip
    return {
        "/api/runs/{run_id}/fork": {
            "post": o._op(
                "Fork a run at a step: the steps before it copied from the run's events, the "
                "rest run live with the changes given (`controlroom fork`)",
                {
                    "200": o._json(
                        {
                            "type": "object",
                            "properties": {
                                "run_id": {"type": "string"},
                                "status": {"type": "string"},
                                "source_run_id": {"type": "string"},
                                "from": {"type": "string"},
                            },
                        },
                        "the fork, recorded (RunForked) and started or queued",
                    )
                },
                400,
                404,
                parameters=[o._RUN_ID],
                requestBody={
                    "required": True,
                    "content": {"application/json": {"schema": fork_body}},
                },
            )
        },
        "/api/runs/{run_id}/diff/{other_run_id}": {
            "get": o._op(
                "Two runs compared step by step: requests, outputs, verdicts, tokens, cost "
                "(`controlroom diff --json`)",
                {"200": o._json(_DIFF, "the comparison")},
                404,
                parameters=[o._RUN_ID, o._param("other_run_id", "path", {"type": "string"})],
            )
        },
    }
