"""The status as markdown, in the shape of seed 002's STATUS.md: per pipeline target, the
current iteration and each phase with its state, the current status (blockers, escalations,
consults), the history of iterations, and when it last changed.

A pure function of the views: the same status renders to the same bytes (the time shown is
the last change's, from the log, never the clock), so the export can tell its own file
from anyone else's by its hash.
"""

from __future__ import annotations

from collections.abc import Sequence

from controlroom.projections.status_models import (
    ArchivedIteration,
    CurrentRun,
    Escalation,
    PipelineDetail,
    PipelineStep,
)

ICONS = {
    "done": "✅",
    "running": "🔄",
    "waiting": "🔄",
    "pending": "⬜",
    "skipped": "⏭️",
    "deferred": "⏭️",
    "failed": "❌",
}
LEGEND = "✅ done | 🔄 in progress | ⬜ pending | ⏭️ skipped | ❌ failed"
#: How much of the last gap analysis STATUS.md quotes.
GAP_EXCERPT = 800


def render_status(details: Sequence[PipelineDetail], position: int) -> str:
    """STATUS.md for every pipeline target (one section each)."""
    updated = max((d.updated_at for d in details), default="")
    lines = [
        "# Status",
        "",
        "> Written by Control Room from its event log each time a pipeline's status changes "
        "(`controlroom status`, `GET /api/pipelines`). A hand edit here is never overwritten: "
        "it stops the export until the file is removed.",
        "",
        f"**Last updated:** {_when(updated) or '—'} (log position {position})",
        "",
    ]
    if not details:
        lines += ["No pipeline has run yet.", ""]
    for detail in details:
        lines += render_pipeline(detail, heading="##")
    return "\n".join(lines).rstrip("\n") + "\n"


def render_pipeline(detail: PipelineDetail, heading: str = "#") -> list[str]:
    """One target's section."""
    sub = heading + "#"
    current = detail.current
    lines = [f"{heading} Pipeline `{detail.target}`", ""]
    facts = [
        f"**Recipe:** `{detail.recipe_id}`",
        f"**Iteration:** {detail.iteration}",
        f"**Target id:** `{detail.target_id}`",
    ]
    if current is not None:
        facts.append(f"**Run:** `{current.run_id}` ({current.status})")
        facts.append(f"**Phase:** {_phase(current)}")
    lines += [" · ".join(facts), ""]
    if current is not None:
        lines += [f"{sub} Iteration {detail.iteration}: phases", ""]
        lines += [_step_line(step) for step in current.steps]
        lines += ["", f"Legend: {LEGEND}", ""]
        lines += [f"{sub} Current status", ""]
        lines += _current_status(current)
        lines.append("")
    lines += [f"{sub} History", ""]
    if detail.history:
        lines += [
            "| Run | Result | Deferred | Relaxed | Archive |",
            "|---|---|---|---|---|",
        ]
        lines += [_history_row(h) for h in detail.history]
        lines.append("")
        last = detail.history[-1]
        if last.gap_analysis:
            lines += [f"Gap analysis of iteration {last.number}:", ""]
            lines += [f"> {line}".rstrip() for line in _gap(last.gap_analysis).splitlines()]
            lines.append("")
    else:
        lines += ["No iteration archived yet.", ""]
    lines += [f"_Last changed: {_when(detail.updated_at)} (log position {detail.position})_", ""]
    return lines


def _phase(run: CurrentRun) -> str:
    if run.current_step:
        return f"`{run.current_step}` ({run.status})"
    if run.status in ("done", "partial"):
        return "all phases ended"
    return run.status


def _step_line(step: PipelineStep) -> str:
    icon = ICONS.get(step.state, "⬜")
    role = f", {step.role}" if step.role else ""
    runs = f", run {step.runs} times" if step.runs > 1 else ""
    detail = f": {_one_line(step.detail)}" if step.detail else ""
    return (
        f"- {icon} Phase {step.index}: `{step.step_id}` ({step.kind}{role}) — "
        f"{step.state}{runs}{detail}"
    )


def _current_status(run: CurrentRun) -> list[str]:
    lines = [f"- Run `{run.run_id}`: **{run.status}**" + _outcome(run.outcome)]
    if run.error:
        lines.append(f"- Error: {_one_line(run.error)}")
    for blocker in run.blockers:
        owner = blocker.owner or "a person"
        issue = f", issue `{blocker.issue_id}`" if blocker.issue_id else ""
        answer = (
            f' — answer with `controlroom issues answer {blocker.issue_id} "…"`'
            if blocker.issue_id
            else ""
        )
        lines.append(
            f"- ⛔ Blocker: `{blocker.step_id}` waits for {owner}{issue} since "
            f"{_when(blocker.since)}{answer}"
        )
    if not run.blockers:
        lines.append("- Blockers: none")
    consults = [e for e in run.escalations if e.kind == "consult"]
    if consults:
        lines.append(
            "- Peer consults: " + ", ".join(f"`{e.subject}` ({_when(e.at)})" for e in consults)
        )
    if run.escalations:
        lines.append("- Escalations:")
        lines += [f"  - {_escalation(e)}" for e in run.escalations]
    else:
        lines.append("- Escalations: none")
    return lines


def _escalation(e: Escalation) -> str:
    subject = f" `{e.subject}`" if e.subject else ""
    models = ""
    if e.from_model or e.to_model:
        models = f" ({e.from_model or 'role model'} → {e.to_model or 'same model'})"
    return f"{e.kind}{subject}{models}: {_one_line(e.reason)} — {_when(e.at)}"


def _history_row(h: ArchivedIteration) -> str:
    result = h.result + _outcome(h.outcome)
    return (
        f"| #{h.number} | {_cell(result)} | {h.deferred} | {h.relaxed} | "
        f"`{_cell(h.archive)}` {_when(h.archived_at)} |"
    )


def _outcome(outcome: int | None) -> str:
    return f" (outcome {outcome})" if outcome is not None else ""


def _gap(text: str) -> str:
    text = text.strip()
    return text if len(text) <= GAP_EXCERPT else text[:GAP_EXCERPT].rstrip() + " …"


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _cell(text: str) -> str:
    return _one_line(text).replace("|", "\\|")


def _when(iso: str) -> str:
    """`2026-02-10T14:30:00.123+00:00` as `2026-02-10 14:30:00Z`."""
    if not iso:
        return ""
    text = iso.replace("T", " ")
    for suffix in ("+00:00", "Z"):
        if text.endswith(suffix):
            text = text[: -len(suffix)]
            return text.split(".", 1)[0] + "Z"
    return text.split(".", 1)[0]
