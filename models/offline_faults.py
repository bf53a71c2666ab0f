"""How a faulty offline model answers: as a real model failing that way would reach the
engine (`models/offline.py` lists the faults, `models/config.py` configures them).

Nothing here counts calls: what a faulty model answers depends only on its fault and on the
request, so a run killed and resumed takes the same path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from controlroom.domain.errors import ModelCallError
from controlroom.models import offline_roles as roles
from controlroom.models.config import OfflineFault, OfflineFaultKind
from controlroom.models.port import ModelRequest

Inputs = list[tuple[str, str]]
Handler = Callable[[str, Inputs], str]

#: What marks a reviewer's findings in a writer's prompt (a rollback's prompt addition):
#: a fault with `until_feedback` is over once the user message carries it.
FEEDBACK_MARK = "<review_feedback"
#: The `prose` fault's answer, whatever was asked.
PROSE_REPLY = "I think the scene works well."

#: A verdict's failing value, in order of preference, when its contract allows it.
_FAILING_VERDICTS = ("revise", "fail", "failed", "reject", "rejected", "follow_up")
_WORD = re.compile(r"\S+")


def active(fault: OfflineFault | None, request: ModelRequest) -> OfflineFaultKind | None:
    """The fault this request meets: none once a reviewer's feedback is in the prompt, for
    a fault that lasts `until_feedback`."""
    if fault is None or (fault.until_feedback and FEEDBACK_MARK in request.prompt):
        return None
    return fault.fault


def server_error(request: ModelRequest) -> ModelCallError:
    """What a provider raises for a 500 (`models/sdk_errors.py`): retried by the engine."""
    return ModelCallError(
        "server_error",
        f"offline: model '{request.model}' answered 500 Internal Server Error (its http_500 fault)",
        500,
    )


def max_tokens(params: Mapping[str, Any]) -> int | None:
    """The token limit the request set, if any."""
    for name in ("max_tokens", "max_completion_tokens"):
        value = params.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def cut(text: str, limit: int | None) -> str:
    """The text as far as a model stopped at its token limit: half its words at most (so
    it is cut whatever the limit), and no more than `limit` tokens' worth (about three
    words for four tokens)."""
    words = list(_WORD.finditer(text))
    if not words:
        return ""
    keep = max(1, len(words) // 2)
    if limit is not None:
        keep = max(1, min(keep, limit * 3 // 4))
    return text[: words[keep - 1].end()]


def reply(kind: OfflineFaultKind, request: ModelRequest, handler: Handler) -> str:
    """The faulty model's whole reply (for `cut`, before it is cut; `http_500` never gets
    here)."""
    task, inputs = request.task_description, list(request.inputs.items())
    if kind == "prose":
        return PROSE_REPLY
    if kind == "contradict_canon":
        return roles.SLIPS.get(request.prompt_type, handler)(task, inputs)
    if kind == "verdict_fail":
        packet = roles.FAILING.get(request.prompt_type)
        if packet is not None:
            return packet(task, inputs)
        return failing(request, handler(task, inputs), inputs)
    return handler(task, inputs)


def failing(request: ModelRequest, text: str, inputs: Inputs) -> str:
    """A contracted reply turned into a failing one: a continuity report that does not
    pass (with a conflict), a critic's verdict `revise` (with a problem), and any other
    reply's `pass` false and `verdict` failing (with a finding where the contract lists
    them). A reply with no contract, or not a JSON object, is left as it is."""
    if request.contract_name is None and request.response_schema is None:
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if not isinstance(value, dict):
        return text
    if request.contract_name == "continuity_report":
        value = roles.failing_continuity(value, inputs)
    elif request.contract_name == "verdict":
        value = roles.failing_verdict(value)
    else:
        value = _failing_fields(value, request.response_schema or {}, inputs)
    return json.dumps(value, indent=2, ensure_ascii=False)


def _failing_fields(
    value: dict[str, Any], schema: Mapping[str, Any], inputs: Inputs
) -> dict[str, Any]:
    failed = dict(value)
    if isinstance(failed.get("pass"), bool):
        failed["pass"] = False
    if "verdict" in failed:
        allowed = (schema.get("properties") or {}).get("verdict", {}).get("enum") or []
        failed["verdict"] = next(
            (v for v in _FAILING_VERDICTS if v in allowed),
            next((v for v in reversed(allowed) if v != failed["verdict"]), failed["verdict"]),
        )
    finding = _finding(inputs)
    if failed.get("findings") == []:  # consistency_review
        failed["findings"] = [
            {"type": "canon_conflict", "location": "the text", "message": finding}
        ]
        if isinstance(failed.get("summary"), str):
            failed["summary"] = "1 consistency finding(s) across the checked scenes"
    if failed.get("failed_checks") == []:  # scene_validity
        failed["failed_checks"] = ["beat coverage"]
    if failed.get("conflicts") == [] and failed.get("gaps") is not None:  # canon_gaps
        failed["conflicts"] = [finding]
    return failed


def _finding(inputs: Inputs) -> str:
    fact, sentence = roles.checked_fact(inputs)
    if fact is None:
        return "the text could not be checked against any canon fact"
    found = roles.contrary(fact.attribute.strip().lower(), fact.value) or "something else"
    where = f" (in “{sentence}”)" if sentence else ""
    verb = "are" if fact.attribute.strip().lower() == "eyes" else "is"
    return f"{fact.entity}'s {fact.attribute} {verb} '{found}' but canon says '{fact.value}'{where}"
