"""The one place requests are admitted: every request names a host this server serves, and
every change comes from this server's own pages or from a client that is not a browser.

Without a token (the default on loopback) a web page the user visits could otherwise post
`text/plain` bodies to start runs (CSRF), or reach the API under a name of its own that it
points at 127.0.0.1 (DNS rebinding) and read everything. Browsers mark what they send: a
cross-site page cannot send `Content-Type: application/json` without a CORS preflight (which
this server never grants), and they send `Origin` and `Sec-Fetch-Site` with every POST. curl,
the CLI and Python clients send neither, and are let through.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from controlroom.api.errors import HttpError, error_body
from controlroom.engine.settings import SettingsError

ALLOWED_HOSTS_VAR = "CONTROLROOM_ALLOWED_HOSTS"
#: The methods that change something; the others only read.
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: Served together: a server bound to one of them answers to all three names.
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
#: Bound to every address of the machine.
ANY_ADDRESS = frozenset({"", "0.0.0.0", "::"})
#: Who sent a request, by the browser's own account: its page, or the user (a bookmark).
OWN_FETCH_SITES = frozenset({b"same-origin", b"none"})
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_NAME = re.compile(r"[a-z0-9_.-]+")


def split_authority(authority: str) -> tuple[str, int | None] | None:
    """`name[:port]` or `[v6]:port` as (lower-case name, without brackets or a final dot;
    port), or None when it is not a host at all."""
    text = authority.strip().lower()
    port_text = ""
    if text.startswith("["):
        name, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:]
        if not _is_ip(name):
            return None
    elif text.count(":") > 1:  # a bare IPv6 address, without a port
        name = text
        if not _is_ip(name):
            return None
    else:
        name, _, port_text = text.partition(":")
        name = name.removesuffix(".")
        if not _NAME.fullmatch(name):
            return None
    if port_text and not (port_text.isascii() and port_text.isdigit() and len(port_text) <= 5):
        return None
    return name, int(port_text) if port_text else None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def allowed_hosts(environ: Mapping[str, str]) -> tuple[str, ...]:
    """`CONTROLROOM_ALLOWED_HOSTS`: more names the server answers to (behind a proxy),
    comma-separated, or `*` for any; a malformed entry is a settings error naming it."""
    names: list[str] = []
    for entry in environ.get(ALLOWED_HOSTS_VAR, "").split(","):
        entry = entry.strip()
        if not entry:
            continue
        parsed = None if entry == "*" else split_authority(entry)
        if entry != "*" and (parsed is None or parsed[1] is not None):
            raise SettingsError(
                f"{ALLOWED_HOSTS_VAR}: '{entry}' is not a host name; give names or addresses "
                "without a scheme or port, separated by commas, or * for any"
            )
        names.append("*" if parsed is None else parsed[0])
    return tuple(names)


@dataclass(frozen=True)
class ServedHosts:
    """The names a request's `Host` may give. The port is not compared: `ssh -L` and
    container port mappings reach the server under another port, and a rebinding page
    differs by its name, never by its port."""

    names: frozenset[str]
    #: From the setting: names of this server's own pages when a proxy rewrites `Host`.
    extra: frozenset[str] = frozenset()
    #: Bound to every address: any IP address (never rebound, unlike a name).
    any_ip: bool = False
    #: `*` in the setting.
    any_name: bool = False

    @classmethod
    def bound_to(cls, address: str, extra: Iterable[str] = ()) -> ServedHosts:
        """The hosts of a server listening on `address` (`serve --host`), and `extra`."""
        given = set(extra)
        named = frozenset(given - {"*"})
        parsed = split_authority(address)
        name = parsed[0] if parsed is not None else address.strip().lower()
        any_ip = name in ANY_ADDRESS
        if name in LOOPBACK_NAMES:
            served = LOOPBACK_NAMES
        elif any_ip:  # and the machine's own name, as a neighbour would type it
            served = LOOPBACK_NAMES | {socket.gethostname().lower()}
        else:
            served = frozenset({name})
        return cls(served | named, named, any_ip=any_ip, any_name="*" in given)

    def serves(self, name: str) -> bool:
        if self.any_name or name in self.names:
            return True
        return self.any_ip and _is_ip(name)


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


def _text(raw: bytes) -> str:
    return raw.decode("latin-1")


def _is_same_origin(origin: bytes, host: tuple[str, int | None], scheme: str) -> bool:
    """`Origin` names the server the request is addressed to (scheme's default ports
    filled in on both sides)."""
    origin_scheme, sep, authority = _text(origin).strip().lower().partition("://")
    parsed = split_authority(authority) if sep and origin_scheme in DEFAULT_PORTS else None
    if parsed is None:
        return False  # `null` (a sandboxed frame, a file, a redirect) or nonsense
    name, port = parsed
    origin_port = port or DEFAULT_PORTS[origin_scheme]
    host_port = host[1] or DEFAULT_PORTS.get(scheme, 80)
    return (name, origin_port) == (host[0], host_port)


def _has_body(scope: Scope) -> bool:
    if _header(scope, b"transfer-encoding") is not None:
        return True
    length = _header(scope, b"content-length")
    return length is not None and length.strip() != b"0"


class OriginGuard:
    """Pure ASGI: refuse a request for a host not served (421), and a change sent by
    another site (403) or with a body that is not JSON (415), before anything reads it."""

    def __init__(self, app: ASGIApp, hosts: ServedHosts) -> None:
        self.app, self.hosts = app, hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self.refusal(scope)
            if refusal is not None:
                response = JSONResponse(
                    error_body(refusal.code, refusal.message, refusal.field),
                    status_code=refusal.status,
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> HttpError | None:
        raw_host = _header(scope, b"host")
        host = split_authority(_text(raw_host)) if raw_host is not None else None
        # No Host at all is HTTP/1.0 from a script: no browser, so nothing to rebind.
        if raw_host is not None and (host is None or not self.hosts.serves(host[0])):
            shown = _text(raw_host)[:100]
            return HttpError(
                421,
                "misdirected_host",
                f"this server does not answer to the host '{shown}'; to reach it under "
                f"that name, add the name to {ALLOWED_HOSTS_VAR}",
                "host",
            )
        if scope["method"] not in WRITE_METHODS:
            return None
        return self._cross_site(scope, host) or self._not_json(scope)

    def _cross_site(self, scope: Scope, host: tuple[str, int | None] | None) -> HttpError | None:
        site = _header(scope, b"sec-fetch-site")
        if site is not None and site.strip().lower() not in OWN_FETCH_SITES:
            return HttpError(
                403,
                "cross_site",
                f"changes are taken only from this server's own pages; the browser says this "
                f"request comes from another site (Sec-Fetch-Site: {_text(site)[:40]})",
                "sec-fetch-site",
            )
        origin = _header(scope, b"origin")
        if origin is None:
            return None
        if host is not None and _is_same_origin(origin, host, scope.get("scheme", "http")):
            return None
        parsed = split_authority(_text(origin).partition("://")[2])
        if parsed is not None and parsed[0] in self.hosts.extra:
            return None  # our own page, behind a proxy that rewrites Host
        return HttpError(
            403,
            "cross_site",
            f"changes are taken only from this server's own pages, not from the page at "
            f"'{_text(origin)[:100]}' (behind a proxy that rewrites Host, name the page's "
            f"host in {ALLOWED_HOSTS_VAR})",
            "origin",
        )

    def _not_json(self, scope: Scope) -> HttpError | None:
        content_type = _header(scope, b"content-type")
        if content_type is None and not _has_body(scope):
            return None  # a bare POST (cancel, resume): nothing to read
        media = (content_type or b"").partition(b";")[0].strip().lower()
        if media == b"application/json":
            return None
        return HttpError(
            415,
            "unsupported_media_type",
            "send the body as JSON, with Content-Type: application/json",
            "content-type",
        )
