"""stakes_mapper: setups and payoffs: what is planted, where it returns, what never does."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, ClassVar

from controlroom.tools.analysis import name_set, proper_nouns, sentences, stake_cues_in
from controlroom.tools.base import ToolArgs, ToolResult
from controlroom.tools.workspace import Workspace

# Capitalised words that name no thread a writer plants: languages and peoples, days and
# months, titles and forms of address, exclamations.
_NOT_THREADS = frozenset(
    """english french german italian spanish dutch russian greek latin irish scotch scottish
    scots welsh british american european indian chinese japanese turkish swiss roman
    christian jewish catholic protestant monday tuesday wednesday thursday friday saturday
    sunday january february march april may june july august september october november
    december christmas easter mr mrs miss ms dr sir madam madame mademoiselle monsieur lady
    lord master mister captain colonel doctor reverend god heaven heavens oh ah alas yes
    ay aye nay americans englishman englishmen englishwoman frenchman frenchmen persian
    venetian venetians belgian hellenic tory tories whig whigs radical radicals good-bye
    goodbye""".split()
)


def is_thread_term(term: str, lowercase: set[str]) -> bool:
    """A capitalised word that could be a planted thread: not a contraction ("I'll"), not a
    language, day, month or title ("English", "June", "Mrs"), not a word the book also
    writes in lower case ("Perhaps" opening a sentence; "perhaps" elsewhere)."""
    if "'" in term or "’" in term or len(term) < 3:
        return False
    lowered = term.lower()
    return lowered not in _NOT_THREADS and lowered not in lowercase


class StakesMapperArgs(ToolArgs):
    paths: list[str]
    #: False: the stake sentences are counted, not listed. A loop whose roles read this
    #: report in full for its threads (Hook Harvest, Codex Expansion) keeps it small
    #: enough to be shown whole for a novel's chapters.
    stake_sentences: bool = True


class StakesMapper:
    name: ClassVar[str] = "stakes_mapper"
    #: Reads the workspace: in a worker thread (tools/base.py `Tool`).
    slow: ClassVar[bool] = True
    description: ClassVar[str] = "Map stakes and planted threads across scenes in order"
    args_model: ClassVar[type[ToolArgs]] = StakesMapperArgs

    def run(self, args: StakesMapperArgs, workspace: Workspace) -> ToolResult:
        mentions: dict[str, list[str]] = {}
        stakes: list[dict[str, Any]] = []
        names = name_set(workspace.read_text(path) for path in args.paths)
        lowercase = {
            w for path in args.paths for w in re.findall(r"\b[a-z]+\b", workspace.read_text(path))
        }
        counts: dict[tuple[str, str], int] = {}
        for path in args.paths:
            text = workspace.read_text(path)
            for term in Counter(proper_nouns(text, names)):
                mentions.setdefault(term, []).append(path)
            for _, sentence in sentences(text):
                for term in set(proper_nouns(sentence, names)):
                    counts[(term, path)] = counts.get((term, path), 0) + 1
            for line, sentence in sentences(text):
                cues = stake_cues_in(sentence)
                if cues:
                    stakes.append(
                        {"path": path, "line": line, "sentence": sentence, "cues": list(cues)}
                    )
        threads: list[dict[str, Any]] = []
        # A thread is planted where a name recurs within one scene (two sentences or more);
        # a name passing once is not a setup. Threads are listed in the order they appear.
        for term, where in mentions.items():
            if not is_thread_term(term, lowercase):
                continue
            first = where[0]
            uses = counts.get((term, first), 0)
            threads.append(
                {
                    "term": term,
                    "first_scene": first,
                    "mentions": list(dict.fromkeys(where)),
                    "uses_in_first_scene": uses,
                    "planted": uses >= 2,
                    "paid_off": len(set(where)) > 1,
                }
            )
        last = args.paths[-1] if args.paths else None
        unresolved = [
            str(t["term"])
            for t in threads
            if t["planted"] and not t["paid_off"] and t["first_scene"] != last
        ]
        output: dict[str, Any] = {
            "threads": threads,
            "stakes": stakes if args.stake_sentences else [],
            "unresolved": list(unresolved),
            "scene_order": list(args.paths),
        }
        if not args.stake_sentences:
            output["stake_count"] = len(stakes)
        lines = [
            f"{len(threads)} threads across {len(args.paths)} scenes, "
            f"{len(stakes)} stake sentence(s), {len(unresolved)} planted but never returned"
        ]
        lines.extend(f"- unresolved: {term}" for term in unresolved[:10])
        lines.extend(f"- stake {s['path']}:{s['line']}: {s['sentence']}" for s in stakes[:8])
        return ToolResult(output, "\n".join(lines))
