"""`controlroom eval`: a prompt or model change evaluated over past runs, each forked at
the first step the change touches, through the CLI."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.eval_step import EvalForkEnded, EvalForkSkipped, EvalForkStarted
from controlroom.domain.run_events import AgentResponded, RunForked, RunStarted
from controlroom.engine.context import Context
from controlroom.prompts.registry import BUNDLED_DIR
from tests.conftest import DEMO_LEFTOVERS, EXAMPLE
from tests.test_cli_e2e import cli

SCENES = Path("Story") / "Scenes"
ADDED = "Keep every sentence under twelve words."


def recorded(tmp_path: Path, name: str, count: int) -> tuple[Path, list[str]]:
    """A workspace with `count` drafting runs recorded (each scene moved aside after)."""
    ws = tmp_path / name
    shutil.copytree(EXAMPLE, ws, ignore=shutil.ignore_patterns(*DEMO_LEFTOVERS))
    ids = []
    for _ in range(count):
        ran = cli("run", "creative_draft_scene", "-w", str(ws), "--json")
        assert ran.returncode == 0, ran.stderr
        ids.append(json.loads(ran.stdout)["run_id"])
        for scene in (ws / SCENES).glob("SCN-04-*"):
            scene.unlink()
    return ws, ids


def prompt_file(tmp_path: Path) -> Path:
    path = tmp_path / "polish.md"
    path.write_text((BUNDLED_DIR / "templates" / "polish_draft.t3.md").read_text() + ADDED)
    return path


def stream_bytes(ws: Path, run_id: str) -> list[str]:
    ctx = Context.open(ws)
    try:
        return [e.model_dump_json() for e in ctx.store.stream(run_id)]
    finally:
        ctx.close()


def log(ws: Path) -> list[Any]:
    ctx = Context.open(ws)
    try:
        return [p.event for p in ctx.store.read_log()]
    finally:
        ctx.close()


def test_an_eval_forks_each_run_at_the_changed_step_and_reports_what_changed(
    tmp_path: Path,
) -> None:
    ws, sources = recorded(tmp_path, "ws", 3)
    before = {s: stream_bytes(ws, s) for s in sources}
    files = sorted(p.relative_to(ws) for p in ws.rglob("*") if ".control-room" not in p.parts)
    ran = cli("eval", "--prompt-file", f"polish_draft={prompt_file(tmp_path)}",
              "--recipe", "creative_draft_scene", "-w", str(ws), "--json")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert sorted(result["sources"]) == sorted(sources)
    report = Path(result["report"]).read_text()
    assert "3 run(s) forked, 0 left out" in report and "polish_draft" in report
    events = log(ws)
    forks = [e for e in events if isinstance(e, RunForked)]
    assert sorted(f.source_run_id for f in forks) == sorted(sources)
    assert all(f.from_step == "polish" and ADDED in f.prompt_texts["polish_draft"] for f in forks)
    for fork in forks:  # no call for the copied steps: only polish and what follows ran live
        mine = log_of(events, fork.originator_id)
        live = [e.step_id for e in mine if isinstance(e, AgentResponded)]
        theirs = log_of(events, fork.source_run_id)
        copied = [e.step_id for e in theirs if isinstance(e, AgentResponded)]
        assert "brief" in copied and "draft" in copied
        assert Counter(live)["brief"] == Counter(copied)["brief"]  # copied, not asked again
    ended = [e for e in events if isinstance(e, EvalForkEnded)]
    assert len(ended) == 3 and all("polish" in e.changed_steps for e in ended)
    assert {s: stream_bytes(ws, s) for s in sources} == before  # the sources untouched
    after = sorted(p.relative_to(ws) for p in ws.rglob("*") if ".control-room" not in p.parts)
    new = {str(p) for p in set(after) - set(files)}
    assert new and all(p.startswith("control-room-reports") for p in new)  # no manuscript write
    assert not (ws / ".control-room" / "evals").exists() or not any(
        (ws / ".control-room" / "evals").rglob("*.md")
    )  # scratch copies removed


def log_of(events: list[Any], run_id: str) -> list[Any]:
    return [e for e in events if e.originator_id == run_id]


def test_a_model_that_fails_every_check_flips_the_runs_and_untouched_runs_are_left_out(
    tmp_path: Path,
) -> None:
    ws, sources = recorded(tmp_path, "ws", 2)
    canon = cli("run", "analytical_prose", "-w", str(ws), "--json")
    assert canon.returncode == 0, canon.stderr
    harsh = {"harsh-1": {"fault": "verdict_fail"}}
    settings = {"providers": {"offline": {"type": "offline", "faults": harsh}}}
    (ws / ".control-room" / "models.json").write_text(json.dumps(settings))
    ran = cli("eval", "--model", "continuity=offline:harsh-1", "--status", "any",
              "-w", str(ws), "--json")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    events = log(ws)
    ended = [e for e in events if isinstance(e, EvalForkEnded)]
    assert sorted(e.source_run_id for e in ended) == sorted(sources)
    # The continuity check now fails: the continuity gate sends the draft back until its
    # rollbacks run out, and the run fails before its DoD (each run's status flips).
    assert all((e.status_before, e.status_after) == ("done", "failed") for e in ended)
    assert all("continuity" in e.changed_steps for e in ended)
    (skipped,) = [e for e in events if isinstance(e, EvalForkSkipped)]
    assert skipped.source_run_id == json.loads(canon.stdout)["run_id"]
    assert "touches no step" in skipped.reason
    report = Path(json.loads(ran.stdout)["report"]).read_text()
    assert "2 run status(es) changed" in report and "## Left out" in report


def test_a_bad_eval_is_refused_with_a_message(tmp_path: Path) -> None:
    ws, _ = recorded(tmp_path, "ws", 1)
    nothing = cli("eval", "--recipe", "creative_draft_scene", "-w", str(ws))
    assert nothing.returncode == 64 and "name a change" in nothing.stderr
    none_match = cli("eval", "--model", "critic=offline:offline-deterministic-1",
                     "--recipe", "analytical_prose", "-w", str(ws))  # fmt: skip
    assert none_match.returncode == 64 and "no run matches" in none_match.stderr
    unknown = cli("eval", "--model", "critic=nowhere:x", "-w", str(ws))
    assert unknown.returncode == 64 and "nowhere" in unknown.stderr


@pytest.mark.long
@pytest.mark.timeout(600)
def test_an_eval_killed_after_any_commit_resumes_without_running_a_finished_fork_again(
    tmp_path: Path,
) -> None:
    template, _ = recorded(tmp_path, "template", 2)
    prompt = prompt_file(tmp_path)
    n = 0
    points = 0
    while True:
        n += 1
        ws = tmp_path / f"ws-{n}"
        shutil.copytree(template, ws)
        killed = cli("eval", "--prompt-file", f"polish_draft={prompt}", "-w", str(ws), "-q",
                     env={"CONTROLROOM_CRASH_AFTER_COMMIT": str(n)})  # fmt: skip
        if killed.returncode != -9:
            assert killed.returncode == 0, killed.stderr
            break
        points += 1
        if any(isinstance(e, RunStarted) and e.recipe_id == "eval" for e in log(ws)):
            resumed = cli("resume", "-w", str(ws), "-q")
            assert resumed.returncode == 0, (n, resumed.stderr)
        else:
            again = cli("eval", "--prompt-file", f"polish_draft={prompt}", "-w", str(ws), "-q")
            assert again.returncode == 0, (n, again.stderr)
        events = log(ws)
        started = Counter(e.source_run_id for e in events if isinstance(e, EvalForkStarted))
        forked = Counter(e.source_run_id for e in events if isinstance(e, RunForked))
        ended = Counter(e.source_run_id for e in events if isinstance(e, EvalForkEnded))
        assert set(started.values()) == {1} and len(started) == 2, (n, started)
        assert set(forked.values()) == {1} and set(ended.values()) == {1}, (n, forked, ended)
        shutil.rmtree(ws)
    assert points > 5


def test_an_eval_of_a_model_served_over_http_reports_its_changed_outputs(
    tmp_path: Path,
) -> None:
    """The changed role on a server on 127.0.0.1 speaking the OpenAI API: the forks call
    it from the first step it serves on; the report and analytics say what moved."""
    from tests.fake_llm import Script, openai_app, serve

    ws, sources = recorded(tmp_path, "ws", 2)
    script = Script(["prose"])
    with serve(openai_app(script)) as base:
        lab = {"type": "openai", "base_url": f"{base}/v1", "api_key_env": "LAB_KEY",
               "max_retries": 1, "backoff_s": 0}  # fmt: skip
        (ws / ".control-room" / "models.json").write_text(json.dumps({"providers": {"lab": lab}}))
        ran = cli("eval", "--model", "editor=lab:editor-2", "-w", str(ws), "--json",
                  env={"LAB_KEY": "k"})  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert len(script.requests) >= 2  # the forks' polish steps, nothing before them
    events = log(ws)
    ended = [e for e in events if isinstance(e, EvalForkEnded)]
    assert sorted(e.source_run_id for e in ended) == sorted(sources)
    assert all(e.from_step == "polish" and e.output_diff_lines.get("polish") for e in ended)
    report = Path(json.loads(ran.stdout)["report"]).read_text()
    assert "## Outputs that moved most" in report and "`polish`" in report
    eval_id = json.loads(ran.stdout)["run_id"]
    rows = cli("analytics", "report", "evals", "--json", "-w", str(ws))
    assert rows.returncode == 0, rows.stderr
    table = json.loads(rows.stdout)
    found = dict(zip(table["columns"], table["rows"][0], strict=True))
    assert found["eval_run_id"] == eval_id and found["forks"] == 2
