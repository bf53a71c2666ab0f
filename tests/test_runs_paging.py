"""Paging the runs list: `controlroom runs --limit/--before` (quick and full paths alike) and
`GET /api/runs?limit=&before=` with its `Link: rel="next"` header, so a store of 100k runs
lists a page, not every run."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.live import live_server
from tests.test_cli_e2e import as_json, cli
from tests.test_startup import probe


@pytest.fixture
def three_runs(workspace: Path) -> tuple[Path, list[str]]:
    runs = [cli("run", "structural_canon", "-w", str(workspace), "-q", "--json") for _ in "abc"]
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    return workspace, [as_json(r)["run_id"] for r in runs]  # oldest first


def _listed(output: str) -> list[str]:
    return [line.split()[0] for line in output.splitlines() if line.startswith("run_")]


def test_runs_shows_a_page_of_the_newest_and_says_how_to_see_older_ones(
    three_runs: tuple[Path, list[str]],
) -> None:
    workspace, (first, second, third) = three_runs
    for env in (None, {"CONTROLROOM_QUICK_READS": "0"}):
        page, _ = probe("runs", "--limit", "2", "-w", str(workspace), env=env)
        assert _listed(page) == [second, third], env
        assert f"(1 older run not shown: `controlroom runs --before {second}`" in page
        older, _ = probe("runs", "--limit", "2", "--before", second, "-w", str(workspace), env=env)
        assert _listed(older) == [first] and "older run" not in older, env
        every, _ = probe("runs", "--limit", "0", "-w", str(workspace), env=env)
        assert _listed(every) == [first, second, third] and "older" not in every, env
    quick, loaded = probe("runs", "--limit", "2", "-w", str(workspace))
    full, _ = probe(
        "runs", "--limit", "2", "-w", str(workspace), env={"CONTROLROOM_QUICK_READS": "0"}
    )
    assert quick == full and loaded == set()


def test_a_page_before_an_unknown_run_or_of_no_size_is_refused(
    three_runs: tuple[Path, list[str]],
) -> None:
    workspace, _ = three_runs
    unknown = cli("runs", "--before", "run_nosuchrun", "-w", str(workspace))
    assert unknown.returncode == 64 and "no run 'run_nosuchrun'" in unknown.stderr  # as `show`
    negative = cli("runs", "--limit", "-1", "-w", str(workspace))
    assert negative.returncode == 64 and "--limit" in negative.stderr  # a usage error


def test_the_http_list_pages_with_a_next_link_until_the_oldest_run(
    three_runs: tuple[Path, list[str]],
) -> None:
    workspace, (first, second, third) = three_runs
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        assert [r["run_id"] for r in client.get("/api/runs").json()] == [first, second, third]
        page = client.get("/api/runs", params={"limit": 2, "status": "done"})
        assert [r["run_id"] for r in page.json()] == [second, third]
        link = page.headers["link"]
        assert link == f'</api/runs?limit=2&status=done&before={second}>; rel="next"'
        older = client.get(link[1 : link.index(">")])
        assert [r["run_id"] for r in older.json()] == [first]
        assert "link" not in older.headers
        missing = client.get("/api/runs", params={"limit": 2, "before": "run_nosuchrun"})
        assert missing.status_code == 404
        for size in ("0", "1001", "two"):
            refused = client.get("/api/runs", params={"limit": size})
            assert refused.status_code == 400, size
            assert refused.json()["error"]["field"] == "limit", size
