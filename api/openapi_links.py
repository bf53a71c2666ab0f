"""What makes the OpenAPI document usable by a fuzzer or a client generator: an
`operationId` on every operation, links from `POST /api/runs` to the per-run operations
(so a stateful fuzzer starts a run, then reads, follows, audits and cancels *that* run),
and no schema property literally named `$ref` (a recipe's reference argument), which tools
read as a reference to resolve: it is declared through `patternProperties` instead."""

from __future__ import annotations

import re
from typing import Any

_RUN_OPERATIONS = {
    "GetRun": ("/api/runs/{run_id}", "get"),
    "GetRunSteps": ("/api/runs/{run_id}/steps", "get"),
    "GetRunAudit": ("/api/runs/{run_id}/audit", "get"),
    "FollowRunEvents": ("/api/runs/{run_id}/events", "get"),
    "CancelRun": ("/api/runs/{run_id}/cancel", "post"),
}


def operation_id(path: str, method: str) -> str:
    words = [w for w in re.split(r"[/{}_]+", path) if w and w != "api"]
    return method + "".join(w[:1].upper() + w[1:] for w in words)


def make_fuzzable(document: dict[str, Any]) -> dict[str, Any]:
    paths: dict[str, Any] = document["paths"]
    for path, operations in paths.items():
        for method, operation in operations.items():
            operation.setdefault("operationId", operation_id(path, method))
    created = paths.get("/api/runs", {}).get("post", {}).get("responses", {}).get("201")
    if created is not None:
        created["links"] = {
            name: {
                "operationId": paths[path][method]["operationId"],
                "parameters": {"run_id": "$response.body#/run_id"},
            }
            for name, (path, method) in _RUN_OPERATIONS.items()
            if method in paths.get(path, {})
        }
    for schema in document.get("components", {}).get("schemas", {}).values():
        _no_ref_properties(schema)
    return document


def _no_ref_properties(node: Any) -> None:
    if isinstance(node, dict):
        properties = node.get("properties")
        if isinstance(properties, dict) and "$ref" in properties:
            patterns = node.setdefault("patternProperties", {})
            patterns["^\\$ref$"] = properties.pop("$ref")
        for key, value in node.items():
            if key != "$ref":
                _no_ref_properties(value)
    elif isinstance(node, list):
        for value in node:
            _no_ref_properties(value)
