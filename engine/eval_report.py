"""An eval's report (Markdown): per run and in total, the verdicts that flipped, cost,
tokens and latency before and after, and the outputs that moved most."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from controlroom.domain.canonical import sha256_text
from controlroom.domain.eval_step import EvalForkEnded, EvalForkSkipped

#: The steps whose output moved most, listed at the end.
MOST_MOVED = 5


def _change(request: Mapping[str, Any]) -> list[str]:
    lines = []
    for prompt_type, text in sorted((request.get("prompt_texts") or {}).items()):
        digest = sha256_text(text)[:12]
        lines.append(f"- prompt `{prompt_type}` replaced (new text sha256:{digest})")
    for role, model in sorted((request.get("models") or {}).items()):
        lines.append(f"- role `{role}` served by `{model}`")
    return lines or ["- (no change named)"]


def totals(ended: Sequence[EvalForkEnded]) -> dict[str, Any]:
    down = sum(e.flips()[0] for e in ended)
    up = sum(e.flips()[1] for e in ended)
    return {
        "forks": len(ended),
        "pass_to_fail": down,
        "fail_to_pass": up,
        "status_changed": sum(1 for e in ended if e.status_before != e.status_after),
        "verdicts_changed": sum(len(e.verdicts_changed) for e in ended),
        "cost_before_usd": round(sum(e.cost_before_usd for e in ended), 6),
        "cost_after_usd": round(sum(e.cost_after_usd for e in ended), 6),
        "tokens_before": sum(e.tokens_before for e in ended),
        "tokens_after": sum(e.tokens_after for e in ended),
        "latency_before_ms": round(sum(e.latency_before_ms for e in ended), 1),
        "latency_after_ms": round(sum(e.latency_after_ms for e in ended), 1),
    }


def render_report(
    eval_id: str,
    request: Mapping[str, Any],
    ended: Sequence[EvalForkEnded],
    skipped: Sequence[EvalForkSkipped],
) -> str:
    t = totals(ended)
    out = [f"# Eval {eval_id}", "", "## The change", "", *_change(request), ""]
    out += [
        "## In total",
        "",
        f"{t['forks']} run(s) forked, {len(skipped)} left out. DoD checks flipped: "
        f"{t['pass_to_fail']} pass→fail, {t['fail_to_pass']} fail→pass; "
        f"{t['status_changed']} run status(es) changed; {t['verdicts_changed']} step "
        "verdict(s) changed.",
        "",
        f"Cost ${t['cost_before_usd']:.6f} → ${t['cost_after_usd']:.6f}; tokens "
        f"{t['tokens_before']} → {t['tokens_after']}; latency "
        f"{t['latency_before_ms']:.0f} ms → {t['latency_after_ms']:.0f} ms (the forked "
        "part and the copied part together; copied steps cost nothing again).",
        "",
        "## Per run",
        "",
        "| source | fork | from | status | DoD flips (↓/↑) | cost | changed steps |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in ended:
        down, up = e.flips()
        out.append(
            f"| {e.source_run_id} | {e.fork_run_id} | {e.from_step} | "
            f"{e.status_before} → {e.status_after} | {down}/{up} | "
            f"${e.cost_before_usd:.6f} → ${e.cost_after_usd:.6f} | "
            f"{', '.join(e.changed_steps) or '—'} |"
        )
    moved = sorted(
        ((lines, e.source_run_id, e.fork_run_id, step)
         for e in ended for step, lines in e.output_diff_lines.items() if lines),
        reverse=True,
    )[:MOST_MOVED]  # fmt: skip
    if moved:
        out += ["", "## Outputs that moved most", ""]
        for lines, source, fork, step in moved:
            out.append(
                f"- `{step}` of {source}: {lines} diff line(s) (`controlroom diff {source} {fork}`)"
            )
    flipped = [e for e in ended if any(e.verdicts_changed.values())]
    if flipped:
        out += ["", "## Step verdicts that changed", ""]
        for e in flipped:
            for step, (before, after) in e.verdicts_changed.items():
                out.append(f"- {e.source_run_id} `{step}`: {before} → {after}")
    if skipped:
        out += ["", "## Left out", ""]
        out += [f"- {s.source_run_id}: {s.reason}" for s in skipped]
    return "\n".join(out) + "\n"
