"""The OpenAPI entries of `/api/plans`: the plan views and each control's body."""

from __future__ import annotations

from typing import Any


def plan_paths(models: Any) -> dict[str, Any]:
    from controlroom.api import openapi as o
    from controlroom.api.plans_http import CONTROL_BODIES, CreatePlanBody
    from controlroom.projections.plan_models import PlanDetail, PlanSummary
    from controlroom.projections.plan_queries import PLAN_STATUSES

    plan_id = o._param("plan_id", "path", {"type": "string"})
    detail = models.ref(PlanDetail)
    models.ref(CreatePlanBody)
    paths: dict[str, Any] = {
        "/api/plans": {
            "post": o._op(
                "The Chief plans an intent: a draft plan for the user to approve",
                {"201": o._json(detail, "the plan, as a draft")},
                400,
                413,
                502,
                requestBody=o._body("CreatePlanBody"),
            ),
            "get": o._op(
                "List session plans",
                {"200": o._json(models.array(PlanSummary), "plans")},
                400,
                parameters=[
                    o._param("status", "query", {"type": "string", "enum": list(PLAN_STATUSES)})
                ],
            ),
        },
        "/api/plans/{plan_id}": {
            "get": o._op(
                "One plan with each task's state, run and review",
                {"200": o._json(detail, "plan")},
                404,
                parameters=[plan_id],
            )
        },
        "/api/plans/{plan_id}/events": {
            "get": o._op(
                "Follow a plan's events and its runs' events live (ends when the plan finishes)",
                o._SSE,
                400,
                404,
                parameters=[plan_id, o._AFTER],
            )
        },
    }
    for control, body in CONTROL_BODIES.items():
        extra: dict[str, Any] = {"parameters": [plan_id]}
        if body is not None:
            models.ref(body)
            extra["requestBody"] = o._body(body.__name__)
        paths[f"/api/plans/{{plan_id}}/{control}"] = {
            "post": o._op(
                f"Plan control: {control} (recorded as an event)",
                {"200": o._json(detail, "the plan after the change")},
                400,
                404,
                409,
                413,
                **extra,
            )
        }
    return paths


def conference_paths(models: Any) -> dict[str, Any]:
    from controlroom.api import openapi as o
    from controlroom.api.conference_http import StartRoundBody
    from controlroom.projections.conference_models import RoundDetail, RoundSummary

    round_id = o._param("round_id", "path", {"type": "string"})
    models.ref(StartRoundBody)
    detail = models.ref(RoundDetail)
    return {
        "/api/conferences": {
            "post": o._op(
                "Start a conference round (a run of the conference_round recipe): tools "
                "gather evidence, every role interprets it; answers at once",
                {
                    "202": o._json(
                        {
                            "type": "object",
                            "properties": {
                                "round_id": {"type": "string"},
                                "run_id": {"type": "string"},
                                "status": {"type": "string"},
                                "run_status": {"type": "string"},
                            },
                            "required": ["round_id", "run_id", "status", "run_status"],
                        },
                        "the round, opened; follow it at /api/conferences/{round_id}/events",
                    )
                },
                400,
                413,
                requestBody=o._body("StartRoundBody"),
            ),
            "get": o._op(
                "List conference rounds", {"200": o._json(models.array(RoundSummary), "rounds")}
            ),
        },
        "/api/conferences/{round_id}": {
            "get": o._op(
                "One round: receipts, refused calls, replies with their verdicts",
                {"200": o._json(detail, "round")},
                404,
                parameters=[round_id],
            )
        },
        "/api/conferences/{round_id}/events": {
            "get": o._op(
                "Follow a round's events live (ends when it closes or fails)",
                o._SSE,
                400,
                404,
                parameters=[round_id, o._AFTER],
            )
        },
    }
