"""Probe: every role of `creative_draft_scene` through a real LiteLLM proxy (its OpenAI and
Anthropic routes) in front of the scripted fake backend of `tests/fake_llm.py`.

Not part of the test suite (LiteLLM is large and not a dependency). To run it:

    python -m venv /tmp/llvenv && /tmp/llvenv/bin/pip install 'litellm[proxy]'
    LITELLM=/tmp/llvenv/bin/litellm .venv/bin/python scripts/litellm_probe.py

Each line: the route, the backend's script, the run's status and the attempt events.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from controlroom.domain.issue import IssueOpened  # noqa: E402
from controlroom.domain.run_events import (  # noqa: E402
    AgentReplyRejected,
    ModelAttemptFailed,
    StopHook,
)
from controlroom.engine.context import Context  # noqa: E402
from controlroom.engine.followers import Followers  # noqa: E402
from controlroom.engine.service import RunRequest, RunService  # noqa: E402
from tests.fake_llm import Script, openai_app, serve  # noqa: E402

CASES: list[tuple[list[str] | None, list[str]]] = [
    # (roles on the proxy: None = every role, backend script)
    (None, ["ok"]),
    (None, ["fenced"]),
    (None, ["preamble"]),
    (None, ["midstream_error", "ok"]),
    (None, ["slow"]),
    (["continuity"], ["stringly", "ok"]),
    (["continuity"], ["prose"]),
    (["continuity"], ["cut", "ok"]),
    (["continuity"], ["refuse_schema"]),
]
CONFIG = """model_list:
  - model_name: house-model
    litellm_params:
      model: hosted_vllm/house-model
      api_base: {backend}/v1
      api_key: backend-key
general_settings:
  master_key: sk-proxy-probe
router_settings:
  disable_cooldowns: true
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def run_case(kind: str, proxy: str, roles: list[str] | None, script: Script) -> str:
    workspace = Path(tempfile.mkdtemp()) / "novel"
    shutil.copytree(ROOT / "examples" / "novel", workspace)
    shutil.rmtree(workspace / ".control-room", ignore_errors=True)
    (workspace / ".control-room").mkdir()
    choice = {"provider": "proxy", "model": "house-model"}
    config: dict[str, object] = {
        "providers": {
            "proxy": {
                "type": kind,
                "base_url": f"{proxy}/v1" if kind == "openai" else proxy,
                "api_key_env": "PROXY_KEY",
                "timeout_s": 30,
                "max_retries": 1,
                "backoff_s": 0.05,
            }
        }
    }
    if roles is None:
        config["default"] = choice
    else:
        config["roles"] = {role: choice for role in roles}
    (workspace / ".control-room" / "models.json").write_text(json.dumps(config))
    ctx = Context.open(workspace)
    try:
        service = RunService(ctx)
        run = asyncio.run(service.execute(service.start(RunRequest("Draft scene 4", {}))))
        Followers(ctx.store).catch_up()
        attempts = [
            type(e).__name__
            for e in ctx.store.stream(run.id)
            if isinstance(e, AgentReplyRejected | StopHook | ModelAttemptFailed)
        ]
        issues = [p.event.kind for p in ctx.store.read_log() if isinstance(p.event, IssueOpened)]
    finally:
        ctx.close()
    return (
        f"{run.status.value:6s} backend_requests={len(script.requests)} attempts={attempts} "
        f"issues={issues} {(run.error or '')[:100]}"
    )


def main() -> int:
    litellm = os.environ.get("LITELLM", "litellm")
    os.environ["PROXY_KEY"] = "sk-proxy-probe"
    script = Script(["ok"])
    with serve(openai_app(script)) as backend:
        port = free_port()
        config = Path(tempfile.mkdtemp()) / "config.yaml"
        config.write_text(CONFIG.format(backend=backend))
        log = open(config.with_suffix(".log"), "w")  # noqa: SIM115
        proxy_args = ["--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
        proc = subprocess.Popen([litellm, *proxy_args], stdout=log, stderr=subprocess.STDOUT)
        proxy = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while not _alive(proxy):
                if time.monotonic() > deadline or proc.poll() is not None:
                    print(f"LiteLLM did not start; see {log.name}", file=sys.stderr)
                    return 1
                time.sleep(1)
            for kind in ("openai", "anthropic"):
                for roles, behaviours in CASES:
                    script.behaviours[:] = behaviours
                    script.requests.clear()
                    outcome = run_case(kind, proxy, roles, script)
                    print(f"{kind:9s} {roles or 'all roles'!s:16s} {behaviours!s:24s} {outcome}")
        finally:
            proc.terminate()
            proc.wait(10)
            log.close()
    return 0


def _alive(proxy: str) -> bool:
    try:
        return httpx.get(f"{proxy}/health/liveliness", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


if __name__ == "__main__":
    raise SystemExit(main())
