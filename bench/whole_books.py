"""Whole-book consistency checks of novels as published: every finding, and what became
of each card fact.

`bench/whole_books/<novel>/` holds the cards (and `.control-room/workspace.json`) written
for the public-domain novels listed there by helper sessions that never saw the rules; the texts are
not kept here (the GITenberg sources and how each was laid out: `bench/whole_books/
README.md`). Lay a novel's chapters out beside its cards, then:

    .venv/bin/python bench/whole_books.py WORKSPACE [WORKSPACE ...] [--facts]

runs `controlroom run "check consistency of the whole book"` in each and prints how many
units and cards it read, its findings (each one a false finding unless the published text
really slips) and how many of its card facts were confirmed by the text, not stated,
contradicted or not checkable;
`--facts` lists each fact and what became of it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

CLI = str(Path(sys.executable).parent / "controlroom")
TASK = "check consistency of the whole book"


def _around(finding: dict[str, str], width: int = 120) -> str:
    """The finding's sentence, cut to `width` characters around the words it rests on (a
    long sentence's opening may be far from them)."""
    sentence = " ".join(finding.get("sentence", "").split())
    at = sentence.find(finding.get("quote", "")) if finding.get("quote") else -1
    if len(sentence) <= width or at < width // 2:
        return sentence[:width]
    start = min(at - width // 2, len(sentence) - width)
    return "…" + sentence[start : start + width]


def check(workspace: Path) -> dict[str, object]:
    started = time.perf_counter()
    ran = subprocess.run(
        [CLI, "run", TASK, "-q", "--json", "-w", str(workspace)],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    try:
        run = json.loads(ran.stdout)
        run_id = run["run_id"]
    except (ValueError, KeyError):
        raise SystemExit(f"{workspace}: the check did not run: {ran.stderr.strip()}") from None
    slot = subprocess.run(
        [CLI, "slot", run_id, "consistency_report", "-w", str(workspace)],
        capture_output=True,
        text=True,
        check=False,
    )
    if slot.returncode != 0:
        # the run stopped before its check (no cards found, say): said, and the next goes on
        why = (
            str(run.get("error") or "") or ran.stderr.strip() or slot.stderr.strip()
        ).splitlines()
        return {"run_id": run_id, "seconds": seconds, "failed": why[-1] if why else "?"}
    report = json.loads(slot.stdout)
    return {"run_id": run_id, "seconds": seconds, "report": report}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspaces", nargs="+", type=Path)
    parser.add_argument(
        "--facts", action="store_true", help="also list every card fact and what became of it"
    )
    ns = parser.parse_args()
    totals: Counter[str] = Counter()
    # how many units and cards were read: a layout half found shows here, not as silence
    print(f"{'novel':<16} {'units':>5} {'cards':>5} {'findings':>8} {'confirmed':>9} "
          f"{'not stated':>10} {'contradicted':>12} {'not checkable':>13} "
          f"{'seconds':>7}")  # fmt: skip
    details: list[str] = []
    fact_lines: list[str] = []
    for workspace in ns.workspaces:
        result = check(workspace)
        if "failed" in result:
            print(f"{workspace.name:<16} the check did not run: {result['failed']}")
            continue
        report = result["report"]
        assert isinstance(report, dict)
        facts = Counter(str(f.get("status")) for f in report["facts"])
        findings = report["findings"]
        totals.update(facts)
        totals["findings"] += len(findings)
        units = len(report.get("scenes_checked", []))
        cards = len({f.get("entity") for f in report["facts"]})
        totals["units"] += units
        totals["cards"] += cards
        print(f"{workspace.name:<16} {units:>5} {cards:>5} {len(findings):>8} "
              f"{facts['confirmed']:>9} {facts['not stated']:>10} {facts['contradicted']:>12} "
              f"{facts['not checkable']:>13} {result['seconds']:>7.1f}")  # fmt: skip
        details += [f"  {workspace.name}: {f['message']}  ({_around(f)})"
                    for f in findings]  # fmt: skip
        if ns.facts:
            fact_lines += [_fact_line(workspace.name, f) for f in report["facts"]]
    print(f"{'all':<16} {totals['units']:>5} {totals['cards']:>5} {totals['findings']:>8} "
          f"{totals['confirmed']:>9} "
          f"{totals['not stated']:>10} {totals['contradicted']:>12} "
          f"{totals['not checkable']:>13}")  # fmt: skip
    if details:
        print("findings (judge each: a slip of the published text, or a false finding):")
        print("\n".join(details))
    if fact_lines:
        print("card facts (entity, attribute = card value: what became of it):")
        print("\n".join(fact_lines))


def _fact_line(novel: str, fact: dict[str, object]) -> str:
    status = str(fact.get("status"))
    counts = ""
    if fact.get("checked"):
        counts = f" ({fact.get('agreeing_statements', 0)} agree, "
        counts += f"{fact.get('contradictions', 0)} contradict)"
    elif status == "not checkable":
        counts = f" ({fact.get('reason', '')})"
    return (f"  {novel}: {fact.get('entity')}, {fact.get('attribute')} = "
            f"'{fact.get('value')}': {status}{counts}")  # fmt: skip


if __name__ == "__main__":
    main()
