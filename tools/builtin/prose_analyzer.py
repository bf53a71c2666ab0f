"""prose_analyzer: pacing and prose metrics per scene."""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar

from controlroom.tools.analysis import (
    STOPWORDS,
    dialogue_ratio,
    flesch_reading_ease,
    name_set,
    paragraphs,
    sentences,
    words,
)
from controlroom.tools.base import ToolArgs, ToolResult
from controlroom.tools.wordlist import is_common_word
from controlroom.tools.workspace import Workspace

LONG_SENTENCE_WORDS = 35
_NOT_ADVERBS = frozenset(
    {
        "only",
        "early",
        "family",
        "holy",
        "lily",
        "belly",
        "reply",
        "ugly",
        "supply",
        "fly",
        "july",
        "italy",
        "rely",
        "ally",
        "silly",
        "lonely",
        # adjectives made from nouns with -ly: a look, not a manner
        "lovely",
        "comely",
        "homely",
        "friendly",
        "elderly",
        "orderly",
        "costly",
        "deadly",
        "ghastly",
        "manly",
        "womanly",
        "stately",
        "likely",
        "daily",
        "weekly",
        "yearly",
        "lively",
        "sickly",
        "goodly",
        "heavenly",
        "worldly",
        "earthly",
        "cowardly",
        "beastly",
        "brotherly",
        "sisterly",
        "motherly",
        "fatherly",
        "ungainly",
        "unseemly",
        "unruly",
        "surly",
        "burly",
        "jolly",
        "curly",
        # nouns whose stems are words too
        "assembly",
        "folly",
        "homily",
        "butterfly",
        "dragonfly",
        "firefly",
        "gadfly",
    }
)


def _an_adverb(low: str) -> bool:
    """An -ly word made from a word: "quickly" (quick), "happily" (happy), "gently"
    (gentle), "truly" (true); never "assembly" or "anomaly", whose stems are no words."""
    if not low.endswith("ly") or low in _NOT_ADVERBS or len(low) < 5:
        return False
    stem = low[:-2]
    candidates = (stem, stem[:-1] + "y" if stem.endswith("i") else "", stem + "le", stem + "e")
    return stem.endswith("ful") or any(c and is_common_word(c) for c in candidates)


#: Words every English page repeats; a repetition flag about them tells a writer nothing.
_FUNCTION_WORDS = frozenset(
    """would could shall might must have had has said says upon into itself himself herself
    themselves yourself myself something nothing anything everything there their they them
    then than that this these those what when where which while with without your yours been
    being were also only even just very much more most some such like well back into over
    down still know think thought things thing said come came went going make made one""".split()
)


_BE_FORMS = frozenset({"was", "were", "been", "is", "are"})


class ProseAnalyzerArgs(ToolArgs):
    paths: list[str]


def prose_metrics(text: str) -> dict[str, Any]:
    ws = words(text)
    lowered = [w.lower() for w in ws]
    ss = sentences(text)
    sentence_words = [words(s) for _, s in ss]
    lengths = [len(sw) for sw in sentence_words]
    adverbs = [w for w, low in zip(ws, lowered, strict=True) if _an_adverb(low)]
    names = {n.lower() for n in name_set([text])}
    content = [
        low
        for w, low in zip(ws, lowered, strict=True)
        if low not in STOPWORDS and low not in _FUNCTION_WORDS and low not in names and len(w) > 3
    ]
    repeated = [w for w, n in Counter(content).most_common(5) if n >= 4]
    passive = sum(
        1
        for sw in sentence_words
        for a, b in zip(sw, sw[1:], strict=False)
        if a.lower() in _BE_FORMS and b.lower().endswith("ed")
    )
    avg = round(sum(lengths) / len(lengths), 1) if lengths else 0.0
    flags = []
    long_sentences = [s for (_, s), n in zip(ss, lengths, strict=True) if n > LONG_SENTENCE_WORDS]
    if long_sentences:
        flags.append(f"{len(long_sentences)} sentence(s) over {LONG_SENTENCE_WORDS} words")
    adverb_density = round(len(adverbs) / len(ws), 3) if ws else 0.0
    if adverb_density > 0.02:
        flags.append(f"adverb density {adverb_density:.1%} (-ly words: {', '.join(adverbs[:5])})")
    if repeated:
        flags.append(f"repeated words: {', '.join(repeated)}")
    if passive:
        flags.append(f"{passive} passive construction(s)")
    pacing = "brisk" if avg < 12 else "measured" if avg < 20 else "slow"
    return {
        "words": len(ws),
        "sentences": len(ss),
        "paragraphs": len(paragraphs(text)),
        "avg_sentence_words": avg,
        "longest_sentence_words": max(lengths, default=0),
        "dialogue_ratio": dialogue_ratio(text),
        "adverb_density": adverb_density,
        "adverbs": adverbs[:10],
        "repeated_words": repeated,
        "passive_constructions": passive,
        "reading_ease": flesch_reading_ease(text),
        "pacing": pacing,
        "flags": flags,
        "long_sentences": long_sentences[:3],
    }


class ProseAnalyzer:
    name: ClassVar[str] = "prose_analyzer"
    #: Reads the workspace: in a worker thread (tools/base.py `Tool`).
    slow: ClassVar[bool] = True
    description: ClassVar[str] = "Measure pacing and prose quality of scenes"
    args_model: ClassVar[type[ToolArgs]] = ProseAnalyzerArgs

    def run(self, args: ProseAnalyzerArgs, workspace: Workspace) -> ToolResult:
        files = {path: prose_metrics(workspace.read_text(path)) for path in args.paths}
        total_words = sum(m["words"] for m in files.values())
        output: dict[str, Any] = {
            "files": files,
            "total_words": total_words,
            "flag_count": sum(len(m["flags"]) for m in files.values()),
        }
        lines = [f"Prose of {len(files)} file(s), {total_words} words"]
        for path, m in files.items():
            lines.append(
                f"- {path}: {m['words']} words, {m['avg_sentence_words']} words/sentence,"
                f" pacing {m['pacing']}, dialogue {m['dialogue_ratio']:.0%}, "
                f"reading ease {m['reading_ease']}"
            )
            lines.extend(f"  ! {flag}" for flag in m["flags"])
        return ToolResult(output, "\n".join(lines))
