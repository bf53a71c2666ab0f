"""The story of a step's ladder, for the person who must decide (the `needs_human` issue):
every rung, what failed and why, the replies, and what each attempt cost."""

from __future__ import annotations

from controlroom.domain.canonical import sha256_text
from controlroom.domain.events import ModelReplyEvent
from controlroom.domain.flow_events import FlowDecided
from controlroom.domain.ladder import LadderCallRecorded, TriageDecided
from controlroom.domain.run import Run, StepInstance
from controlroom.domain.run_events import AgentReplyRejected, ModelAttemptFailed, StepFailed
from controlroom.engine.context import Context

#: How much of one reply or error the story quotes.
QUOTE_CHARS = 600
#: The story's lines at most (a long ladder is summarised at its end).
MAX_LINES = 120


def human_issue_id(run_id: str, instance_id: str) -> str:
    return "iss_" + sha256_text(f"needs_human:{run_id}:{instance_id}")[:24]


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS] + " …"


def ladder_story(ctx: Context, run: Run, instance: StepInstance) -> str:
    """What a person needs to decide, from the run's own events."""
    step_id = instance.step.step_id
    lines = [
        f"Step '{step_id}' of run {run.id} ({run.recipe.recipe_id if run.recipe else '?'}) "
        f"climbed its escalation ladder and still fails. Answer with "
        f'`controlroom issues answer {human_issue_id(run.id, instance.instance_id)} "…"`: '
        "the step runs again with your resolution in its prompt. Or cancel the run.",
        "",
        f"Task: {run.task.description}",
        "",
        "## What happened",
    ]
    cost = 0.0
    tokens = 0
    calls = 0
    for event in ctx.store.stream(run.id):
        of_step = getattr(event, "step_id", None) == step_id or (
            isinstance(event, FlowDecided) and (event.rung or {}).get("subject") == step_id
        )
        if not of_step:
            continue
        if isinstance(event, ModelReplyEvent):
            facts = event.call()
            calls += 1
            tokens += facts.input_tokens + facts.output_tokens
            cost += facts.cost_usd or 0.0
        elif isinstance(event, AgentReplyRejected):  # paid for too, though refused
            calls += 1
            tokens += event.usage.input_tokens + event.usage.output_tokens
            cost += event.cost_usd or 0.0
        if isinstance(event, FlowDecided) and event.rung:
            lines.append(f"- rung {event.rung.get('kind')}: {event.reason}")
        elif isinstance(event, StepFailed):
            lines.append(
                f"- {event.instance_id or event.step_id} failed: {event.error_type}: "
                f"{_quote(event.error)}"
            )
        elif isinstance(event, AgentReplyRejected):
            lines.append(
                f"  - reply from {event.provider}:{event.model} rejected "
                f"({'; '.join(event.errors[:3])}): {_quote(event.reply)}"
            )
        elif isinstance(event, ModelAttemptFailed):
            line = f"  - call to {event.provider}:{event.model} failed ({event.kind}): "
            line += _quote(event.message)
            if lines and lines[-1].startswith(line):  # the retries of one call: one line
                tries = lines[-1].rsplit(" [×", 1)
                count = int(tries[1].rstrip("]")) + 1 if len(tries) == 2 else 2
                lines[-1] = f"{line} [×{count}]"
            else:
                lines.append(line)
        elif isinstance(event, LadderCallRecorded):
            lines.append(
                f"  - {event.which} by {event.provider}:{event.model}: {_quote(event.output)}"
            )
        elif isinstance(event, TriageDecided):
            lines.append(
                f"  - triage: {event.asked} at confidence {event.confidence:.2f} → "
                f"{event.decision}{f' ({event.overruled})' if event.overruled else ''}: "
                f"{_quote(event.reason)}"
            )
    if len(lines) > MAX_LINES:
        lines = [
            *lines[:8],
            f"- … {len(lines) - MAX_LINES + 8} earlier lines left out",
            *lines[-(MAX_LINES - 9) :],
        ]
    lines += [
        "",
        f"## Cost so far of step '{step_id}'",
        f"{calls} model replies, {tokens} tokens, ${cost:.4f} (rejected attempts included)",
    ]
    return "\n".join(lines)
