"""The official SDKs' exceptions, translated into one classified, scrubbed error.

OpenAI's and Anthropic's clients name their exceptions alike, so one translation serves
both.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

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


@contextmanager
def translated(sdk: ModuleType, secret: str | None) -> Iterator[None]:
    def error(kind: str, exc: Exception, status: int | None = None, note: str = "") -> Exception:
        return ModelCallError(kind, note + scrub(str(exc) or type(exc).__name__, secret), status)

    try:
        yield
    except sdk.RateLimitError as exc:
        raise error("rate_limited", exc, exc.status_code) from None
    except sdk.APIStatusError as exc:
        kind = "server_error" if exc.status_code >= 500 else "rejected"
        raise error(kind, exc, exc.status_code) from None
    except sdk.APITimeoutError as exc:
        raise error("timeout", exc) from None
    except sdk.APIConnectionError as exc:
        raise error("connection", exc) from None
    except (sdk.APIError, ValueError) as exc:  # ValueError: a reply that is not valid JSON
        raise error("unusable", exc, note="malformed response: ") from None
