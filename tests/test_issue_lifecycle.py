"""Issues have a lifecycle (comment, close with a reason, reopen: each an event), the same
finding is never opened twice, an issue carries its audit trail (packets, receipts, long
reports on demand), and the correction-proposing recipes leave their reports as files."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from controlroom.domain.errors import BadInputError
from controlroom.domain.issue import Issue, IssueRecurred, IssueStateError
from controlroom.domain.run_events import FileWritten
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.service import RunRequest, RunService
from controlroom.models.agents import AgentDirectory
from controlroom.projections.views import Views
from tests.live import live_server
from tests.test_cli_e2e import cli
from tests.test_playbook import TASK as PLAYBOOK
from tests.test_playbook import Scripted

AT = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
CHECK = "check consistency of the scenes against canon"


def test_lifecycle_steps_out_of_turn_are_refused() -> None:
    issue = Issue.open("iss_1", AT, kind="k", title="t", detail="d", run_id="run_1",
                       session_id=None, recipe_id=None)  # fmt: skip
    with pytest.raises(IssueStateError, match="it is open"):
        issue.reopen(AT, "why")
    with pytest.raises(BadInputError, match="empty"):
        issue.close(AT, "   ")
    issue.close(AT, "fixed")
    with pytest.raises(IssueStateError, match="closed already"):
        issue.close(AT, "again")
    with pytest.raises(BadInputError, match="empty"):
        issue.comment(AT, "")
    issue.found_again(AT, "run_2", None)  # a closed finding found again is reopened
    assert issue.status == "open" and issue.runs == ["run_1", "run_2"]
    issue.found_again(AT, "run_2", None)  # the same run again: nothing new
    assert issue.pending_count == 3


def run(ctx: Context, task: str) -> str:
    service = RunService(ctx)
    done = asyncio.run(service.execute(service.start(RunRequest(task, {}))))
    Followers(ctx.store).catch_up()
    return done.id


def test_the_same_finding_in_a_second_run_links_to_the_open_issue(ctx: Context) -> None:
    first, second = run(ctx, CHECK), run(ctx, CHECK)
    views = Views.for_store(ctx.store)
    Followers(ctx.store, views).catch_up()
    (issue,) = views.query.issues()
    assert issue.run_id == first and issue.runs == [first, second]
    assert [i.issue_id for i in views.query.issues(run_id=second)] == [issue.issue_id]
    recurred = [e for e in ctx.store.stream(issue.issue_id) if isinstance(e, IssueRecurred)]
    assert [e.run_id for e in recurred] == [second]
    # Each run keeps its own report; the latest copy was written by the first run and
    # found as it was by the second.
    writes = [e for r in (first, second) for e in ctx.store.stream(r) if isinstance(e, FileWritten)]
    assert [w.path for w in writes] == [
        f"control-room-reports/corrections/{first}.md",
        "control-room-reports/corrections.md",
        f"control-room-reports/corrections/{second}.md",
        "control-room-reports/corrections.md",
    ]
    assert [w.already_applied for w in writes] == [False, False, False, True]
    assert (
        "change 'green' to 'grey'"
        in (ctx.workspace.root / "control-room-reports/corrections.md").read_text()
    )


def test_a_user_comments_closes_and_reopens_an_issue_from_the_cli(workspace: Path) -> None:
    ws = str(workspace)
    checked = cli("run", CHECK, "-w", ws, "-q")
    assert checked.returncode == 1
    # the checks' verdict, not a crash: the summary says every step ran
    assert "failed its Definition of Done (1 of " in checked.stdout
    assert "every step ran and nothing crashed" in checked.stdout
    (issue,) = json.loads(cli("issues", "-w", ws, "--json").stdout)
    issue_id = issue["issue_id"]
    assert cli("issues", "comment", issue_id, "asked the author", "-w", ws).returncode == 0
    refused = cli("issues", "close", issue_id, "-w", ws)
    assert refused.returncode == 64 and "--reason" in refused.stderr
    closed = cli("issues", "close", issue_id, "--reason", "eyes fixed", "-w", ws)
    assert closed.returncode == 0 and "closed" in closed.stdout
    # a change says what it did in a line or two, not the whole story again
    assert len(closed.stdout.splitlines()) <= 2 and f"issues show {issue_id}" in closed.stdout
    again = cli("issues", "close", issue_id, "--reason", "twice", "-w", ws)
    assert again.returncode == 64 and "closed already" in again.stderr
    assert cli("issues", "--status", "open", "-w", ws).stdout.strip() == "no issues"
    reopened = cli("issues", "reopen", issue_id, "--reason", "not fixed", "-w", ws, "--json")
    shown = json.loads(reopened.stdout)
    assert shown["status"] == "open"
    assert [h["event"] for h in shown["history"]] == [
        "opened", "commented", "closed", "reopened",
    ]  # fmt: skip
    assert shown["comments"][0]["text"] == "asked the author"
    assert any(e["kind"] == "tool_receipt" for e in shown["trail"])
    assert cli("issues", "show", "iss_nope", "-w", ws).returncode == 64


def test_a_stop_hook_issue_shows_the_playbooks_packets_and_receipts_in_order(
    workspace: Path,
) -> None:
    model = Scripted("critique_scene", "no", "no", "no")
    ctx = Context.open(workspace, agents=AgentDirectory(clients={"offline": model}))
    try:
        run(ctx, PLAYBOOK)
        views = Views.for_store(ctx.store)
        Followers(ctx.store, views).catch_up()
        (issue,) = views.query.issues()
        detail = views.query.issue_detail(issue.issue_id)
    finally:
        ctx.close()
    kinds = [e.kind for e in detail.trail]
    assert kinds[-1] == "stop_hook"
    assert kinds.count("packet") == 6 and kinds.count("receipt") == 5  # critique never answered
    stamps = [e.at for e in detail.trail]
    assert stamps == sorted(stamps)
    receipts = [e for e in detail.trail if e.kind == "receipt"]
    assert all(e.excerpt and e.has_report for e in receipts)
    with Views.for_store(Context.open(workspace).store) as again:
        report = again.query.receipt_report(issue.issue_id, receipts[0].receipt_id or "")
    assert report.startswith("# Scene plan: Scene 4")


def test_the_issue_lifecycle_and_reports_over_http(workspace: Path) -> None:
    model = Scripted("critique_scene", "no", "no", "no")
    ctx = Context.open(workspace, agents=AgentDirectory(clients={"offline": model}))
    try:
        run(ctx, PLAYBOOK)
    finally:
        ctx.close()
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        (issue,) = client.get("/api/issues").json()
        issue_id = issue["issue_id"]
        detail = client.get(f"/api/issues/{issue_id}").json()
        receipt_id = next(e["receipt_id"] for e in detail["trail"] if e["kind"] == "receipt")
        report = client.get(f"/api/issues/{issue_id}/reports/{receipt_id}")
        assert report.status_code == 200 and report.json()["report"].startswith("# Scene plan")
        assert client.get(f"/api/issues/{issue_id}/reports/rcpt_nope").status_code == 404
        blank = client.post(f"/api/issues/{issue_id}/comments", json={"text": "  "})
        assert blank.status_code == 400 and blank.json()["error"]["field"] == "text"
        commented = client.post(f"/api/issues/{issue_id}/comments", json={"text": "looking"})
        assert commented.status_code == 201 and commented.json()["comments"][0]["text"] == "looking"
        closed = client.post(f"/api/issues/{issue_id}/close", json={"reason": "model fixed"})
        assert closed.json()["status"] == "closed"
        conflict = client.post(f"/api/issues/{issue_id}/close", json={"reason": "again"})
        assert conflict.status_code == 409
        assert (
            client.post(f"/api/issues/{issue_id}/reopen", json={"reason": "no"}).json()["status"]
            == "open"
        )
        assert client.post("/api/issues/iss_nope/close", json={"reason": "x"}).status_code == 404
        run_trail = client.get(f"/api/runs/{detail['run_id']}/trail").json()
        assert [e["kind"] for e in run_trail] == [e["kind"] for e in detail["trail"]]
        assert client.get("/api/runs/run_nope/trail").status_code == 404


def test_structural_canon_writes_its_update_file_and_a_rerun_writes_nothing_new(
    workspace: Path,
) -> None:
    ws = str(workspace)
    for _ in range(2):
        assert cli("run", "update the canon cards", "-w", ws, "-q").returncode == 0
    report = workspace / "control-room-reports" / "canon-updates.md"
    assert report.is_file() and report.read_text().strip()
    runs = json.loads(cli("runs", "-w", ws, "--json").stdout)
    last = runs[-1]["run_id"]
    second = json.loads(cli("slot", last, "latest_report_file", "-w", ws, "--json").stdout)
    assert "already_applied" in json.dumps(second)
    # One report per run, kept: the second did not overwrite the first's.
    kept = sorted(p.name for p in (workspace / "control-room-reports" / "canon-updates").iterdir())
    assert len(kept) == 2 and f"{last}.md" in kept
    assert cli("workspace", "check", "-w", ws).stdout.count("canon cards: 4") == 1
