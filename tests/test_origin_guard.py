"""Only this server's own pages and clients that are not browsers change anything, and only
requests for a host it serves are answered (CSRF and DNS rebinding, issue 24)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from starlette.responses import HTMLResponse
from starlette.types import Receive, Scope, Send

from controlroom.api.app import create_app
from controlroom.api.origin_guard import ServedHosts, allowed_hosts, split_authority
from controlroom.engine.context import Context
from controlroom.engine.settings import SettingsError
from tests.live import live_server, serve_app
from tests.test_cli_e2e import CLI, cli

if TYPE_CHECKING:
    from playwright.sync_api import Browser

JSON = {"content-type": "application/json"}
START = {"recipe_id": "structural_canon"}
CHROMIUM = shutil.which("chromium")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


# --- Which hosts a server answers to ---------------------------------------------------


def test_a_host_header_is_split_into_its_name_and_port() -> None:
    assert split_authority("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert split_authority("LocalHost.") == ("localhost", None)
    assert split_authority("[::1]:8765") == ("::1", 8765)
    assert split_authority("::1") == ("::1", None)
    for nonsense in ("", "a b", "[::1", "[evil]:1", "x:port", "x:123456", "é.example"):
        assert split_authority(nonsense) is None, nonsense


def test_a_server_on_loopback_answers_to_every_loopback_name_and_no_other() -> None:
    for bound in ("127.0.0.1", "localhost", "::1"):
        hosts = ServedHosts.bound_to(bound)
        assert all(hosts.serves(name) for name in ("127.0.0.1", "localhost", "::1"))
        assert not hosts.serves("evil.example")
        assert not hosts.serves("192.168.1.5")


def test_a_server_on_every_address_answers_to_addresses_but_not_to_strange_names() -> None:
    hosts = ServedHosts.bound_to("0.0.0.0")
    assert hosts.serves("192.168.1.5") and hosts.serves("::1") and hosts.serves("localhost")
    assert not hosts.serves("evil.example")
    assert ServedHosts.bound_to("::", ["box.lan"]).serves("box.lan")


def test_the_allowed_hosts_setting_adds_names_or_any_and_refuses_urls() -> None:
    assert allowed_hosts({}) == ()
    names = allowed_hosts({"CONTROLROOM_ALLOWED_HOSTS": " Control.Example , ,[::2]"})
    assert names == ("control.example", "::2")
    hosts = ServedHosts.bound_to("127.0.0.1", names)
    assert hosts.serves("control.example") and not hosts.serves("evil.example")
    assert ServedHosts.bound_to("127.0.0.1", ["*"]).serves("anything.example")
    for bad in ("https://control.example", "control.example:443", "a b"):
        with pytest.raises(SettingsError, match=re.escape(bad)):
            allowed_hosts({"CONTROLROOM_ALLOWED_HOSTS": bad})


# --- Through a real server on 127.0.0.1 ---------------------------------------------------


@pytest.fixture
def base(workspace: Path) -> Iterator[str]:
    with live_server(workspace) as url:
        yield url


def runs(base: str) -> list[object]:
    listed: list[object] = httpx.get(f"{base}/api/runs", timeout=30).json()
    return listed


@pytest.mark.e2e
def test_a_text_plain_post_is_refused_and_starts_nothing(base: str) -> None:
    response = httpx.post(
        f"{base}/api/runs",
        content=b'{"recipe_id": "structural_canon"}',
        headers={"content-type": "text/plain"},
        timeout=30,
    )
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"
    assert response.json()["error"]["field"] == "content-type"
    untyped = httpx.post(f"{base}/api/runs", content=b'{"recipe_id": "x"}', timeout=30)
    assert untyped.status_code == 415
    assert runs(base) == []


@pytest.mark.e2e
@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "https://evil.example"},
        {"origin": "null"},
        {"origin": "http://127.0.0.1:1"},  # the same machine, another port: another origin
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},
    ],
)
def test_a_change_from_another_site_is_refused(base: str, headers: dict[str, str]) -> None:
    started = httpx.post(f"{base}/api/runs", json=START, headers=headers, timeout=30)
    assert started.status_code == 403, started.text
    assert started.json()["error"]["code"] == "cross_site"
    bare = httpx.post(f"{base}/api/runs/run_nope/cancel", headers=headers, timeout=30)
    assert bare.status_code == 403  # a POST without a body is checked all the same
    assert runs(base) == []


@pytest.mark.e2e
def test_a_host_not_served_is_refused_for_reads_too(base: str) -> None:
    for path in ("/api/runs", "/openapi.json", "/"):
        response = httpx.get(f"{base}{path}", headers={"host": "evil.example"}, timeout=30)
        assert response.status_code == 421, path
        assert response.json()["error"]["code"] == "misdirected_host"
        assert "CONTROLROOM_ALLOWED_HOSTS" in response.json()["error"]["message"]
    port = base.rsplit(":", 1)[1]
    for name in (f"localhost:{port}", f"[::1]:{port}", f"127.0.0.1:{port}"):
        assert httpx.get(f"{base}/api/runs", headers={"host": name}, timeout=30).status_code == 200


@pytest.mark.e2e
def test_a_json_post_from_the_servers_own_page_is_accepted(base: str) -> None:
    own = {"origin": base, "sec-fetch-site": "same-origin"}
    started = httpx.post(f"{base}/api/runs", json=START, headers=own, timeout=30)
    assert started.status_code == 201, started.text
    port = base.rsplit(":", 1)[1]
    by_name = {"host": f"localhost:{port}", "origin": f"http://localhost:{port}"}
    again = httpx.post(f"{base}/api/runs", json=START, headers=by_name, timeout=30)
    assert again.status_code == 201, again.text
    cancel = httpx.post(f"{base}/api/runs/run_nope/cancel", headers=own, timeout=30)
    assert cancel.status_code == 404  # past the guard: no body needs no content type
    assert len(runs(base)) == 2


@pytest.mark.e2e
def test_a_client_that_is_not_a_browser_is_accepted(base: str) -> None:
    with httpx.Client(base_url=base, timeout=30) as client:  # no Origin, no Sec-Fetch-Site
        started = client.post("/api/runs", json=START)
        assert started.status_code == 201, started.text
        assert client.post("/api/runs/run_nope/cancel").status_code == 404
        assert client.delete("/api/runs").status_code == 405
        assert len(client.get("/api/runs").json()) == 1


@pytest.mark.e2e
def test_behind_a_proxy_the_names_from_the_setting_are_served(workspace: Path) -> None:
    ctx = Context.open(workspace)
    hosts = ServedHosts.bound_to("127.0.0.1", ["control.example"])
    try:
        with serve_app(create_app(ctx, hosts=hosts)) as url:
            proxied = {"host": "control.example"}
            assert httpx.get(f"{url}/api/runs", headers=proxied, timeout=30).status_code == 200
            # A proxy that rewrites Host: the page's origin is the proxy's name.
            page = {"origin": "https://control.example", "sec-fetch-site": "same-origin"}
            started = httpx.post(f"{url}/api/runs", json=START, headers=page, timeout=30)
            assert started.status_code == 201, started.text
            other = {"origin": "https://evil.example"}
            assert (
                httpx.post(f"{url}/api/runs", json=START, headers=other, timeout=30).status_code
                == 403
            )
    finally:
        ctx.close()


@pytest.mark.e2e
def test_serve_answers_to_its_own_names_and_those_of_the_setting(workspace: Path) -> None:
    env = {**os.environ, "CONTROLROOM_ALLOWED_HOSTS": "control.example"}
    server = subprocess.Popen(
        [CLI, "serve", "--port", "0", "-w", str(workspace)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert server.stderr is not None
        found = re.search(r"on (http://127\.0\.0\.1:\d+)$", server.stderr.readline().strip())
        assert found
        url = found.group(1)
        deadline = time.monotonic() + 20
        while True:
            try:
                answer = httpx.get(f"{url}/api/runs", headers={"host": "control.example"})
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server never answered"
                time.sleep(0.05)
        assert answer.status_code == 200
        assert httpx.get(f"{url}/api/runs", headers={"host": "evil.example"}).status_code == 421
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=20)
    assert server.returncode == 0


@pytest.mark.e2e
def test_serve_refuses_a_malformed_allowed_hosts_setting(workspace: Path) -> None:
    result = cli(
        "serve", "-w", str(workspace), env={"CONTROLROOM_ALLOWED_HOSTS": "https://x.example"}
    )
    assert result.returncode == 64
    assert "CONTROLROOM_ALLOWED_HOSTS" in result.stderr and "Traceback" not in result.stderr


# --- In a real browser ----------------------------------------------------------------

ATTACK = """<!doctype html><title>a page the user visits</title><script>
window.attack = async (target) => {
  await fetch(target + "/api/runs", {method: "POST", mode: "no-cors",
    headers: {"Content-Type": "text/plain"}, body: '{"recipe_id": "structural_canon"}'});
  await fetch(target + "/api/runs", {method: "POST", mode: "no-cors",
    body: '{"recipe_id": "structural_canon"}'});
  return "sent";
};
</script>"""


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - only without the dev extra
        if IN_CI:
            raise
        pytest.skip("playwright is not installed")
    if CHROMIUM is None:
        if IN_CI:
            raise RuntimeError("CI runs the browser tests: install Debian's chromium package")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            # evil.example is the attacker's name, rebound to this machine.
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--host-resolver-rules=MAP evil.example 127.0.0.1",
            ],
        )
        yield browser
        browser.close()


async def attacker_site(scope: Scope, receive: Receive, send: Send) -> None:
    """Another site's page, served from this machine (as Chromium lets it reach loopback)."""
    if scope["type"] == "http":
        await HTMLResponse(ATTACK)(scope, receive, send)


@pytest.mark.e2e
def test_a_page_on_another_site_cannot_start_a_run_in_chromium(
    base: str, chromium: Browser
) -> None:
    page = chromium.new_page()
    try:
        with serve_app(attacker_site) as attacker:
            page.goto(attacker.replace("127.0.0.1", "evil.example") + "/")
            assert page.evaluate("target => window.attack(target)", base) == "sent"
        assert runs(base) == []
        page.goto(base + "/")  # the dashboard, on its own origin, still reads the API
        assert page.evaluate("() => fetch('/api/runs').then(r => r.status)") == 200
    finally:
        page.close()


@pytest.mark.e2e
def test_a_rebound_name_cannot_read_the_api_in_chromium(base: str, chromium: Browser) -> None:
    page = chromium.new_page()
    try:
        port = base.rsplit(":", 1)[1]
        response = page.goto(f"http://evil.example:{port}/api/runs")
        assert response is not None and response.status == 421
    finally:
        page.close()
