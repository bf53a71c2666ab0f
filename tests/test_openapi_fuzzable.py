"""The OpenAPI document is one a fuzzer can walk: every `$ref` resolves, `POST /api/runs`
links to the per-run operations, and a wrong method gets 405 with `Allow`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from controlroom.api.openapi import openapi_document
from tests.live import live_server

pytestmark = pytest.mark.e2e


def references(node: Any) -> list[Any]:
    found: list[Any] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                found.append(value)
            else:
                found.extend(references(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(references(value))
    return found


def test_every_ref_is_a_string_that_resolves_in_the_document() -> None:
    document = openapi_document()
    schemas = document["components"]["schemas"]
    for ref in references(document):
        assert isinstance(ref, str), ref
        assert ref.startswith("#/components/schemas/") and ref.rsplit("/", 1)[1] in schemas, ref


def test_starting_a_run_links_to_the_operations_on_that_run() -> None:
    document = openapi_document()
    ids = {op["operationId"] for ops in document["paths"].values() for op in ops.values()}
    links = document["paths"]["/api/runs"]["post"]["responses"]["201"]["links"]
    assert {"GetRun", "GetRunAudit", "CancelRun", "FollowRunEvents"} <= set(links)
    for link in links.values():
        assert link["operationId"] in ids
        assert link["parameters"] == {"run_id": "$response.body#/run_id"}


def test_a_wrong_method_is_405_with_allow(workspace: Path) -> None:
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        response = client.delete("/api/runs")
        assert response.status_code == 405
        assert set(response.headers["allow"].replace(" ", "").split(",")) >= {"GET", "POST"}
        assert response.json()["error"]["code"] == "http_error"
