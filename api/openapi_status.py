"""The OpenAPI entries of `/api/pipelines`: the status of pipeline targets (seed 002)."""

from __future__ import annotations

from typing import Any


def pipeline_paths(models: Any) -> dict[str, Any]:
    from controlroom.api import openapi as o
    from controlroom.projections.status_models import PipelineDetail, PipelineSummary

    target_id = o._param(
        "target_id",
        "path",
        {"type": "string"},
        description="a pipeline target's id (`itr_…`), as GET /api/pipelines lists it",
    )
    return {
        "/api/pipelines": {
            "get": o._op(
                "List pipeline targets: current iteration, run status, phase, blockers",
                {"200": o._json(models.array(PipelineSummary), "pipelines")},
            )
        },
        "/api/pipelines/status.md": {
            "get": o._op(
                "STATUS.md as the export writes it: every target's iteration, phases, current "
                "status and history",
                {
                    "200": {
                        "description": "markdown",
                        "content": {"text/markdown": {"schema": {"type": "string"}}},
                    }
                },
            )
        },
        "/api/pipelines/{target_id}": {
            "get": o._op(
                "One pipeline target: the current iteration's phases with their states, "
                "blockers, escalations, the history of iterations, the STATUS.md export",
                {"200": o._json(models.ref(PipelineDetail), "pipeline")},
                404,
                parameters=[target_id],
            )
        },
        "/api/pipelines/{target_id}/events": {
            "get": o._op(
                "Follow the events that change a target's status live: its runs' events and "
                "its archived iterations (a run started on it joins the feed; it never ends)",
                o._SSE,
                400,
                404,
                parameters=[target_id, o._AFTER],
            )
        },
    }
