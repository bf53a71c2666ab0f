"""The OpenAPI entries of the issue lifecycle and audit trail."""

from __future__ import annotations

from typing import Any


def issue_paths(models: Any) -> dict[str, Any]:
    from controlroom.api import openapi as o
    from controlroom.api.issues_http import AnswerBody, CommentBody, ReasonBody
    from controlroom.projections.models import IssueDetail, RunState, TrailEntry

    issue_id = o._param("issue_id", "path", {"type": "string"})
    detail = models.ref(IssueDetail)
    models.ref(ReasonBody)
    models.ref(CommentBody)
    models.ref(AnswerBody)

    def change(summary: str, body: str, ok: str = "200") -> dict[str, Any]:
        return {
            "post": o._op(
                summary,
                {ok: o._json(detail, "the issue after the change")},
                400,
                404,
                409,
                413,
                parameters=[issue_id],
                requestBody=o._body(body),
            )
        }

    return {
        "/api/runs/{run_id}/resume": {
            "post": o._op(
                "Continue a run nobody is advancing (its process died, its lease ran out)",
                {"200": o._json(models.ref(RunState), "resumed here (RunResumed recorded)")},
                404,
                409,
                parameters=[o._RUN_ID],
            )
        },
        "/api/runs/{run_id}/trail": {
            "get": o._op(
                "A run's audit trail: task packets, receipts and STOP_HOOKs, in order",
                {"200": o._json(models.array(TrailEntry), "the trail")},
                404,
                parameters=[o._RUN_ID],
            )
        },
        "/api/issues/{issue_id}": {
            "get": o._op(
                "One issue with its history, comments and audit trail",
                {"200": o._json(detail, "issue")},
                404,
                parameters=[issue_id],
            )
        },
        "/api/issues/{issue_id}/reports/{receipt_id}": {
            "get": o._op(
                "A receipt's full report, from the issue's audit trail",
                {
                    "200": o._json(
                        {
                            "type": "object",
                            "properties": {
                                "issue_id": {"type": "string"},
                                "receipt_id": {"type": "string"},
                                "report": {"type": "string"},
                            },
                        },
                        "the report",
                    )
                },
                404,
                parameters=[issue_id, o._param("receipt_id", "path", {"type": "string"})],
            )
        },
        "/api/issues/{issue_id}/close": change("Close an issue, with a reason", "ReasonBody"),
        "/api/issues/{issue_id}/reopen": change("Reopen a closed issue", "ReasonBody"),
        "/api/issues/{issue_id}/comments": change("Comment on an issue", "CommentBody", "201"),
        "/api/issues/{issue_id}/answer": change(
            "Answer a needs_human issue: the waiting run goes on with the resolution",
            "AnswerBody",
        ),
    }
