"""Hostile input to every endpoint of the OpenAPI document never yields a 5xx."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live import live_server

pytestmark = pytest.mark.e2e

PATH_VALUES = ["run_nope", "x" * 300, "%00", "..%2F..%2Fetc", "ünïcødé", "0", "-1", "[]"]
QUERY_VALUES = ["", "-1", "99999999999999999999", "abc", "done", "a,b,,", "%ff", "null"]
BODIES: list[Any] = [
    None,
    {},
    [],
    "text",
    42,
    {"recipe_id": 5},
    {"recipe_id": ""},
    {"task": ["a"]},
    {"recipe_id": "creative_draft_scene", "args": {"x": {"deep": [1, None, True]}}},
    {"task": "x" * 10_000},
    {"recipe_id": "structural_canon", "session_id": 7},
    {"recipe_id": "analytical_prose", "unknown": 1},
    {"task": "\u0000\uffff"},
]


def expand(path: str, value: str) -> str:
    out = path
    while "{" in out:
        start, end = out.index("{"), out.index("}")
        out = out[:start] + value + out[end + 1 :]
    return out


@pytest.mark.long
def test_no_input_from_the_document_makes_the_server_fail(workspace: Path) -> None:
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        document = client.get("/openapi.json").json()
        failures = []
        for path, operations in document["paths"].items():
            for method, operation in operations.items():
                query_names = [
                    p["name"] for p in operation.get("parameters", []) if p["in"] == "query"
                ]
                for value in PATH_VALUES:
                    url = expand(path, value)
                    for name, query in itertools.product(query_names or [None], QUERY_VALUES[:4]):
                        params = {name: query} if name else {}
                        if method == "post":
                            for body in BODIES:
                                response = client.post(
                                    url,
                                    params=params,
                                    content=json.dumps(body).encode(),
                                    headers={"content-type": "application/json"},
                                )
                                if response.status_code >= 500:
                                    failures.append((method, url, params, body))
                        elif not path.endswith("/events"):  # live feeds do not end
                            response = client.get(url, params=params)
                            if response.status_code >= 500:
                                failures.append((method, url, params, None))
        for query in QUERY_VALUES:
            response = client.get("/api/runs/run_nope/events", params={"after": query})
            if response.status_code >= 500:
                failures.append(("get", "/api/runs/run_nope/events", query, None))
        assert failures == []
