"""The official SDKs' exceptions, translated into one classified, scrubbed error.

OpenAI's and Anthropic's clients name their exceptions alike, so one translation serves
both. Errors raised while a stream is being read (an error event, a cut connection) are
told apart from errors before it started: they are retried.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from controlroom.domain.errors import ModelCallError, ModelConfigError
from controlroom.models.port import scrub


def import_sdk(provider: str, module: str, extra: str) -> ModuleType:
    """The vendor's client package, or a configuration error saying which extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ModelConfigError(
            f"provider '{provider}' needs the {module} client package: "
            f"pip install 'controlroom[{extra}]'"
        ) from None


def _transport_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """(timeouts, other transport errors) of the HTTP clients the SDKs are built on."""
    timeouts: list[type[Exception]] = []
    transport: list[type[Exception]] = []
    for name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        timeouts.append(module.TimeoutException)
        transport.append(module.TransportError)
    return tuple(timeouts), tuple(transport)


_TIMEOUTS, _TRANSPORT = _transport_errors()


async def parsed_stream(raw: Any) -> Any:
    """The stream of a raw response (SDKs differ on whether `parse` is awaitable)."""
    parsed = raw.parse()
    return await parsed if inspect.isawaitable(parsed) else parsed


def host_of(base_url: str) -> str:
    parts = urlsplit(base_url)
    return parts.netloc or base_url


@contextmanager
def translated(sdk: ModuleType, secret: str | None, base_url: str) -> Iterator[None]:
    """Before the reply streams: status codes decide; connection trouble names the host."""
    host = host_of(base_url)

    def error(kind: str, exc: Exception, status: int | None = None, note: str = "") -> Exception:
        return ModelCallError(kind, note + scrub(str(exc) or type(exc).__name__, secret), status)

    try:
        yield
    except ModelCallError:
        raise
    except sdk.RateLimitError as exc:
        raise error("rate_limited", exc, exc.status_code) from None
    except sdk.APIStatusError as exc:
        if exc.status_code < 300:  # an error event inside a stream that began with 200
            raise error("stream_error", exc, note="error event mid-stream: ") from None
        kind = "server_error" if exc.status_code >= 500 else "rejected"
        raise error(kind, exc, exc.status_code, note=f"{host}: ") from None
    except (sdk.APITimeoutError, *_TIMEOUTS) as exc:
        raise error("timeout", exc, note=f"{host} went silent: ") from None
    except sdk.APIConnectionError as exc:
        raise error("connection", exc, note=f"cannot reach {base_url}: ") from None
    except _TRANSPORT as exc:  # the connection dropped while the reply streamed
        raise error("incomplete", exc, note=f"{host} cut the stream: ") from None
    except sdk.APIError as exc:  # an `error` object inside an OpenAI stream
        raise error("stream_error", exc, note="error event mid-stream: ") from None
    except ValueError as exc:  # a reply that is not valid JSON
        raise error("unusable", exc, note="malformed response: ") from None
    except RecursionError:  # the SDK parsed an event nested too deep to read
        raise ModelCallError(
            "unusable", "malformed response: an event nested too deeply to read"
        ) from None
