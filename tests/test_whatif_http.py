"""Fork and diff over HTTP on 127.0.0.1 (issue 31): what `controlroom fork` and `diff` do."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from controlroom.prompts.registry import BUNDLED_DIR
from tests.live import live_server
from tests.test_api_e2e import wait_for
from tests.test_cli_e2e import cli

ADDED = "Keep every sentence the author wrote in the first person."


def test_a_run_is_forked_and_compared_over_http(workspace: Path) -> None:
    ran = cli("run", "creative_draft_scene", "-w", str(workspace), "--json", "-q")
    assert ran.returncode == 0, ran.stderr
    source = json.loads(ran.stdout)["run_id"]
    for scene in (workspace / "Story" / "Scenes").glob("SCN-04-*"):
        scene.unlink()  # the source wrote it: the fork's write needs the path free
    template = (BUNDLED_DIR / "templates" / "polish_draft.t3.md").read_text() + ADDED
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        bad = client.post(f"/api/runs/{source}/fork", json={"from": "nope"})
        assert bad.status_code == 400 and "never started a step 'nope'" in bad.text
        shapeless = client.post(f"/api/runs/{source}/fork", json={"from": "polish", "x": 1})
        assert shapeless.status_code == 400
        missing = client.post("/api/runs/run_0000000000000000/fork", json={"from": "polish"})
        assert missing.status_code == 404
        forked = client.post(
            f"/api/runs/{source}/fork",
            json={"from": "polish", "prompts": {"polish_draft": template}},
        )
        assert forked.status_code == 200, forked.text
        fork_id = forked.json()["run_id"]
        assert wait_for(client, fork_id, "done")["forked_from"] == {
            "run_id": source,
            "step": "polish",
        }
        diff = client.get(f"/api/runs/{source}/diff/{fork_id}")
        assert diff.status_code == 200, diff.text
        steps = {s["step"]: s for s in diff.json()["steps"]}
        assert f"+{ADDED}" in steps["polish"]["request_diff"].splitlines()
        assert not steps["draft"]["changed"]
        lineage = client.get(f"/api/runs/{source}").json()["forks"]
        assert [f["run_id"] for f in lineage] == [fork_id]
        assert client.get(f"/api/runs/{source}/diff/run_0000000000000000").status_code == 404
