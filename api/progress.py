"""Live progress in the terminal, rendered from the events as each step commits."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import datetime
from typing import TextIO

from controlroom.domain.flow_events import FlowDecided
from controlroom.domain.issue import IssueOpened
from controlroom.domain.packet_steps import ForEachItemChecked
from controlroom.domain.run_events import (
    AgentMicroStepResponded,
    DodChecked,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunResumed,
    RunStarted,
    StepCompleted,
    StepFailed,
    StepStarted,
    StepWaiting,
)
from controlroom.eventstore.store import Positioned, Tracking


class ProgressPrinter:
    def __init__(self, out: TextIO | None = None, total_steps: int = 0) -> None:
        self.out = out or sys.stderr
        self.total = total_steps
        self.started: dict[str, datetime] = {}
        #: Runs whose end was shown: the summary after it lists their issues with findings.
        self.ended: set[str] = set()
        #: Runs whose Definition of Done failed, with how many checks failed of how many.
        self.dod_failed: dict[str, tuple[int, int]] = {}

    def _say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def __call__(
        self, *, committed: Sequence[Positioned], tracking: Tracking | None, **future: object
    ) -> None:
        for item in committed:
            self.render(item)

    def render(self, item: Positioned) -> None:
        e = item.event
        if isinstance(e, RunCompleted | RunFailed | RunCancelled):
            self.ended.add(e.originator_id)
        if isinstance(e, RunStarted):
            self.total = e.total_steps
            how = f" (routed: {e.routing.reason})" if e.routing else ""
            self._say(f"▶ {e.originator_id} · {e.recipe_id} · {e.total_steps} steps{how}")
        elif isinstance(e, RunResumed):
            self._say(f"↻ resuming {e.originator_id} at step {e.step_index + 1}/{self.total}")
        elif isinstance(e, StepStarted):
            self.started[e.step_id] = e.timestamp
            what = (
                e.tool
                if e.tool
                else f"{e.agent_archetype} agent"
                if e.agent_archetype
                else e.kind or "step"
            )
            self._say(
                f"  [{e.step_index + 1}/{self.total}] phase {e.phase.upper()} · "
                f"{e.instance_id or e.step_id} ({what}) …"
            )
        elif isinstance(e, AgentMicroStepResponded):
            # A T1 agent's triage and evidence calls, each a decision worth seeing.
            line = " ".join(e.output.split())[:90]
            checked = "" if e.verified is not False else f" (unverified: {e.problem})"
            self._say(f"      · {e.micro_step}: {line}{checked}")
        elif isinstance(e, StepCompleted):
            began = self.started.get(e.step_id)
            took = f" {(e.timestamp - began).total_seconds() * 1000:.0f} ms" if began else ""
            self._say(f"      ✓ {e.output_slot}{took} — {e.output_preview[:100]}")
        elif isinstance(e, StepFailed):
            self._say(f"      ✗ {e.instance_id or e.step_id} failed: {e.error}")
        elif isinstance(e, ForEachItemChecked) and not e.passed:
            finding = e.findings[0] if e.findings else "no findings given"
            where = f"item {e.index + 1}, draft {e.attempt}"
            self._say(f"      · {where}: the check rejected it ({finding[:120]})")
        elif isinstance(e, FlowDecided) and e.rung:
            # An escalation rung or a gate's rollback: what the run does about a failure.
            self._say(f"  ↳ {e.rung.get('kind')}: {e.reason}")
        elif isinstance(e, StepWaiting):
            self._say(f"  … {e.instance_id} waits: {e.reason.splitlines()[0][:160]}")
        elif isinstance(e, DodChecked):
            for r in e.results:
                self._say(f"  DoD {'✓' if r.passed else '✗'} {r.detail}")
            failing = sum(not r.passed for r in e.results)
            if failing:
                self.dod_failed[e.originator_id] = (failing, len(e.results))
        elif isinstance(e, RunCompleted):
            partial = (
                " (partial success: some of its work did not finish: a step deferred, or a "
                "child run that failed)"
                if e.outcome == 12
                else ""
            )
            self._say(f"■ {e.originator_id} done{partial}")
        elif isinstance(e, RunFailed) and e.originator_id in self.dod_failed:
            # Every step ran and the checks found something: the work's verdict, which a
            # bare "failed" makes read like the tool breaking.
            failing, total = self.dod_failed[e.originator_id]
            self._say(
                f"■ {e.originator_id} ran every step; its Definition of Done failed "
                f"{failing} of {total} check(s) (what they found: below)"
            )
        elif isinstance(e, RunFailed):
            self._say(f"■ {e.originator_id} failed: {e.error}")
        elif isinstance(e, RunCancelled):
            self._say(f"■ {e.originator_id} cancelled: {e.reason}")
        elif isinstance(e, IssueOpened) and e.run_id not in self.ended:
            # an issue opened while its run goes on; one opened on its end (a failed
            # Definition of Done) is in the run's summary, with its findings
            self._say(f"  issue {e.originator_id}: {e.title}")
