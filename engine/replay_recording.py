"""A recorded run's model replies, keyed by the sha256 of the request they answered, and a
model port that answers from them: a request the recording does not hold is refused
loudly, never sent anywhere.

Every reply event names its request (`request_ref`, the `ModelRequestRecorded.ref`): a
step's reply, a rejected reply its contract asked again after, a micro-call, a ladder
rung's call, a loop's draft. The port computes each new request's body exactly as the
provider would send it (the provider client's own `request_body`), so a changed prompt
template, recipe, tool output or model gives another hash, and is caught.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controlroom.domain.canonical import sha256_json
from controlroom.domain.errors import ControlRoomError, ModelCallError
from controlroom.domain.events import DomainEvent
from controlroom.domain.run_events import (
    AgentReplyRejected,
    AgentResponded,
    ModelAttemptFailed,
    TokenUsage,
)
from controlroom.models.port import ModelClient, ModelRequest, ModelResponse, TextSink

#: What differs between a run and its replay however faithful the replay: the ids the
#: engine draws (runs, sessions, traces, task packets, receipts) and the clock's times.
_VOLATILE = re.compile(
    r"\b(run|sess|tr|pkt|rcpt|conf|plan)_[0-9a-f]{16,32}\b"
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?"
)


def run_neutral(text: str) -> str:
    """`text` with every drawn id and timestamp replaced by a placeholder."""
    return _VOLATILE.sub(lambda m: f"{m.group(1)}_*" if m.group(1) else "<time>", text)


def neutral_key(body: Mapping[str, Any]) -> str:
    """A request's hash with its drawn ids and times left out: how a replay finds the
    reply to a request that names its own run (a task packet's id, time and requester)."""
    return "neutral:" + sha256_json(run_neutral(json.dumps(body, sort_keys=True)))


@dataclass(frozen=True)
class RecordedReply:
    #: None when the event did not keep the reply whole (it cannot be given again).
    text: str | None
    usage: TokenUsage
    #: A failed attempt, given again as the same failure: (kind, HTTP status, message).
    failure: tuple[str, int | None, str] | None = None


def _reply_text(event: DomainEvent) -> str | None:
    if isinstance(event, AgentResponded):
        # `output` is the contract's JSON as extracted: given again, it yields the same
        # slot even when the raw reply was fenced or cut to its head and tail.
        whole_raw = event.raw_output is not None and event.raw_output_digest is None
        return event.raw_output if whole_raw else event.output
    if isinstance(event, AgentReplyRejected):
        return event.reply if event.reply_digest is None else None
    output = getattr(event, "output", None)
    return output if isinstance(output, str) else None


def _usage(event: DomainEvent) -> TokenUsage:
    usage = getattr(event, "usage", None)
    if isinstance(usage, TokenUsage):
        return usage
    return TokenUsage(
        input_tokens=int(getattr(event, "input_tokens", 0) or 0),
        output_tokens=int(getattr(event, "output_tokens", 0) or 0),
    )


def recorded_replies(events: Iterable[DomainEvent]) -> dict[str, list[RecordedReply]]:
    """Each request's replies in the order they came (the same reply recorded twice in a
    row, as a checked loop's completion repeats its accepted draft, counted once)."""
    replies: dict[str, list[RecordedReply]] = {}
    for event in events:
        ref = getattr(event, "request_ref", None)
        if not isinstance(ref, str):
            continue
        known = replies.setdefault(ref, [])
        if isinstance(event, ModelAttemptFailed):
            # A failed attempt fails again in the replay: the retries, the escalation
            # ladder and the person it reached are replayed as they happened.
            failure = (event.kind, event.status, event.message)
            known.append(RecordedReply(None, TokenUsage(), failure))
            continue
        reply = RecordedReply(_reply_text(event), _usage(event))
        if not known or known[-1].text != reply.text or known[-1].failure is not None:
            known.append(reply)
    return replies


class ReplayMissError(ControlRoomError):
    """A request the recording holds no reply for: the step fails with this."""


@dataclass(frozen=True)
class RequestMiss:
    ref: str
    body: dict[str, Any]
    agent_archetype: str
    prompt_type: str
    reason: str


@dataclass
class Recording:
    """The replies still to give (a request asked several times gets its replies in
    order, the last one again after that) and the requests that had none."""

    replies: dict[str, list[RecordedReply]]
    misses: list[RequestMiss] = field(default_factory=list)
    answered: int = 0
    #: Each recorded request's `neutral_key` -> its ref (unset: exact matches only).
    neutral: dict[str, str] = field(default_factory=dict)
    #: Requests answered through their neutral key (they named the run's own ids).
    answered_neutral: int = 0

    def answer(self, ref: str) -> RecordedReply | None:
        queue = self.replies.get(ref)
        if not queue:
            return None
        return queue.pop(0) if len(queue) > 1 else queue[0]


def generic_body(request: ModelRequest) -> dict[str, Any]:
    """What `engine/model_call.body_of` records for a client that cannot say its body."""
    messages = [{"role": "system", "content": request.system}] if request.system else []
    messages.append({"role": "user", "content": request.prompt})
    return {"model": request.model, "messages": messages, **request.params}


class ReplayClient:
    """The model port of a replay: answers from the recording, by the request's sha256."""

    def __init__(
        self,
        provider: str,
        shaper: ModelClient | None,
        recording: Recording,
        shaper_problem: str | None = None,
    ) -> None:
        self.provider = provider
        #: The provider's real client, used only to build the body it would send.
        self._shaper = shaper
        self._shaper_problem = shaper_problem
        self._recording = recording

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        build = getattr(self._shaper, "request_body", None)
        if build is None:
            return generic_body(request)
        body: dict[str, Any] = build(request)
        return body

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        body = self.request_body(request)
        ref = "sha256:" + sha256_json(body)
        reply = self._recording.answer(ref)
        recorded_as = self._recording.neutral.get(neutral_key(body))
        if reply is None and recorded_as is not None:
            reply = self._recording.answer(recorded_as)
            if reply is not None:
                self._recording.answered_neutral += 1
        if reply is None or (reply.text is None and reply.failure is None):
            if reply is None:
                reason = "not in the recording"
                if self._shaper_problem:
                    reason += f" (provider '{self.provider}': {self._shaper_problem})"
            else:
                reason = "recorded, but its reply was not kept whole"
            self._recording.misses.append(
                RequestMiss(ref, body, request.agent_archetype, request.prompt_type, reason)
            )
            raise ReplayMissError(
                f"replay: request {ref} of {request.agent_archetype}/{request.prompt_type} "
                f"is {reason}"
            )
        self._recording.answered += 1
        if reply.failure is not None:
            kind, status, message = reply.failure
            failed = ModelCallError(kind, "", status)
            failed.args = (message,)  # told as it was: a later prompt may quote it
            raise failed
        assert reply.text is not None  # a reply not kept whole is a miss (above)
        if on_text is not None:
            on_text(reply.text)
        return ModelResponse(text=reply.text, usage=reply.usage)


def replay_clients(
    providers: Mapping[str, Any], recording: Recording, make: Any
) -> dict[str, ModelClient]:
    """A replay client for every configured provider; `make(name, config)` builds the
    provider's real client to shape bodies (a provider it cannot build shapes none, and
    each of its requests is then reported as a miss saying why)."""
    clients: dict[str, ModelClient] = {}
    for name, config in providers.items():
        try:
            shaper, problem = make(name, config), None
        except ControlRoomError as exc:
            shaper, problem = None, str(exc)
        clients[name] = ReplayClient(name, shaper, recording, problem)
    return clients
