"""Who a description belongs to, on short passages written by someone who had not seen the rules.

`bench/sentences/battery-*.jsonl`: each line a passage in a period novel's manner, its cast
(names, the short names the text uses, gender), its narrator for first-person and letter
passages, and every fact a careful reader takes from it (eyes, hair, height, handedness),
including passages built to trap a reader (strangers, wishes, questions, hats and horses).
Helper sessions wrote them from a brief that named only the kinds and the traps.

Each battery is split by line: the even lines (the 1st, 3rd, …) are for developing the
rules, the odd lines held out: their misses are never printed. A fact is found when the
reader pins a statement of its kind, with an overlapping value, on its person; a statement
that matches no fact is false, except one said in the negative ("not tall"), which the
labels leave out and the checker uses only to narrow a value, or of middle height, which the
labels (tall or short) do not name.

`bench/sentences/plants-*.jsonl` are contradictions planted as the corpus's are, by a helper
that never saw the rules, in passages of six whole novels not in the corpus (Emma, Middlemarch,
The Woman in White, Tess, North and South, Bleak House; casts in `bench/sentences/casts/`):
each line the passage as published and as planted, whom the plant describes and what it
says. A plant is found when the planted passage yields a statement of its kind and value
about its person; a statement the planted passage yields beyond the published one's that
is not the plant is false. Split the same way. `plants-2.jsonl` is a second such set, in six
other whole novels (Persuasion, Vanity Fair, Silas Marner, David Copperfield, Far from the
Madding Crowd, Kidnapped), each line naming its narrator.

    .venv/bin/python bench/phase_a_sentences.py [--verbose]   # --verbose: dev misses only
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from controlroom.tools.canon import CanonCard, Cast, build_cast
from controlroom.tools.facts import Statement, statements_in
from controlroom.tools.vocabulary import KINDS

HERE = Path(__file__).resolve().parent / "sentences"
KIND_NAMES = ("eyes", "hair", "height", "handedness")
BY_NAME = {kind.attribute: kind for kind in KINDS}


def wanted_classes(fact: dict[str, str]) -> frozenset[str]:
    kind = BY_NAME[fact["kind"]]
    value = fact["value"].lower()
    return kind.classes(value) or frozenset({value.removesuffix("-handed")})


def fits(statement: Statement, fact: dict[str, str]) -> bool:
    return (
        statement.entity == fact["person"]
        and statement.kind.attribute == fact["kind"]
        and bool(statement.classes & wanted_classes(fact))
    )


def score(items: list[dict[str, Any]], verbose: bool) -> tuple[Counter[str], ...]:
    found, missed, false = Counter[str](), Counter[str](), Counter[str]()
    for item in items:
        cards = [
            CanonCard(f"{n}.md", person["name"], "character", tuple(person.get("short", [])),
                      {"gender": person["gender"]})
            for n, person in enumerate(item["cast"])
        ]  # fmt: skip
        read = [
            s
            for s in statements_in(item["passage"], build_cast(cards), item.get("narrator"))
            if s.kind.attribute in KIND_NAMES
        ]
        used: set[int] = set()
        for fact in item["facts"]:
            hit = next((n for n, s in enumerate(read) if n not in used and fits(s, fact)), None)
            if hit is None:
                missed[fact["kind"]] += 1
                if verbose:
                    print(f"  missed {item['id']} {fact}: {item['passage']}")
            else:
                used.add(hit)
                found[fact["kind"]] += 1
        for statement in read:
            if any(fits(statement, fact) for fact in item["facts"]):
                continue
            if statement.words.startswith("not ") or statement.classes == {"middle"}:
                continue  # the labels give heights as tall or short only
            false[statement.kind.attribute] += 1
            if verbose:
                said = f"{statement.kind.attribute} {sorted(statement.classes)} '{statement.words}'"
                print(f"  false  {item['id']} {statement.entity} {said}: {item['passage']}")
    return found, missed, false


#: Who says "I" outside dialogue in each plant novel (the Woman in White has several
#: narrators; it is read with none).
PLANT_NARRATORS = {"bleak_house": "Esther Summerson"}


def plant_cast(novel: str) -> Cast:
    rows = json.loads((HERE / "casts" / f"{novel}.json").read_text(encoding="utf-8"))
    return build_cast(
        [
            CanonCard(f"{n}.md", row["name"], "character", tuple(row.get("short", [])),
                      {"gender": row["gender"]})
            for n, row in enumerate(rows)
        ]
    )  # fmt: skip


def score_plants(items: list[dict[str, Any]], verbose: bool) -> tuple[Counter[str], ...]:
    found, missed, false = Counter[str](), Counter[str](), Counter[str]()
    casts: dict[str, Cast] = {}
    for item in items:
        cast = casts.setdefault(item["novel"], plant_cast(item["novel"]))
        # a line may name its narrator (plants-2 does); else the novel's, if any
        narrator = item["narrator"] if "narrator" in item else PLANT_NARRATORS.get(item["novel"])
        fact = {"person": item["person"], "kind": item["kind"], "value": item["value"]}
        published = {
            (s.entity, s.kind.attribute, s.classes)
            for s in statements_in(item["original"], cast, narrator)
        }
        planted = statements_in(item["planted"], cast, narrator)
        if any(fits(s, fact) for s in planted):
            found[item["kind"]] += 1
        else:
            missed[item["kind"]] += 1
            if verbose:
                print(f"  missed {item['id']} {fact}: {' '.join(item['planted'].split())}")
        for statement in planted:
            key = (statement.entity, statement.kind.attribute, statement.classes)
            if key in published or fits(statement, fact) or statement.words.startswith("not "):
                continue
            false[statement.kind.attribute] += 1
            if verbose:
                print(f"  false  {item['id']} {statement.entity} {statement.words}: "
                      f"{' '.join(statement.sentence.split())}")  # fmt: skip
    return found, missed, false


def table(title: str, found: Counter[str], missed: Counter[str], false: Counter[str]) -> None:
    print(f"== {title} ==")
    print(f"  {'kind':12}{'facts':>6}{'found':>7}{'false':>7}{'recall':>8}{'precision':>11}")
    for kind in (*KIND_NAMES, "all"):
        if kind == "all":
            f, m, x = sum(found.values()), sum(missed.values()), sum(false.values())
        else:
            f, m, x = found[kind], missed[kind], false[kind]
        recall = f / (f + m) if f + m else 0.0
        precision = f / (f + x) if f + x else 1.0
        print(f"  {kind:12}{f + m:>6}{f:>7}{x:>7}{recall:>8.2f}{precision:>11.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--verbose", action="store_true", help="list the dev lines' misses")
    args = parser.parse_args()
    for path in sorted(HERE.glob("battery-*.jsonl")) + sorted(HERE.glob("plants-*.jsonl")):
        items = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        scorer = score_plants if path.stem.startswith("plants") else score
        for split, part in (("dev", items[0::2]), ("held out", items[1::2])):
            found, missed, false = scorer(part, args.verbose and split == "dev")
            table(f"{path.stem}, {split} ({len(part)} passages)", found, missed, false)


if __name__ == "__main__":
    main()
