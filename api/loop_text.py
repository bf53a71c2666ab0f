"""An adaptive loop's turns as `controlroom show` prints them (the `loop` of `RunDetail`,
dumped, or of the fold's own state: `projections/loop_turns.py`)."""

from __future__ import annotations

from typing import Any


def loop_lines(loop: dict[str, Any]) -> list[str]:
    """A heading, one line per turn, and the ending."""
    turns: list[dict[str, Any]] = loop.get("turns") or []
    lines = [f"loop {loop.get('name') or '?'}: {len(turns)} turn(s)"]
    lines += [turn_line(turn) for turn in turns]
    ending = loop.get("ending")
    if ending:
        lines.append(
            f"  ended {str(ending.get('ending') or '?').upper()} at turn {ending.get('turn')}"
            f" after {ending.get('iteration')} step(s), {criteria_text(ending)}"
            f": {ending.get('reason') or ''}".rstrip(": ")
        )
    else:
        lines.append("  not ended yet")
    return lines


def turn_line(turn: dict[str, Any]) -> str:
    head = f"  turn {turn.get('turn')}  iteration {turn.get('iteration')}  {criteria_text(turn)}"
    if turn.get("stall"):
        return f"{head}  STALL on {turn.get('subject')}: {turn['stall']}"
    shown = f"{head}  among {', '.join(turn.get('candidates') or []) or '-'}"
    if turn.get("fallback"):
        errors = "; ".join(turn.get("errors") or []) or "no reason recorded"
        chose = f"→ {turn['choice']}" if turn.get("choice") else "→ nothing could run"
        return f"{shown}  FALLBACK {chose} (Showrunner: {errors})"
    if "choice" not in turn:
        return f"{shown}  → (waiting for the Showrunner)"
    role = f" as {turn['role']}" if turn.get("role") else " (recommended role)"
    if turn.get("collaborator_role"):
        role = f" as {turn['collaborator_role']} for {turn.get('collaborator_for')}"
    return f"{shown}  → {turn.get('choice')}{role}: {turn.get('reason') or 'no reason given'}"


def criteria_text(judged: dict[str, Any]) -> str:
    """`criteria 1/3 (not: a, b)`: how many held, naming the failing ones."""
    criteria: dict[str, bool] = judged.get("criteria") or {}
    if not criteria:
        return "criteria -"
    failing = [name for name, held in criteria.items() if not held]
    text = f"criteria {len(criteria) - len(failing)}/{len(criteria)}"
    return f"{text} (not: {', '.join(failing)})" if failing else f"{text} (all hold)"
