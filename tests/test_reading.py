"""Reading descriptions as a reader would: narrators, speakers, negation, names (issue 29)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controlroom.models.offline_roles import find_canon_gaps, update_canon
from controlroom.tools.base import ToolRegistry
from controlroom.tools.canon import build_cast, facts_of, parse_card
from controlroom.tools.facts import (
    contradictions_in_text,
    find_conflicts_in,
    plan_checks,
    statements_in,
)
from controlroom.tools.vocabulary import HEIGHT, checkability
from controlroom.tools.voices import detect_narrator
from controlroom.tools.workspace import Workspace

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "bench" / "corpus"
TOOLS = ToolRegistry.default(with_plugins=False)
JANE = "# Jane Eyre\n- **Aliases:** Jane, Miss Jane\n- **Pronouns:** she\n- **Height:** small\n"
JANE_HANDED = JANE + "- **Handedness:** right-handed\n- **Eyes:** hazel\n"
ROCHESTER = "# Edward Rochester\n- **Aliases:** Mr. Rochester\n- **Pronouns:** he\n"
ROCHESTER_FACTS = ROCHESTER + "- **Handedness:** right-handed\n- **Height:** middle height\n"
BESSIE = "# Bessie Lee\n- **Aliases:** Bessie\n- **Pronouns:** she\n- **Hair:** black\n"
REED = "# Sarah Reed\n- **Aliases:** Mrs. Reed\n- **Pronouns:** she\n- **Height:** not tall\n"


def conflicts(text: str, *cards: str, narrator: str | None = None) -> list[str]:
    parsed = [parse_card(f"People/card{i}.md", c) for i, c in enumerate(cards)]
    checks = plan_checks(facts_of(parsed))
    found, _ = find_conflicts_in("ch.md", text, checks, build_cast(parsed), narrator)
    return [f"{c.entity}:{c.attribute}:{c.found}" for c in found]


def feature_read(attribute: str, text: str, *cards: str) -> list[tuple[str, str]]:
    """Who the text gives the feature ATTRIBUTE ("hair", "eyes") to, in what words."""
    parsed = [parse_card(f"People/card{i}.md", c) for i, c in enumerate(cards)]
    return [
        (s.entity, s.words)
        for s in statements_in(text, build_cast(parsed))
        if s.kind.attribute == attribute
    ]


def hair_read(text: str, *cards: str) -> list[tuple[str, str]]:
    return feature_read("hair", text, *cards)


def eyes_read(text: str, *cards: str) -> list[tuple[str, str]]:
    return feature_read("eyes", text, *cards)


def variants_in(tmp_path: Path, chapter: str, known: set[str]) -> list[tuple[str, int]]:
    """The name check's findings, (word, line), on one chapter file holding CHAPTER."""
    from controlroom.tools.builtin.consistency_checker import name_variants

    (tmp_path / "ch.md").write_text(chapter)
    return [(v["found"], v["line"]) for v in name_variants(Workspace(tmp_path), ["ch.md"], known)]


def test_a_declared_narrator_is_i_outside_dialogue() -> None:
    text = "My hand—for I was left-handed, and awkward—would not second my fancy.\n"
    assert conflicts(text, JANE_HANDED, narrator="Jane Eyre") == [
        "Jane Eyre:handedness:left-handed"
    ]
    assert conflicts(text, JANE_HANDED) == []  # no narrator: "I" is nobody


def test_i_in_speech_is_the_one_speaker_the_tag_names() -> None:
    text = "“Take the drawings from my hand—I am left-handed, you see,” said Mr. Rochester.\n"
    assert conflicts(text, JANE_HANDED, ROCHESTER_FACTS, narrator="Jane Eyre") == [
        "Edward Rochester:handedness:left-handed"
    ]
    # Two people speak in the paragraph: whose "I" it is is not guessed.
    two = "“I am left-handed,” said Mr. Rochester; “and I,” said Bessie, “am not.”\n"
    assert conflicts(two, ROCHESTER_FACTS, BESSIE, narrator="Jane Eyre") == []


def test_you_in_speech_is_the_person_addressed_and_negation_narrows_height() -> None:
    said = "“You’re {} grown so very tall, Miss Jane,” continued Bessie.\n"
    assert conflicts(said.format("not"), JANE, BESSIE, narrator="Jane Eyre") == []
    assert conflicts(said.format("quite"), JANE, BESSIE, narrator="Jane Eyre") == [
        "Jane Eyre:height:tall"
    ]


def test_a_card_that_says_not_tall_is_contradicted_by_tall_only() -> None:
    assert sorted(HEIGHT.classes("not tall")) == ["middle", "short"]
    assert sorted(HEIGHT.classes("middle height, neither tall nor short")) == ["middle"]
    assert conflicts("Mrs. Reed was very tall.\n", REED) == ["Sarah Reed:height:tall"]
    assert conflicts("Mrs. Reed was short and stout.\n", REED) == []
    assert conflicts("Mrs. Reed was not tall.\n", REED) == []


def test_wishes_comparisons_and_predictions_state_nothing() -> None:
    for text in (
        "I desired to be tall, stately, and finely developed in figure.\n",
        "“Will she be as tall as I am?” asked Jane.\n",
        "Jane would be tall one day.\n",
    ):
        assert conflicts(text, JANE, narrator="Jane Eyre") == [], text


def test_small_little_and_middle_are_heights_only_where_nothing_else_is_meant() -> None:
    cast = build_cast([parse_card("People/j.md", JANE)])
    said = [s.words for s in statements_in("I was very little.\n", cast, "Jane Eyre")]
    assert said == ["little"]
    for text in (
        "I was a little surprised.\n",
        "I waited a little while.\n",
        "I was in the middle of the room.\n",
        "Then I was a little girl.\n",
        "My small hands were cold.\n",
    ):
        assert statements_in(text, cast, "Jane Eyre") == [], text
    middle = [parse_card("People/r.md", ROCHESTER_FACTS)]
    assert conflicts("Mr. Rochester was of middle height.\n", ROCHESTER_FACTS) == []
    assert statements_in("Mr. Rochester was of middle height.\n", build_cast(middle))


def test_a_description_reaches_its_owner_across_the_paragraph() -> None:
    bessie = "# Bessie Lee\n- **Aliases:** Bessie\n- **Pronouns:** she\n- **Hair:** fair\n"
    text = (
        "Bessie Lee must have been a girl of good natural capacity. She was pretty too. "
        "I remember her as a slim young woman, with black hair, dark eyes.\n"
    )
    assert conflicts(text, bessie, narrator="Jane Eyre") == ["Bessie Lee:hair:black"]
    reed = "# Sarah Reed\n- **Aliases:** Mrs. Reed\n- **Pronouns:** she\n- **Hair:** black\n"
    text = "Mrs. Reed looked up: her brow was low, her hair nearly flaxen; she said nothing.\n"
    assert conflicts(text, reed) == ["Sarah Reed:hair:flaxen"]
    georgiana = "# Georgiana Reed\n- **Pronouns:** she\n- **Hair:** golden\n"
    text = "Georgiana was indulged. Her beauty, her pink cheeks and raven curls, delighted.\n"
    assert conflicts(text, georgiana) == ["Georgiana Reed:hair:raven"]


def test_a_value_may_be_qualified_but_must_close_its_phrase() -> None:
    creature = "# The Creature\n- **Aliases:** the wretch\n- **Pronouns:** he\n- **Hair:** black\n"
    said = "I beheld the wretch. Beautiful! Great God! His hair was of a lustrous {}.\n"
    assert conflicts(said.format("yellow, and flowing"), creature) == ["The Creature:hair:yellow"]
    assert conflicts(said.format("yellow colour"), creature) == []
    assert conflicts("The wretch came. His hair was tied with a yellow ribbon.\n", creature) == []


def test_a_journal_or_letter_heading_names_who_says_i() -> None:
    harker = "# Jonathan Harker\n- **Pronouns:** he\n- **Eyes:** brown\n"
    lucy = "# Lucy Westenra\n- **Aliases:** Lucy\n- **Pronouns:** she\n- **Hair:** golden\n"
    mina = "# Mina Murray\n- **Aliases:** Mina\n- **Pronouns:** she\n"
    journal = "JONATHAN HARKER'S JOURNAL\n\nI began to rub my blue eyes and pinch myself.\n"
    assert conflicts(journal, harker) == ["Jonathan Harker:eyes:blue"]
    letter = (
        "_Letter, Lucy Westenra to Mina Murray._\n\n"
        '"My dearest Mina,--\n\n"I am blushing to the roots of my black hair as I write.\n'
    )
    assert conflicts(letter, harker, lucy, mina) == ["Lucy Westenra:hair:black"]


def test_a_first_person_narrator_is_detected_from_who_others_address() -> None:
    nick = "# Nick Carraway\n- **Aliases:** Nick\n- **Pronouns:** he\n"
    tom = "# Tom Buchanan\n- **Aliases:** Tom\n- **Pronouns:** he\n"
    daisy = "# Daisy Buchanan\n- **Aliases:** Daisy\n- **Pronouns:** she\n"
    cast = build_cast([parse_card(f"People/{i}.md", c) for i, c in enumerate((nick, tom, daisy))])
    text = (
        "I drove over to see Tom and Daisy. Tom was on the porch; I followed him in.\n\n"
        "“What you doing, Nick?” asked Tom.\n\n“I love to see you here, Nick,” said Daisy.\n\n"
        "I told them. “We don’t know each other, Nick,” she said. I laughed, and Tom laughed.\n"
    )
    assert detect_narrator([text], cast) == "Nick Carraway"
    third = "Tom drove over to see Daisy. “What you doing, Tom?” asked Daisy. Tom laughed.\n"
    assert detect_narrator([third], cast) is None


def test_a_multi_word_alias_is_matched_as_a_phrase() -> None:
    tower = "# Morwen\n- **Aliases:** the black tower\n- **Pronouns:** she\n"
    cast = build_cast([parse_card("People/m.md", tower)])
    text = "The black dog ran to the black\ntower, and the black tower did not move."
    found = cast.mentions(text)
    assert [" ".join(text[s:e].split()) for s, e, _ in found] == ["the black tower"] * 2
    assert {entity for _, _, entity in found} == {"Morwen"}


def test_dates_and_distances_are_reported_as_not_checked_with_why() -> None:
    assert checkability("Distance", "fifty miles from Gateshead")[1].startswith(
        "distances are not checked"
    )
    assert checkability("Born", "1837")[1].startswith("dates are not checked")
    assert "age" in checkability("Age", "ten")[1]


@pytest.fixture
def novel(tmp_path: Path) -> Path:
    root = tmp_path / "novel"
    (root / "Chapters").mkdir(parents=True)
    (root / "Notes" / "People").mkdir(parents=True)
    (root / "Notes" / "People" / "Jane Eyre.md").write_text(JANE_HANDED)
    (root / "Notes" / "People" / "Grace Poole.md").write_text(
        "# Grace Poole\n- **Pronouns:** she\n- **Hair:** red\n"
    )
    (root / "Notes" / "People" / "Alice Fairfax.md").write_text(
        "# Alice Fairfax\n- **Aliases:** Mrs. Fairfax\n- **Pronouns:** she\n"
    )
    (root / "Notes" / "People" / "Sarah Reed.md").write_text(REED)
    (root / "Chapters" / "Chapter 1.md").write_text(
        "# CHAPTER I\n\nIt was the first of June, and Miss Gryce snored; the Misses Reed "
        "and the Reeds slept. Mrs. Fairfax came in; Mrs. Fairfox went out. Miss Gryce "
        "followed. Adela laughed. Mrs. Fairfax smiled, her eyes were hazel, and Miss "
        "Abbot said so. “Hush,” said Miss Abbot. Miss Abbot left.\n",
        encoding="utf-8",
    )
    return root


def _findings(root: Path) -> list[str]:
    out = TOOLS.execute(
        "consistency_checker",
        {
            "scene_paths": ["Chapters/Chapter 1.md"],
            "canon_paths": [f"Notes/People/{n}.md" for n in ("Jane Eyre", "Grace Poole")]
            + ["Notes/People/Alice Fairfax.md", "Notes/People/Sarah Reed.md"],
        },
        Workspace(root),
    ).output
    return [f["found"] for f in out["findings"] if f["type"] == "name_variant"]


def test_name_variants_are_checked_against_words_plurals_titles_and_the_ignore_list(
    novel: Path,
) -> None:
    # "June" is a month, "Misses" a title, "Reeds" a family, "Miss Gryce" another person
    # (a given name never follows "Miss" on the cards): only "Fairfox" is a slip.
    assert _findings(novel) == ["Fairfox"]
    (novel / ".control-room").mkdir()
    (novel / ".control-room" / "workspace.json").write_text(
        json.dumps(
            {
                "units": ["Chapters/*.md"],
                "canon": ["Notes/**/*.md"],
                "narrator": "Jane Eyre",
                "ignore_names": ["Fairfox"],
            }
        )
    )
    assert _findings(novel) == []


def test_canon_update_proposes_what_it_read_and_cards_for_people_without_one(
    novel: Path,
) -> None:
    ws = Workspace(novel)
    result = TOOLS.execute(
        "canon_checker",
        {
            "scene_paths": ["Chapters/Chapter 1.md"],
            "canon_paths": ["Notes/People/Alice Fairfax.md", "Notes/People/Jane Eyre.md"],
        },
        ws,
    )
    read = {(r["entity"], r["attribute"]): r for r in result.output["read_in_text"]}
    assert read[("Alice Fairfax", "eyes")]["values"] == ["hazel"]
    assert read[("Alice Fairfax", "eyes")]["on_card"] is False
    assert [u["name"] for u in result.output["uncarded"]] == ["Miss Abbot"]
    gaps = json.loads(find_canon_gaps("update the canon", [("canon_context", result.summary)]))
    assert {"entity": "Alice Fairfax", "missing": ["eyes"]} not in gaps["gaps"]
    assert gaps["proposed"][0]["attribute"] == "eyes"
    assert gaps["new_cards"][0]["name"] == "Miss Abbot"
    report = update_canon("update the canon", [("canon_gaps", json.dumps(gaps))])
    assert "- Alice Fairfax: add eyes = hazel" in report
    assert "- New card: Miss Abbot" in report


def test_places_languages_and_half_names_are_not_proposed_as_new_people() -> None:
    from controlroom.tools.canon import build_cast
    from controlroom.tools.newcomers import uncarded_people

    text = (
        "# Chapter 1\n\n"
        'Mr. Lorry walked through Saint Antoine. "Go," said French, and Saint Antoine slept. '
        "He was tried for helping the said French Lewis; the French were near; in French "
        "he said it. Saint Antoine woke.\n\n"
        '"Your friend, Mr. Peter\nHawkins, wrote," said Mr. Hawkins. Mr. Peter came. '
        'Mr. Hawkins went. Mr. Peter Hawkins stayed. "Yes," said Lorry. Lorry left.\n\n'
        "Prince Edward sailed; Prince Edward Island. Prince Edward. Mr. Barnard’s Inn is Mr. "
        "Barnard's. Mr. Barnard.\n"
    )
    found = [name for name, _, _ in uncarded_people({"ch.md": text}, build_cast([]))]
    # a saint's title names a place; a word after "in" or "the" is a place or a language;
    # "Mr. Peter" of "Mr. Peter Hawkins" is Mr. Hawkins
    assert found == ["Mr. Hawkins", "Mr. Lorry"]


def test_every_unmodified_novel_of_the_corpus_passes_the_whole_book_check() -> None:
    for labels in sorted(CORPUS.glob("*.json")):
        ws = Workspace(REPO / json.loads(labels.read_text(encoding="utf-8"))["workspace"])
        found = TOOLS.execute("file_locator", {"require": ["units", "canon"]}, ws).output
        out = TOOLS.execute(
            "consistency_checker",
            {"scene_paths": found["scenes_in_order"], "canon_paths": found["canon"]},
            ws,
        ).output
        known = {
            (k["path"], k["line"])
            for k in json.loads(labels.read_text(encoding="utf-8")).get("in_source", [])
        }
        # A slip the published text itself has is a true finding, labelled as such.
        assert [f for f in out["findings"] if (f["path"], f["line"]) not in known] == [], (
            labels.stem
        )
        assert all(row["reason"] for row in out["unchecked"]), labels.stem


def test_a_predicate_in_a_comma_list_shares_the_lists_subject() -> None:
    text = (
        "Mrs. Reed sat sewing. She was a woman of robust frame, square-shouldered and "
        "strong-limbed, {}, and stout.\n"
    )
    assert conflicts(text.format("very tall"), REED) == ["Sarah Reed:height:tall"]
    assert conflicts(text.format("not tall"), REED) == []
    # The list's head is not a description of her: a verb of another clause, a name or a
    # preposition in it stops the list.
    for other in (
        "Mrs. Reed sat sewing. She was looking at her brother, handsome and very tall.\n",
        "Mrs. Reed sat sewing. She was a friend of Bessie, handsome and very tall.\n",
        "Mrs. Reed sat sewing. She had a son, handsome and very tall.\n",
    ):
        assert conflicts(other, REED, BESSIE) == [], other


def test_an_attributive_description_passes_the_phrases_other_adjectives() -> None:
    tom = "# Tom Buchanan\n- **Pronouns:** he\n- **Hair:** straw\n- **Height:** short\n"
    said = "Tom Buchanan came in. Now he was a sturdy {} man of thirty.\n"
    assert conflicts(said.format("dark-haired"), tom) == ["Tom Buchanan:hair:dark-haired"]
    assert conflicts(said.format("straw-haired"), tom) == []
    assert conflicts("Tom Buchanan bowed, and his fine, tall gentleman's air...\n", tom) == []
    said = "Tom Buchanan rose; the room saw his broad, tall figure.\n"
    assert conflicts(said, tom) == ["Tom Buchanan:height:tall"]


def test_a_given_name_inside_another_persons_name_is_not_a_mention() -> None:
    john = "# John Reed\n- **Pronouns:** he\n- **Height:** short\n"
    for text in (
        "St. John stooped to examine my drawing. His tall figure sprang erect again.\n",
        "It was John Rivers who came in. His tall figure was white with snow.\n",
    ):
        assert conflicts(text, john, narrator="Jane Eyre") == [], text
    # A slip in the surname is still the same person, and emphasis marks are not letters.
    cast = build_cast([parse_card("People/l.md", "# Lucy Westenra\n- **Pronouns:** she\n")])
    assert [e for _, _, e in cast.mentions("_Letter, Lucy Westerna to Mina_.")] == ["Lucy Westenra"]
    assert [e for _, _, e in cast.mentions("_Lucy Westenra_")] == ["Lucy Westenra"]


def test_cards_kept_as_tables_or_sections_are_read() -> None:
    rows = (
        "# Jo March\n\n| Attribute | Value |\n|---|---|\n| Eyes | grey |\n"
        "| **Hair** | chestnut, long |\n\n## Height\n\nTall and thin.\n\n## Pronouns\nshe\n\n"
        "## Biography\n\nJo is the second of four sisters. She writes plays for them all, "
        "and longs to be a famous author one day.\n\n## Appearance\n\n- Handedness: right\n"
    )
    card = parse_card("Persons/jo.md", rows)
    assert card.attributes == {
        "eyes": "grey",
        "hair": "chestnut, long",
        "height": "Tall and thin",
        "pronouns": "she",
        "handedness": "right",
    }
    assert card.lines["height"] == 10
    wide = "# Meg March\n\n| Eyes | Hair | Height |\n| --- | --- | --- |\n| brown | dark | tall |\n"
    assert parse_card("P/m.md", wide).attributes == {
        "eyes": "brown",
        "hair": "dark",
        "height": "tall",
    }
    assert conflicts("Jo March had blue eyes and smiled.\n", rows) == ["Jo March:eyes:blue"]


def test_a_given_name_before_a_surname_is_not_a_slip_for_a_surname(novel: Path) -> None:
    (novel / "Notes" / "People" / "Grace Poole.md").write_text(
        "# Grace Poole\n- **Aliases:** Poole\n- **Pronouns:** she\n"
    )
    chapter = novel / "Chapters" / "Chapter 1.md"
    chapter.write_text(
        "# CHAPTER I\n\nThey walked to Poolle Bell’s wood. Mrs. Fairfax came in; Mrs. "
        "Fairfox went out. Then Grace Poolle laughed.\n",
        encoding="utf-8",
    )
    # "Poolle Bell" is someone's given name and surname, not a slip for the surname
    # "Poole"; "Grace Poolle" still is one, and so is "Fairfox" after a title.
    assert sorted(_findings(novel)) == ["Fairfox", "Poolle"]


def test_a_name_slip_may_sound_alike_follow_a_common_noun_or_end_at_a_dash(
    novel: Path,
) -> None:
    from controlroom.tools.builtin.consistency_checker import likely_typo

    assert likely_typo("Lawrence", "Laurence")  # w for u: the same sound
    assert not likely_typo("Hardy", "Harry")  # another name
    assert not likely_typo("Joan", "John")  # an "h" is never the slip
    (novel / "Chapters" / "Chapter 1.md").write_text(
        "# CHAPTER I\n\n“It’s my sister Graca,” said Jane. There’s Mrs. Fairfux--what’s "
        "she to think?\n",
        encoding="utf-8",
    )
    # "sister" in lower case is no title; a double hyphen is a dash, not a compound.
    assert sorted(_findings(novel)) == ["Fairfux", "Graca"]


def test_similes_concessions_and_long_attributive_lists_state_their_value() -> None:
    livesey = "# Dr. Livesey\n- **Pronouns:** he\n- **Hair:** powdered white\n- **Eyes:** black\n"
    said = "Dr. Livesey stood up; his own close-cropped hair was as red as a fox.\n"
    assert conflicts(said, livesey) == ["Dr. Livesey:hair:red"]
    said = "Dr. Livesey frowned, and his eyes, which were as blue as sloes, grew hard.\n"
    assert conflicts(said, livesey) == ["Dr. Livesey:eyes:blue"]
    assert conflicts("Dr. Livesey had eyes as blue as the sea.\n", livesey) == [
        "Dr. Livesey:eyes:blue"
    ]
    assert conflicts("Dr. Livesey was as pale as ashes.\n", livesey) == []
    beth = "# Beth March\n- **Aliases:** Beth\n- **Pronouns:** she\n- **Handedness:** right\n"
    said = "“I marked them all myself, left-handed as I am,” said Beth.\n"
    assert conflicts(said, beth) == ["Beth March:handedness:left-handed"]
    said = "“I wish I were as left-handed as I am clever,” said Beth.\n"
    assert conflicts(said, beth) == []  # a comparison, not a concession
    bones = "# Billy Bones\n- **Pronouns:** he\n- **Height:** tall\n"
    said = "Billy Bones came in. He was a short, strong, heavy, nut-brown man.\n"
    assert conflicts(said, bones) == ["Billy Bones:height:short"]


def test_coordinated_predicates_appositions_shades_and_measures_reach_their_owner() -> None:
    hyde = "# Edward Hyde\n- **Aliases:** Mr. Hyde\n- **Pronouns:** he\n- **Height:** short\n"
    hyde += "- **Hair:** black\n- **Handedness:** right\n"
    assert conflicts("Mr. Hyde was pale and tall.\n", hyde) == ["Edward Hyde:height:tall"]
    assert conflicts("Mr. Hyde was thin, pale and tall.\n", hyde) == ["Edward Hyde:height:tall"]
    said = "Mr. Hyde the lawyer was a left-handed man of a rugged countenance.\n"
    assert conflicts(said, hyde) == ["Edward Hyde:handedness:left-handed"]
    said = "Mr. Hyde turned, and the light was dull on the autumn-leaf brown of his hair.\n"
    assert conflicts(said, hyde) == ["Edward Hyde:hair:brown"]
    said = "Mr. Hyde came in with a shock of ginger hair.\n"
    assert conflicts(said, hyde) == ["Edward Hyde:hair:ginger"]
    # "Helen Burns" has no card, but she is someone the pronoun may mean.
    temple = "# Maria Temple\n- **Aliases:** Miss Temple\n- **Pronouns:** she\n- **Eyes:** blue\n"
    said = "{}asked a question; it lit up her thin face, her sunken grey eye.\n"
    assert conflicts(said.format("Helen Burns heard Miss Temple, and "), temple) == []
    assert conflicts(said.format("Miss Temple "), temple) == ["Maria Temple:eyes:grey"]


def test_a_misspelt_titled_name_is_still_the_person_and_him_may_be_the_same_man() -> None:
    livesey = "# Dr. Livesey\n- **Aliases:** Livesey\n- **Pronouns:** he\n- **Eyes:** black\n"
    said = (
        "Dr. {} came late one afternoon. I followed him in, and I remember the neat, bright "
        "doctor, with his powder as white as snow and his bright, blue eyes.\n"
    )
    expected = ["Dr. Livesey:eyes:blue"]
    assert conflicts(said.format("Livesey"), livesey, narrator="Jim") == expected
    assert conflicts(said.format("Livesy"), livesey, narrator="Jim") == expected
    # "Henry looked at him": a man named acting on "him" shows a second man in play.
    said = "Dr. Livesey looked at him. His blue eyes were full of tears.\n"
    assert conflicts(said, livesey) == []


def test_an_untagged_line_of_a_two_person_exchange_is_the_next_turn() -> None:
    text = (
        "“Are you well?” said Mr. Rochester.\n\n“Quite well, sir,” said Jane.\n\n"
        "“And you are left-handed, I see.”\n\n“I am, sir.”\n"
    )
    assert conflicts(text, JANE_HANDED, ROCHESTER_FACTS, narrator="Jane Eyre") == [
        "Jane Eyre:handedness:left-handed"
    ]
    # A third voice, or narration between, ends the exchange: nobody is guessed.
    broken = text.replace("\n\n“And", "\n\nHe paused.\n\n“And")
    assert conflicts(broken, JANE_HANDED, ROCHESTER_FACTS, narrator="Jane Eyre") == []


def test_feature_lists_dash_appositions_and_measures_with_adjectives_reach_their_owner() -> None:
    arthur = "# Arthur Holmwood\n- **Aliases:** Arthur\n- **Pronouns:** he\n- **Eyes:** grey\n"
    arthur += "- **Hair:** curly brown\n"
    said = "Arthur came in, with the strong jaw and the brown eyes and the good forehead.\n"
    assert conflicts(said, arthur) == ["Arthur Holmwood:eyes:brown"]
    assert conflicts("Arthur looked at the brown eyes of the portrait.\n", arthur) == []
    said = "Arthur--an old, black-haired, mahogany-faced sailor--came forward.\n"
    assert conflicts(said, arthur) == ["Arthur Holmwood:hair:black-haired"]
    said = "Arthur wore a solid, sticky bob of black hair.\n"
    assert conflicts(said, arthur) == []  # "wore" is no link: whose bob is not read
    said = "Arthur came in with a solid, sticky bob of black hair.\n"
    assert conflicts(said, arthur) == ["Arthur Holmwood:hair:black"]


def test_this_was_a_gentleman_with_is_the_one_just_named_and_the_man_with_is_not() -> None:
    lanyon = "# Hastie Lanyon\n- **Aliases:** Dr. Lanyon\n- **Pronouns:** he\n- **Hair:** white\n"
    said = (
        "Dr. Lanyon sat alone. This was a hearty, red-faced gentleman, with a shock of {} hair.\n"
    )
    assert conflicts(said.format("ginger"), lanyon) == ["Hastie Lanyon:hair:ginger"]
    assert conflicts(said.format("white"), lanyon) == []
    # The lady of "this was a lady" is not the man just named.
    assert conflicts(said.format("ginger").replace("gentleman", "lady"), lanyon) == []
    assert conflicts("Dr. Lanyon looked at the man with ginger hair.\n", lanyon) == []
    bessie = "# Bessie Lee\n- **Aliases:** Bessie\n- **Pronouns:** she\n- **Hair:** fair\n"
    said = "I remember her as a slim young woman, with black hair."
    assert conflicts(f"Bessie Lee came in. {said}\n", bessie, narrator="Jane") == [
        "Bessie Lee:hair:black"
    ]


MARTHA = "# Martha Quill\n- **Aliases:** Martha\n- **Pronouns:** she\n- **Eyes:** brown\n"
MARTHA += "- **Hair:** fair\n- **Height:** tall\n- **Handedness:** right-handed\n"
SILAS = "# Silas Brand\n- **Aliases:** Silas, Mr. Brand\n- **Pronouns:** he\n- **Height:** short\n"
SILAS += "- **Hair:** grey\n- **Handedness:** right-handed\n"
SILAS_BLACK = SILAS.replace("**Hair:** grey", "**Hair:** black")
SILAS_BROWN_EYES = SILAS + "- **Eyes:** brown\n"
DAVID = "# David Grey\n- **Aliases:** David\n- **Pronouns:** he\n- **Height:** tall\n"
MILLER = "# The Miller\n- **Aliases:** the miller\n- **Pronouns:** he\n- **Height:** tall\n"


def test_a_second_feature_after_and_shares_the_first_ones_owner() -> None:
    said = "Martha was a quiet girl with grey eyes and black hair.\n"
    assert conflicts(said, MARTHA) == ["Martha Quill:eyes:grey", "Martha Quill:hair:black"]
    said = "I have grey eyes and a great deal of black hair."
    assert conflicts(said, MARTHA, narrator="Martha Quill") == [
        "Martha Quill:eyes:grey",
        "Martha Quill:hair:black",
    ]
    # A stranger's features are nobody's, the second as the first.
    assert conflicts("Martha saw a man with grey eyes and black hair.\n", MARTHA) == []


def test_wishes_and_questions_state_nothing() -> None:
    said = "How I wished, that night, that I had grey eyes and black hair!"
    assert conflicts(said, MARTHA, narrator="Martha Quill") == []
    assert conflicts("“Are my eyes really grey?” I asked.", MARTHA, narrator="Martha Quill") == []
    assert conflicts("“Martha was left-handed?” asked Silas.\n", MARTHA, SILAS) == []


def test_a_pronoun_nobody_before_answers_is_the_one_person_named_after_it() -> None:
    said = "Her hair was black, her eyes a deep grey; Martha did not look up.\n"
    assert conflicts(said, MARTHA) == ["Martha Quill:hair:black", "Martha Quill:eyes:grey"]
    # Someone of her sex in the paragraph before may be meant: nothing is guessed.
    before = "Bessie came in with the tea.\n\n"
    bessie = "# Bessie Lee\n- **Aliases:** Bessie\n- **Pronouns:** she\n"
    assert conflicts(before + said, MARTHA, bessie) == []


def test_height_above_or_below_the_middle_in_feet_or_towering() -> None:
    assert conflicts("Silas was a man rather above the middle height.\n", SILAS) == [
        "Silas Brand:height:above the middle height"
    ]
    assert conflicts("Silas stood six feet and two inches in his boots.\n", SILAS) == [
        "Silas Brand:height:six feet and two inches"
    ]
    assert conflicts("Silas stood six feet away from the door.\n", SILAS) == []
    assert conflicts("Silas was five feet eight.\n", SILAS) == []  # neither, for a man
    assert conflicts("Mr. Brand towered over the clerks.\n", SILAS) == [
        "Silas Brand:height:towered"
    ]
    assert conflicts("Silas was the tallest man in the parish.\n", SILAS) == [
        "Silas Brand:height:tallest"
    ]
    # "a little gentleman" is as often praise; "a little, bent old gentleman" is short.
    assert conflicts("Martha called him a little gentleman. Silas bowed.\n", SILAS) == []
    assert conflicts("Silas was a little, bent old gentleman.\n", MARTHA, SILAS) == []
    assert conflicts("Martha was a little, bent old woman.\n", MARTHA) == [
        "Martha Quill:height:little"
    ]


def test_handedness_by_habit_or_adverb_and_a_left_hander() -> None:
    said = "Silas wrote, as he always did, with his left hand.\n"
    assert conflicts(said, SILAS) == ["Silas Brand:handedness:left hand, by habit"]
    assert conflicts("Silas took the cup in his left hand.\n", SILAS) == []  # once
    assert conflicts("Silas cut the bread left-handed, as his mother had.\n", SILAS) == [
        "Silas Brand:handedness:left-handed"
    ]
    assert conflicts("Silas paid Martha a left-handed compliment.\n", SILAS, MARTHA) == []
    assert conflicts("I was a natural left-hander.", MARTHA, narrator="Martha Quill") == [
        "Martha Quill:handedness:left-hander"
    ]


def test_eyes_of_a_person_a_pair_of_eyes_and_a_value_in_apposition() -> None:
    assert conflicts("The grey eyes of Martha filled with tears.\n", MARTHA) == [
        "Martha Quill:eyes:grey"
    ]
    assert conflicts("Martha looked up with a pair of bright grey eyes.\n", MARTHA) == [
        "Martha Quill:eyes:grey"
    ]
    assert conflicts("Martha's hair, a rich black, fell loose.\n", MARTHA) == [
        "Martha Quill:hair:black"
    ]
    assert conflicts("Martha's hair, a thing of beauty, fell loose.\n", MARTHA) == []
    assert conflicts("Martha looked at the grey eyes of the portrait.\n", MARTHA) == []


def test_the_one_who_looks_is_not_taken_for_the_one_described() -> None:
    said = (
        "Martha Quill was very elegant. Bessie could not but feel all this; and then, her "
        "eyes were a deep grey.\n"
    )
    bessie = "# Bessie Lee\n- **Aliases:** Bessie\n- **Pronouns:** she\n- **Eyes:** blue\n"
    # Bessie looks; the one woman named before her is the one described.
    assert conflicts(said, MARTHA, bessie) == ["Martha Quill:eyes:grey"]
    alone = "Bessie could not but feel it; her eyes were a deep grey.\n"
    assert conflicts(alone, MARTHA, bessie) == ["Bessie Lee:eyes:grey"]
    # Two women named before the one who looks: which one is not guessed.
    two = "Martha and Anne were elegant. " + said.split(". ", 1)[1]
    anne = "# Anne Lee\n- **Aliases:** Anne\n- **Pronouns:** she\n"
    assert conflicts(two, MARTHA, bessie, anne) == []


def test_a_pronoun_is_not_carried_to_a_speaker_who_spoke_of_another() -> None:
    bessie = "# Bessie Lee\n- **Aliases:** Bessie\n- **Pronouns:** she\n- **Eyes:** blue\n"
    said = "“She is indeed, miss,” answered Bessie.\n\nWith her grey eyes, she looked up.\n"
    assert conflicts(said, bessie) == []  # the "she" Bessie spoke of may be meant
    said = "“I am indeed, miss,” answered Bessie.\n\nWith her grey eyes, she looked up.\n"
    assert conflicts(said, bessie) == ["Bessie Lee:eyes:grey"]
    said = "The dawn shone on the man, and Silas could discern that he was tall.\n"
    assert conflicts(said, SILAS) == []  # the man looked at, not the one looking


def test_they_is_one_person_only_by_a_card_and_short_for_a_name_is_no_height() -> None:
    assert conflicts("Martha wrote letters to her aunt. They were short.\n", MARTHA) == []
    assert conflicts("Silas is short for Silvanus.\n", SILAS) == []
    assert conflicts("Martha was short for her age.\n", MARTHA) == ["Martha Quill:height:short"]


def test_portrait_sentences_reach_their_owner() -> None:
    said = "Silas had a brown, weathered face, a short beard, and a pair of keen grey eyes.\n"
    silas_eyes = SILAS + "- **Eyes:** blue\n"
    assert conflicts(said, silas_eyes) == ["Silas Brand:eyes:grey"]
    assert conflicts(said.replace("had", "saw"), silas_eyes) == []  # what he saw is not his
    said = "Martha smiled; her eyes--large, grave, and of the clearest grey--said the rest.\n"
    assert conflicts(said, MARTHA) == ["Martha Quill:eyes:grey"]
    assert conflicts("Martha's hair was of that black which the painters loved.\n", MARTHA) == [
        "Martha Quill:hair:black"
    ]
    said = "Martha came in. Her hair, which she wore without a cap, was already quite black.\n"
    assert conflicts(said, MARTHA) == ["Martha Quill:hair:black"]
    said = "Martha, who stood beneath it to greet Mr. Brand, had hair of the palest red.\n"
    assert conflicts(said, MARTHA, SILAS) == ["Martha Quill:hair:red"]
    assert conflicts("Silas, the elder, was tall and statuesque.\n", SILAS) == [
        "Silas Brand:height:tall",
        "Silas Brand:height:statuesque",
    ]
    assert conflicts("Silas was a very little man; Martha was a tiny thing.\n", SILAS, MARTHA) == [
        "Martha Quill:height:tiny"
    ]


def test_appositions_lists_and_the_one_looked_at_reach_their_owner() -> None:
    said = "It was Silas, a young man with hair as red as a fox's, who answered.\n"
    assert conflicts(said, SILAS) == ["Silas Brand:hair:red"]
    said = "“Of course,” said Silas, the tallest of the three brothers.\n"
    assert conflicts(said, SILAS) == ["Silas Brand:height:tallest"]
    said = "Martha came down; her well-remembered cable of red hair hung loose.\n"
    assert conflicts(said, MARTHA) == ["Martha Quill:hair:red"]
    said = "Silas had a pale skin, thin black hair, dark-brown eyes, and a large forehead.\n"
    assert conflicts(said, SILAS) == ["Silas Brand:hair:black"]
    said = "Martha was elegant. Bessie could not but feel all this; and then her eyes were grey.\n"
    bessie = "# Bessie Lee\n- **Aliases:** Bessie\n- **Pronouns:** she\n- **Eyes:** grey\n"
    assert conflicts(said, MARTHA, bessie) == ["Martha Quill:eyes:grey"]  # the one looked at
    said = "I sat down, for I have been left-handed from a child."
    assert conflicts(said, MARTHA, narrator="Martha Quill") == [
        "Martha Quill:handedness:left-handed"
    ]
    said = "Silas looked grave whatever was said to him, and his grey steady eyes helped him.\n"
    assert conflicts(said, SILAS + "- **Eyes:** blue\n") == ["Silas Brand:eyes:grey"]


def test_how_someone_struck_the_teller_is_how_they_were() -> None:
    said = "Martha struck me as being a tall, wiry, sly person.\n"
    assert conflicts(said, MARTHA.replace("tall", "short")) == ["Martha Quill:height:tall"]
    assert (
        conflicts("Martha saw a tall, wiry, sly person.\n", MARTHA.replace("tall", "short")) == []
    )


def test_portrait_turns_of_phrase_state_their_value() -> None:
    assert conflicts("Martha turned, and I saw how grey her eyes were.\n", MARTHA) == [
        "Martha Quill:eyes:grey"
    ]
    assert conflicts("Martha had eyes of that peculiar grey they call rain.\n", MARTHA) == [
        "Martha Quill:eyes:grey"
    ]
    said = "Martha smiled; her eyes were as bright and as grey as a girl's.\n"
    assert conflicts(said, MARTHA) == ["Martha Quill:eyes:grey"]
    said = "Martha is nineteen, of the middle height, with black hair.\n"
    assert conflicts(said, MARTHA) == ["Martha Quill:height:middle", "Martha Quill:hair:black"]
    assert (
        conflicts(
            "Martha saw from her window towers and spires.\n", MARTHA.replace("tall", "short")
        )
        == []
    )


def test_openings_asides_and_a_hand_drawn_towards_oneself() -> None:
    said = "Being but five feet four, and stout, I have never cut a dashing figure."
    assert conflicts(said, SILAS.replace("short", "tall"), narrator="Silas Brand") == [
        "Silas Brand:height:five feet four"
    ]
    said = "Silas was, in fact, rather above the common height.\n"
    assert conflicts(said, SILAS) == ["Silas Brand:height:above the common height"]
    said = "Silas drew the inkstand towards him and wrote, as always, with his left hand.\n"
    assert conflicts(said, SILAS) == ["Silas Brand:handedness:left hand, by habit"]
    said = "Silas looked at him and wrote, as always, with his left hand.\n"
    assert conflicts(said, SILAS) == []  # "him" is another man: whose hand is not guessed
    assert conflicts("Martha was a little thing.\n", MARTHA) == ["Martha Quill:height:little"]


def test_as_a_left_handed_man_must_grants_it_and_a_likeness_does_not() -> None:
    said = "Silas, stirring his tea with his left hand, as a left-handed man must, smiled.\n"
    assert conflicts(said, SILAS) == ["Silas Brand:handedness:left-handed"]
    said = "Silas watched him as a left-handed man might watch a juggler.\n"
    assert conflicts(said, SILAS) == []


def test_an_aside_between_dashes_and_it_for_the_hair_reach_their_owner() -> None:
    said = "Silas -- we called him old, though he was not fifty -- had a shock of black hair.\n"
    assert conflicts(said, SILAS) == ["Silas Brand:hair:black"]
    said = "Martha took off her bonnet; her hair was cut short, and it was a bright red.\n"
    assert conflicts(said, MARTHA) == ["Martha Quill:hair:red"]
    said = "Martha put a hat on her hair, and it was black.\n"
    assert conflicts(said, MARTHA) == []  # the hat, not the hair


def test_the_word_lists_are_kept_built_and_rebuilt_when_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from controlroom.tools import wordlist

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    built = wordlist._kept("proper", lambda: frozenset(f"Name{i}" for i in range(2000)))
    kept = next((tmp_path / "controlroom" / "wordlists").glob("proper-*.txt"))
    assert wordlist._kept("proper", lambda: frozenset()) == built  # read back, not built
    kept.write_text("Half")  # a damaged file is built again, and replaced
    again = wordlist._kept("proper", lambda: frozenset(f"Other{i}" for i in range(2000)))
    assert "Other1" in again and "Other1" in kept.read_text()


def test_the_blind_batteries_read_no_worse_than_measured() -> None:
    """bench/sentences: passages and plants written by others who never saw the rules. A
    floor under the figures BENCHMARKS.md reports, on every half, and precision at 0.9 or
    better, so a reading that helps one passage and misreads others fails here."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "phase_a_sentences", REPO / "bench" / "phase_a_sentences.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    floors = {
        "battery-1": (0.7, 0.55),
        "battery-2": (0.55, 0.35),
        "plants-1": (0.7, 0.6),
        "plants-2": (0.7, 0.4),
    }
    for name, (dev_floor, held_out_floor) in floors.items():
        path = REPO / "bench" / "sentences" / f"{name}.jsonl"
        items = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        scorer = bench.score_plants if name.startswith("plants") else bench.score
        for part, floor in ((items[0::2], dev_floor), (items[1::2], held_out_floor)):
            found, missed, false = scorer(part, False)
            hits, facts = sum(found.values()), sum(found.values()) + sum(missed.values())
            assert hits >= floor * facts, (name, floor, hits, facts)
            assert hits >= 0.9 * (hits + sum(false.values())), (name, dict(false))


MARGARET = "# Margaret Hale\n- **Aliases:** Margaret\n- **Pronouns:** she\n- **Eyes:** blue\n"
THORNTON = "# John Thornton\n- **Aliases:** Mr. Thornton\n- **Pronouns:** he\n- **Hair:** black\n"
THORNTON_TALL = THORNTON + "- **Height:** short\n"


def test_a_person_kept_in_focus_by_she_is_meant_past_four_sentences() -> None:
    focus = (
        "Until Margaret had learnt the times, she was unfortunate. They jostled her basket. "
        "The girls would comment on her dress. She did not mind the girls. But she dreaded "
        "the workmen. She could not bear it. Out of her fright came a flash which made her "
        "grey eyes gather flame.\n"
    )
    assert conflicts(focus, MARGARET) == ["Margaret Hale:eyes:grey"]
    # a sentence that speaks of nobody as "she" breaks the chain
    broken = focus.replace("She could not bear it.", "It was not to be borne.")
    assert conflicts(broken, MARGARET) == []
    # someone without a card, named on the way, may be the one meant
    named = focus.replace("She did not mind the girls.", "She did not mind Bessy at all.")
    assert conflicts(named, MARGARET) == []
    # or someone unnamed of her sex
    aunt = focus.replace("She did not mind the girls.", "She did not mind her aunt.")
    assert conflicts(aunt, MARGARET) == []


def test_a_height_in_feet_measures_only_after_standing_or_being() -> None:
    said = "Mr. Thornton {} six feet, broad in proportion.\n"
    assert conflicts(said.format("stood well over"), THORNTON_TALL) == [
        "John Thornton:height:six feet"
    ]
    assert conflicts(said.format("was a man of"), THORNTON_TALL) == [
        "John Thornton:height:six feet"
    ]
    for distance in ("jumped", "fell", "dug down"):
        assert conflicts(f"Mr. Thornton {distance} six feet and stopped.\n", THORNTON_TALL) == []


def test_grown_grey_and_a_coloured_head_are_the_hair() -> None:
    # Hair greys as a story's years pass: grey read against a card's black is said, and
    # is no contradiction (Walter Morel's "grizzled head", round 10).
    thornton_fair = THORNTON.replace("black", "fair")
    red_card = THORNTON.replace("black", "red")
    for said, words in (
        ("Mr. Thornton had grown grey in the service of the mill.\n", "grown grey"),
        ("Mr. Thornton's hair had turned white in a single night.\n", "white"),
    ):
        assert hair_read(said, thornton_fair) == [("John Thornton", words)]
        assert conflicts(said, THORNTON) == [] and conflicts(said, red_card) == []
    assert hair_read("“You have grown grey, John,” said Margaret.\n", THORNTON, MARGARET) == [
        ("John Thornton", "grown grey")
    ]
    red = conflicts("Mr. Thornton was red-headed.\n", THORNTON)
    assert red == ["John Thornton:hair:red-headed"]
    # a face gone grey, a cane's head, a light head and a gull are no hair
    for said in (
        "Mr. Thornton's face had gone grey with fear.\n",
        "Mr. Thornton carried a gold-headed cane.\n",
        "Mr. Thornton watched a black-headed gull.\n",
        "Mr. Thornton was light-headed.\n",
        "Mr. Thornton had not grown grey.\n",
    ):
        assert hair_read(said, THORNTON) == [], said


def test_where_no_card_states_it_the_text_is_checked_against_itself() -> None:
    cards = [
        parse_card("People/m.md", "# Margaret Hale\n- **Aliases:** Margaret\n- **Pronouns:** she\n")
    ]
    cast, checks = build_cast(cards), plan_checks(facts_of(cards))
    chapters = {
        "ch02.md": "Margaret shook out her black hair.\n",
        "ch03.md": "Margaret had black hair and grey eyes.\n",
        "ch05.md": "Margaret pinned up her golden hair. Her hair was dark that evening.\n",
        "ch07.md": "Margaret was going grey: her hair was grey at the temples.\n",
    }
    read = [(path, s) for path, text in chapters.items() for s in statements_in(text, cast)]
    found = contradictions_in_text(read, checks)
    assert [(c.path, c.found, c.canon_value, c.against) for c in found] == [
        ("ch05.md", "golden", "black", "ch02.md:1")
    ]
    assert "but ch02.md:1 says 'black' (no card states it" in found[0].describe()
    # a card that states the attribute is the measure instead (the card check's finding)
    carded = [
        parse_card("People/m.md", "# Margaret Hale\n- **Pronouns:** she\n- **Hair:** black\n")
    ]
    assert contradictions_in_text(read, plan_checks(facts_of(carded))) == []


def test_a_whole_book_check_says_what_it_could_not_check_and_reads_the_text_against_itself(
    tmp_path: Path,
) -> None:
    """End to end through the CLI (a new user's trial): cards whose values the checker
    cannot read no longer end in a bare "No corrections needed", and two chapters that
    disagree where no card says are a finding."""
    from tests.test_cli_e2e import cli

    root = tmp_path / "alice"
    (root / "Chapters").mkdir(parents=True)
    (root / "Notes" / "People").mkdir(parents=True)
    (root / "Notes" / "People" / "Rabbit.md").write_text(
        "# White Rabbit\n- **Pronouns:** he\n- **Eyes:** pink\n- **Role:** herald\n"
    )
    (root / "Notes" / "People" / "Alice.md").write_text("# Alice\n- **Pronouns:** she\n")
    (root / "Chapters" / "01.md").write_text("# Chapter 1\n\nAlice shook out her black hair.\n")
    (root / "Chapters" / "02.md").write_text("# Chapter 2\n\nAlice had long golden hair.\n")
    ran = cli("run", "analytical_consistency", "-w", str(root), "-q", "--json")
    assert ran.returncode == 1, ran.stderr  # the contradiction fails the DoD and opens an issue
    view = json.loads(ran.stdout)
    assert view["status"] == "failed"
    review = cli("slot", view["run_id"], "continuity_report", "-w", str(root), "--json")
    said = json.loads(json.loads(review.stdout)["text"])
    assert [f["message"] for f in said["findings"]] == [
        "Chapters/02.md:3: Alice's hair is 'golden' but Chapters/01.md:3 says 'black' (no card "
        "states it; in “had long golden hair”)"
    ]
    unread = (
        "White Rabbit's eyes ('pink'): value 'pink' is not in the eyes vocabulary (amber, "
        "azure, black, blue, brown, chestnut, cornflower, dark, ebony, emerald, gray, green, ...)"
    )
    assert said["not_checked"] == [unread]  # the role is bookkeeping, not left unchecked
    written = (root / "control-room-reports" / "corrections.md").read_text()
    assert "change 'golden' to 'black' (Alice's hair as Chapters/01.md:3 gives it)" in written
    assert f"## Not checked\n- {unread}" in written


def test_height_told_by_idiom_reaches_its_subject() -> None:
    # A card that says "short" is contradicted by each way of saying tall, and the reverse.
    tall = {
        "Silas stood head and shoulders above every other man in the room.\n": "head and "
        "shoulders above",
        "Silas was a giant of a man, broad in proportion.\n": "giant of a man",
        "Silas was a man of great stature.\n": "of great stature",
        "Silas was of great height.\n": "of great height",
        "Silas was a head taller than any man in the parish.\n": "head taller",
        "Silas was taller by a head than his brother.\n": "taller by a head",
    }
    for said, words in tall.items():
        assert conflicts(said, SILAS) == [f"Silas Brand:height:{words}"], said
    short = {
        "Martha came scarcely to his elbow.\n": "came scarcely to his elbow",
        "Martha barely reached his shoulder.\n": "reached his shoulder",
        "Martha was a woman of small stature.\n": "of small stature",
        "Martha was of rather less than the middle height.\n": "less than the middle height",
    }
    for said, words in short.items():
        assert conflicts(said, MARTHA) == [f"Martha Quill:height:{words}"], said


def test_height_idioms_are_read_only_whole_and_of_a_person() -> None:
    for said in (
        "Silas came up to his shoulder and tapped it.\n",  # a walk, not a measure
        "Silas reached his shoulder and laid a hand upon it.\n",
        "The water came up to Silas's waist.\n",
        "The tower was of great height, and Silas looked up at it.\n",
        "Silas was a man of great ability.\n",
        "Silas was not a man of great stature.\n",
        "Silas was a giant of industry.\n",
        "Silas's horse was a giant of a beast.\n",
        "Silas had more than the common share of sense.\n",
    ):
        assert conflicts(said, SILAS) == [], said


def test_a_hand_or_arm_used_by_habit_and_had_always_been() -> None:
    assert conflicts("Silas had always been left-handed.\n", SILAS) == [
        "Silas Brand:handedness:left-handed"
    ]
    assert conflicts("Silas threw with his left arm, as he always did.\n", SILAS) == [
        "Silas Brand:handedness:left arm, by habit"
    ]
    assert conflicts("Silas held his hat in his left hand, as usual.\n", SILAS) == []


def test_a_shade_before_a_colour_after_of_that_is_the_colour() -> None:
    said = "Martha's hair was of that dark red which is almost brown.\n"
    assert conflicts(said, MARTHA) == ["Martha Quill:hair:red"]


def test_a_feature_had_from_kin_and_a_coloured_head_are_the_persons_own() -> None:
    assert conflicts("Martha has her father's grey eyes.\n", MARTHA) == ["Martha Quill:eyes:grey"]
    assert conflicts("Martha looked into her father's grey eyes.\n", MARTHA) == []
    assert hair_read("Silas bowed his white head.\n", SILAS_BLACK) == [("Silas Brand", "white")]
    assert conflicts("Silas shook his head.\n", SILAS_BLACK) == []
    assert conflicts("Silas struck the red head of the match.\n", SILAS_BLACK) == []


def test_a_person_comes_up_to_a_shoulder_their_hair_or_hand_does_not() -> None:
    for said in (
        "Martha's hair came to her waist.\n",
        "Martha's hand came up to her chin.\n",
        "The water came up to Martha's waist.\n",
        "Martha came up to his shoulder, and laid her hand on it.\n",
    ):
        assert conflicts(said, MARTHA) == [], said
    assert conflicts("Martha came up to his shoulder.\n", MARTHA) == [
        "Martha Quill:height:came up to his shoulder"
    ]


def test_a_state_a_relative_clause_puts_in_the_past_is_not_the_present_one() -> None:
    said = "Silas's hair, which had once been black, was now quite white.\n"
    assert hair_read(said, SILAS_BLACK) == [("Silas Brand", "white")]


def test_a_shade_superlative_value_noun_or_simile_in_apposition_state_the_value() -> None:
    assert conflicts("Martha's hair was light brown.\n", MARTHA) == ["Martha Quill:hair:brown"]
    assert conflicts("Martha had the blackest hair in the parish.\n", MARTHA) == [
        "Martha Quill:hair:blackest"
    ]
    assert conflicts("Martha was a brunette.\n", MARTHA) == ["Martha Quill:hair:brunette"]
    assert conflicts("Martha's eyes, blue as the sky, met his.\n", MARTHA) == [
        "Martha Quill:eyes:blue"
    ]
    assert conflicts("Martha had the darkest hour of her life.\n", MARTHA) == []


def test_a_names_possessive_before_a_noun_is_not_the_clauses_subject() -> None:
    assert conflicts("Martha's brother had blue eyes.\n", MARTHA) == []
    assert conflicts("Martha's baby had the bluest eyes in the parish.\n", MARTHA) == []


def test_a_small_grown_person_past_other_adjectives_and_an_aside_before_the_verb() -> None:
    assert conflicts("Martha was a small, neat woman.\n", MARTHA) == ["Martha Quill:height:small"]
    assert conflicts("Martha lived in a small, neat house.\n", MARTHA) == []
    assert conflicts("Martha, I should say, was of a smallish stature.\n", MARTHA) == [
        "Martha Quill:height:of a smallish stature"
    ]


def test_speech_in_curly_single_quotes_is_speech_and_a_word_set_off_is_not() -> None:
    from controlroom.tools.text import quoted_spans

    said = "‘Dora,’ said I, ‘you don’t mean it.’ It was Peggotty’s house, called ‘Dick’."
    assert [said[s:e] for s, e in quoted_spans(said)] == ["‘Dora,’", "‘you don’t mean it.’"]
    # the first-person "I" inside the speech is the speaker's, not the narrator's
    text = "‘I know I am a very little woman!’ said Martha.\n"
    assert conflicts(text, MARTHA, DAVID, narrator="David Grey") == ["Martha Quill:height:little"]
    # and "a silly little thing" is a judgement, not a height
    assert conflicts("‘I am a silly little thing!’ said Martha.\n", MARTHA, DAVID) == []


def test_a_relative_clause_or_a_possessive_between_a_name_and_its_verb_is_passed() -> None:
    said = "Silas, who had passed the cup to Martha, was a tall, crimson man.\n"
    assert conflicts(said, SILAS, MARTHA) == ["Silas Brand:height:tall"]
    # whose she is is not the one described: the name before the apposition is
    said = "Martha, the miller's great-granddaughter, a short, well-grown girl, was there.\n"
    assert conflicts(said, MARTHA, MILLER) == ["Martha Quill:height:short"]
    assert hair_read("Silas was handsome, though grey-haired.\n", SILAS_BLACK) == [
        ("Silas Brand", "grey-haired")
    ]
    said = "Silas (who was left-handed, and dangerous on that account) laughed.\n"
    assert conflicts(said, SILAS) == ["Silas Brand:handedness:left-handed"]


def test_a_lower_case_alias_opens_a_sentence_and_a_name_without_a_card_keeps_his() -> None:
    aunt = "# Betsey Trotwood\n- **Aliases:** my aunt\n- **Pronouns:** she\n- **Height:** short\n"
    assert conflicts("My aunt was a tall, hard-featured lady.\n", aunt) == [
        "Betsey Trotwood:height:tall"
    ]
    said = "Silas came in. So Solomon, holding his white head on one side, played on.\n"
    assert hair_read(said, SILAS_BLACK) == []


def test_kind_of_possessed_features_and_features_joined_before_of_a_name() -> None:
    assert conflicts("Silas had that kind of shallow grey eye.\n", SILAS_BROWN_EYES) == [
        "Silas Brand:eyes:grey"
    ]
    said = "It lurked in the narrow green eyes and compressed lips of Silas Brand.\n"
    assert conflicts(said, SILAS_BROWN_EYES) == ["Silas Brand:eyes:green"]
    assert conflicts("Silas was then simply a pallid man, with grey eyes.\n", SILAS_BROWN_EYES) == [
        "Silas Brand:eyes:grey"
    ]


def test_a_stranger_described_then_named_as_the_one_in_view_is_that_person() -> None:
    said = (
        "A handsome man leaned idly from the lattice. He looked east and west with a pair "
        "of bold black eyes. The man was Silas Brand.\n"
    )
    assert conflicts(said, SILAS_BROWN_EYES) == ["Silas Brand:eyes:black"]
    said = (
        "Martha came in--a very tall ungainly gentleman advanced to meet her.\n\n"
        "This was no other than Silas Brand, returned from the Indies.\n"
    )
    assert conflicts(said, SILAS, MARTHA) == ["Silas Brand:height:tall"]
    # named, but not as the one in view: nothing is guessed
    said = "A man came in. He had blue eyes. It was Tuesday, and Silas sat down.\n"
    assert conflicts(said, SILAS_BROWN_EYES) == []
    said = "A tall gentleman came in. Silas looked at him.\n"
    assert conflicts(said, SILAS) == []


def test_the_readiest_hand_did_everything_and_a_place_in_front_of_him() -> None:
    said = "Martha took the reins with the left hand, which was always her readiest.\n"
    assert conflicts(said, MARTHA) == ["Martha Quill:handedness:left hand, her readiest"]
    said = "Martha took the reins with the left hand, which was not her readiest.\n"
    assert conflicts(said, MARTHA) == []
    said = "Martha copied the letters (writing, as she did everything, with her left hand).\n"
    assert conflicts(said, MARTHA) == ["Martha Quill:handedness:left hand, by habit"]
    said = "Silas sat at the table, with a bottle in front of him. He was a tall man.\n"
    assert conflicts(said, SILAS) == ["Silas Brand:height:tall"]


def test_a_coloured_head_before_a_name_and_the_eyes_one_looks_out_of() -> None:
    assert conflicts("In steps black-headed Silas of Glenure.\n", SILAS) == [
        "Silas Brand:hair:black-headed"
    ]
    said = (
        "The man with the green eyes came first. Silas looked me in the face out of his "
        "cold blue eyes.\n"
    )
    assert conflicts(said, SILAS_BROWN_EYES) == ["Silas Brand:eyes:blue"]


def test_a_long_aside_and_a_reflexive_do_not_count_towards_the_reach() -> None:
    said = "Mr. Brand was, I am bound to confess, a very little man.\n"
    assert conflicts(said, SILAS.replace("**Height:** short", "**Height:** tall")) == [
        "Silas Brand:height:little"
    ]
    said = "Martha, who was herself so slight and so short that all forgot her, wondered.\n"
    assert conflicts(said, MARTHA) == ["Martha Quill:height:short"]
    assert conflicts("Silas thought himself tall.\n", SILAS) == []


def test_the_eyes_one_turns_upon_someone_are_ones_own() -> None:
    said = "Martha turned upon him a pair of grey eyes.\n"
    assert conflicts(said, MARTHA, SILAS) == ["Martha Quill:eyes:grey"]
    said = "Silas turned upon her a pair of grey eyes.\n"
    assert conflicts(said, MARTHA, SILAS_BROWN_EYES) == ["Silas Brand:eyes:grey"]


def test_such_was_names_the_stranger_and_the_hair_beneath_a_hat_is_its_wearers() -> None:
    said = "A small, quiet person with grey eyes — such was Martha Quill in those days.\n"
    assert conflicts(said, MARTHA) == ["Martha Quill:height:small", "Martha Quill:eyes:grey"]
    said = "Silas was an old man now, and the hair beneath his hat was white.\n"
    assert hair_read(said, SILAS_BLACK) == [("Silas Brand", "white")]


def test_an_apposition_opened_by_the_describes_the_name_before_it() -> None:
    said = '"Play on," said Silas, the tall young married man who had spoken before.\n'
    assert conflicts(said, SILAS) == ["Silas Brand:height:tall"]
    assert conflicts("Silas bowed to the doctor, the tall man in black.\n", SILAS) == []


def test_a_second_predicate_and_of_a_value_states_it() -> None:
    said = "Martha's eyes, which were enormous, and of a grey so dark, met his.\n"
    assert conflicts(said, MARTHA) == ["Martha Quill:eyes:grey"]
    assert conflicts("Martha's eyes were large, and full of tears.\n", MARTHA) == []


def test_a_family_feature_had_and_a_clause_of_place_before_the_verb() -> None:
    assert conflicts("Martha had the Quill eyes, a deep blue.\n", MARTHA) == [
        "Martha Quill:eyes:blue"
    ]
    said = "Martha's own hair, where it showed at the back under her cap, was quite grey.\n"
    assert hair_read(said, MARTHA) == [("Martha Quill", "grey")]


def test_a_value_set_off_by_a_dash_after_a_predicate_that_names_none() -> None:
    said = "Martha's eyes were too pale for her colouring—a cold, light blue.\n"
    assert conflicts(said, MARTHA) == ["Martha Quill:eyes:blue"]
    assert conflicts("Martha's eyes were not pale—a cold blue.\n", MARTHA) == []


def test_her_name_is_names_the_lady_met_before() -> None:
    said = "I have met the lady. She has grey eyes and no conversation. Her name is Martha.\n"
    assert conflicts(said, MARTHA) == ["Martha Quill:eyes:grey"]


def test_a_name_variant_inside_another_name_beside_the_name_or_a_rank_is_no_slip(
    tmp_path: Path,
) -> None:
    from controlroom.tools.builtin.consistency_checker import name_variants

    (tmp_path / "ch.md").write_text(
        "# Chapter 1\n\nThey say the Jeune Amelie was his. You should see me brother Molloy "
        "Malony's horse. Write to Miss Eliza Styles, at Mr. Barnet's, Saddler. Smee was a "
        "pupil of Sharpe of Frith Street. How's Buty? Buty's my brother Bute. Ask for Madame "
        "de Raudon. Then Amelya came in, and Rawdon Crowley laughed.\n"
    )
    known = {
        *("Amelia Sedley", "Amelia", "Molly", "Rawdon Crawley", "Rawdon", "Crawley"),
        *("Bute Crawley", "Bute", "Rebecca Sharp", "Sharp", "the Baronet", "Baronet"),
    }
    found = [v["found"] for v in name_variants(Workspace(tmp_path), ["ch.md"], known)]
    # only the slips of the cast's own names: "Amelya came in", "Rawdon Crowley"
    assert found == ["Amelya", "Crowley"]


def test_a_towns_name_where_a_place_stands_is_no_slip(tmp_path: Path) -> None:
    from controlroom.tools.builtin.consistency_checker import name_variants

    (tmp_path / "ch.md").write_text(
        "# Chapter 1\n\nJane Osborne sat by the fire. The Prussians were three to one at "
        "Jena, he said. Then the old man spoke of Jane again, and she wept. Jena dried her "
        "eyes at last.\n"
    )
    known = {"Jane Osborne", "Jane", "Osborne"}
    found = [
        (v["found"], v["sentence"]) for v in name_variants(Workspace(tmp_path), ["ch.md"], known)
    ]
    # the town at Jena is Jena; "Jena dried her eyes" can only be Jane
    assert found == [("Jena", "Jena dried her eyes at last.")]


def test_height_fronted_compared_with_everyone_grown_to_or_of_stature() -> None:
    # SILAS's card says short, MARTHA's tall: each sentence contradicts it, or says nothing
    for said, card, expected in (
        ("Tall and gaunt, Silas stood at the door.", SILAS, ["Silas Brand:height:tall"]),
        ("Silas was taller than any man in the parish.", SILAS, ["Silas Brand:height:taller"]),
        ("Silas had grown tall.", SILAS, ["Silas Brand:height:tall"]),
        (
            "Silas was a man of commanding height.",
            SILAS,
            ["Silas Brand:height:of commanding height"],
        ),
        ("Martha was small of stature.", MARTHA, ["Martha Quill:height:small"]),
        ("Martha was short in stature.", MARTHA, ["Martha Quill:height:short"]),
        # not said of anyone, or no height
        ("Tall trees lined the road, and Silas walked on.", SILAS, []),
        ("Tall grasses, Silas said, hid the path.", SILAS, []),
        ("Silas was taller than Tom.", SILAS, []),
        ("Silas had grown taller.", SILAS, []),
        ("Short of breath, Silas sat down.", SILAS, []),
        ("Small wonder, Silas thought, that she left.", SILAS, []),
        ('"Tall and thin, Silas is," said Martha.', SILAS, []),
        ("Dark and tall, the house stood above us, and Silas knocked.", SILAS, []),
    ):
        assert conflicts(said + "\n", card) == expected, said


def test_what_five_unseen_novels_read_wrongly_is_no_finding(tmp_path: Path) -> None:
    """Each line is a false finding a whole-book check once made on a novel as published
    (The Mill on the Floss, Lorna Doone, The Hound of the Baskervilles), in its shape."""
    # someone unnamed of that sex, brought in beside the one named, may be the one meant
    said = "It was Bob's wife who opened the door to Martha. She was a tiny woman.\n"
    assert conflicts(said, MARTHA) == []
    said = "Expecting to see Silas, I found it was a stranger. He was a small, slim man.\n"
    assert conflicts(said, DAVID.replace("David Grey", "Silas")) == []
    # a strand is no colour of a head of hair
    assert hair_read("Martha pulled her one grey hair out.\n", MARTHA) == []
    assert hair_read("Martha's hair was grey.\n", MARTHA) == [("Martha Quill", "grey")]
    # a light-brown head is fair in another light, or on a child; never black
    lucy = "# Lucy Deane\n- **Aliases:** Lucy\n- **Pronouns:** she\n- **Hair:** light-brown\n"
    assert conflicts("Lucy's blond curls were adjusted.\n", lucy) == []
    assert conflicts("Lucy's black curls were adjusted.\n", lucy) == ["Lucy Deane:hair:black"]
    # speech in plain single quotes is speech: its "I" is the speaker's, not the narrator's
    said = (
        "'If you please, madam,' said the little maiden, 'it is no fault of mine that I am "
        "a little dwarfish creature.'\n"
    )
    assert conflicts(said, DAVID, narrator="David Grey") == []
    # a dialect speaker's sound of a name is no slip; in plain speech it is
    from controlroom.tools.builtin.consistency_checker import name_variants

    (tmp_path / "ch.md").write_text(
        "# Chapter 1\n\nLorna came in, and Lorna sat down. 'Jan,' said Betty, 'there be no "
        "man cud a' dood it. Now thee shalt have Larna.'\n\n“It is Lorne,” said Jan.\n"
    )
    found = name_variants(Workspace(tmp_path), ["ch.md"], {"Lorna Doone", "Lorna"})
    assert [v["found"] for v in found] == ["Lorne"]


def test_what_five_more_unseen_novels_read_wrongly_is_no_finding(tmp_path: Path) -> None:
    """False findings of a second audit (Oliver Twist, The Prisoner of Zenda, Agnes Grey,
    The Mayor of Casterbridge), in their shape."""
    monks = "# Monks\n- **Pronouns:** he\n- **Height:** tall\n"
    assert conflicts("Monks turned short upon the matron, and bent his gaze.\n", monks) == []
    assert conflicts("Monks was short.\n", monks) == ["Monks:height:short"]
    marshal = "# Marshal Strakencz\n- **Aliases:** the Marshal\n- **Pronouns:** he\n"
    marshal += "- **Height:** tall\n"
    said = "Just behind the Marshal stood a short spare man, in flowing robes.\n"
    assert conflicts(said, marshal) == []
    # a card's idiom is read as the text's is: "a very little above the middle size"
    weston = "# Edward Weston\n- **Aliases:** Weston\n- **Pronouns:** he\n"
    weston += "- **Height:** a very little above the middle size\n"
    said = "Weston came in. In stature he was a little, a very little, above the middle size.\n"
    assert conflicts(said, weston) == []
    assert conflicts("Weston was short.\n", weston) == ["Edward Weston:height:short"]
    from controlroom.tools.vocabulary import HEIGHT

    assert HEIGHT.classes("six feet two inches") == {"tall"}
    assert HEIGHT.classes("of ordinary stature") == {"middle"}
    assert HEIGHT.classes("rather below the middle height") == {"middle", "short"}
    # a card's height in the book's own words: a comma, "hardly more than", "upwards of"
    assert HEIGHT.classes("hardly more than five feet, four inches") == {"middle", "short"}
    assert HEIGHT.classes("upwards of six feet") == {"tall"}
    assert HEIGHT.classes("barely five feet") == {"short"}
    assert HEIGHT.classes("tall, yet not too tall") == {"tall"}
    assert HEIGHT.classes("not too tall") == set()
    assert HEIGHT.classes("not very tall") == {"middle", "short"}
    # a name groped for, or a variant the text itself introduces, and an alias's plural
    from controlroom.tools.builtin.consistency_checker import name_variants

    (tmp_path / "ch.md").write_text(
        '# Chapter 1\n\nJopp came. "Joshua, Jipp--Jopp--what was his name?" Lucetta sat. '
        'He knew Lucetta--or "Lucette," as she called herself. "I mean all you Scotchmen," '
        "she said. Then Joop went home.\n"
    )
    known = {"Joshua Jopp", "Jopp", "Lucetta Templeman", "Lucetta", "Scotchman"}
    found = name_variants(Workspace(tmp_path), ["ch.md"], known)
    assert [v["found"] for v in found] == ["Joop"]
    # dialect clipped with an apostrophe, and a restaurant named for a man, are no slips;
    # a slip's possessive with its noun still is
    (tmp_path / "ch.md").write_text(
        "# Chapter 1\n\n'I ha' thought till my brains ached,--Beli' me, John.' Bell came. "
        "\"Let us lunch at Henri's.\" Henry nodded. Bell went to Henri's house.\n"
    )
    found = name_variants(Workspace(tmp_path), ["ch.md"], {"Bell", "Henry", "John"})
    assert [v["found"] for v in found] == ["Henri"]


def test_a_list_of_features_after_a_frame_and_a_name_set_off_in_quotes() -> None:
    tom = "# Tom Bloomfield\n- **Aliases:** Tom\n- **Pronouns:** he\n- **Hair:** black\n"
    tom += "- **Eyes:** brown\n"
    said = "Tom was a boy of seven, with a somewhat wiry frame, flaxen hair, blue eyes.\n"
    assert conflicts(said, tom) == ["Tom Bloomfield:hair:flaxen", "Tom Bloomfield:eyes:blue"]
    said = "Tom had a wiry frame, flaxen hair and blue eyes.\n"
    assert conflicts(said, tom) == ["Tom Bloomfield:hair:flaxen", "Tom Bloomfield:eyes:blue"]
    from controlroom.tools.text import quoted_spans

    said = "this was ‘Uncle Robson,’ Mrs. Bloomfield’s brother. He cried ‘Jane!’ and ran."
    assert [said[s:e] for s, e in quoted_spans(said)] == ["‘Jane!’"]


def test_what_a_third_audit_read_wrongly_is_no_finding(tmp_path: Path) -> None:
    """Villette and King Solomon's Mines, in their shape."""
    bretton = "# Mrs. Bretton\n- **Aliases:** Louisa Bretton\n- **Pronouns:** she\n"
    bretton += "- **Height:** tall\n"
    # the paragraph opens on someone carried over ("She obeyed"), not on Mrs. Bretton
    said = (
        "She obeyed; went and returned. He was talking to Mrs. Bretton when she came back. "
        "It was a picture to see her, with her tiny stature, standing at his knee.\n"
    )
    assert conflicts(said, bretton) == []
    said = "Mrs. Bretton came in. It was a picture to see her, with her tiny stature.\n"
    assert conflicts(said, bretton) == ["Mrs. Bretton:height:tiny"]
    from controlroom.tools.builtin.consistency_checker import name_variants

    (tmp_path / "ch.md").write_text(
        "# Chapter 1\n\nLouisa came in, and Louisa sat. Gagool laughed, and Gagool wept.\n\n"
        '"Louise Vanderkelkov has fallen ill," said the teacher.\n\n'
        "Com meus proprios olhos vé os diamantes sem conto guardados nas camaras do "
        "thesouro. Mate Gagoal. Reze por minha alma.\n\nThen Louisa saw Gagoal smile.\n"
    )
    found = name_variants(Workspace(tmp_path), ["ch.md"], {"Louisa Bretton", "Louisa", "Gagool"})
    # another person with a surname no card has; a letter quoted in Portuguese
    assert [(v["found"], v["line"]) for v in found] == [("Gagoal", 9)]


def test_what_a_fourth_audit_read_wrongly_is_no_finding() -> None:
    """Adam Bede, in its shape."""
    dinah = "# Dinah Morris\n- **Aliases:** Dinah\n- **Pronouns:** she\n"
    dinah += "- **Height:** middle height\n"
    said = (
        "Dinah came up. While she was near Seth's tall figure, she looked short, but on the "
        "cart she seemed above the middle height of woman, though in reality she did not "
        "exceed it.\n"
    )
    assert conflicts(said, dinah) == []  # how tall one looks is beside whom one stands
    assert conflicts("Dinah was short.\n", dinah) == ["Dinah Morris:height:short"]
    adam = "# Adam Bede\n- **Aliases:** Adam\n- **Pronouns:** he\n- **Hair:** jet-black\n"
    said = "Adam picked it up; he saw the glass with the dark and light locks of hair under it.\n"
    assert conflicts(said, adam) == []  # hair cut and kept is no one's head
    assert conflicts("Adam had light locks.\n", adam) == ["Adam Bede:hair:light"]


def test_a_colour_before_another_noun_is_that_nouns() -> None:
    said = "In her lap, and clinging to her hair, were red and yellow leaves which fell.\n"
    assert conflicts(said, MARTHA) == []
    assert conflicts("Martha's hair was red as fire.\n", MARTHA) == ["Martha Quill:hair:red"]


AUDLEY = (
    "# Lady Audley\n\n## Aliases\n\nLucy Audley, my lady, Mrs. Talboys, Lucy\n\n## Eyes\n\ngrey\n"
)
ROBERT = (
    "# Robert Audley\n\n## Aliases\n\nRobert, Mr. Audley, Mr. Robert Audley, Bob\n\n"
    "## Eyes\n\ngrey\n"
)


def owners(text: str, *cards: str) -> list[str]:
    parsed = [parse_card(f"Bible/card{i}.md", c) for i, c in enumerate(cards)]
    return [
        f"{s.entity}:{s.kind.attribute}:{s.words}"
        for s in statements_in(text, build_cast(parsed), None)
    ]


def test_a_heading_cards_names_may_hold_titles_and_run_long() -> None:
    """ "Mr. Audley" in an aliases section is no sentence's end; a list of names may run
    past a value's length (a fifth audit's cards lost both, and with them who is "he")."""
    robert = parse_card("Bible/Robert Audley.md", ROBERT)
    assert robert.aliases == ("Robert", "Mr. Audley", "Mr. Robert Audley", "Bob")
    assert robert.gender == "he"
    names = "Lucy Audley, my lady, Lucy Graham, Helen Talboys, Helen Maldon, Mrs. Talboys, Lucy"
    lady = parse_card("Bible/Lady Audley.md", f"# Lady Audley\n\n## Aliases\n\n{names}\n")
    assert len(lady.aliases) == 7
    # sentences under a described attribute are its value, kept to be checked or said not
    # to be (round 18: "## Hair" over "His forehead is prematurely bald. His big
    # chestnut-colored beard …" vanished from the facts); under any other heading, prose is
    # a biography, not a value
    prose = parse_card("Bible/x.md", "# X\n\n## Eyes\n\nGrey. She hid them.\n")
    assert prose.attributes["eyes"] == "Grey. She hid them"
    prose = parse_card("Bible/x.md", "# X\n\n## Youth\n\nBorn poor. She rose.\n")
    assert "youth" not in prose.attributes


def test_what_a_fifth_audit_read_wrongly_is_no_finding() -> None:
    garden = "# Dickon Sowerby\n- Pronouns: he\n- Eyes: blue\n"
    craven = "# Archibald Craven\n- Aliases: Mr. Craven\n- Height: short\n"
    beebe = "# Arthur Beebe\n- Aliases: Mr. Beebe\n- Hair: fair\n"
    alicia = "# Alicia Audley\n- Aliases: Alicia\n- Pronouns: she\n- Hair: brown\n"
    colin = "# Colin Craven\n- Aliases: Colin\n- Pronouns: he\n- Eyes: grey\n"
    george = "# George Talboys\n- Aliases: George\n- Eyes: brown\n"
    # "her" is the woman's who stares, not the man stared at; with nobody before, nobody's
    stare = "Lucy Audley cried out. She stood staring at Robert Audley, her blue eyes glittering.\n"
    assert owners(stare, AUDLEY, ROBERT) == ["Lady Audley:eyes:blue"]
    assert owners("She stood staring at George, her blue eyes glittering.\n", george) == []
    # the robin, "he", sets his eye on Dickon: he is not Dickon
    robin = (
        "For some mysterious reason he knew he need not watch Dickon. The first moment he set "
        "his dew-bright black eye on Dickon he knew he was not a stranger.\n"
    )
    assert owners(robin, garden) == []
    assert owners("Colin kept his strange black-lashed eyes fixed on the door.\n", colin) == []
    # "he held him away": two men in play, and the next paragraph's "He" may be either
    boy = (
        "Mr. Craven had extended them just in time to save him from falling, and when he held "
        "him away to look at him he truly gasped for breath.\n\nHe was a tall boy.\n"
    )
    assert owners(boy, craven) == []
    assert owners("Mr. Craven came in and sat down.\n\nHe was a tall man.\n", craven) == [
        "Archibald Craven:height:tall"
    ]
    child = (
        "Mr. Beebe’s last vision was of the garden-child clasping it like a lover, his dark "
        "head buried in a wealth of blossom.\n"
    )
    assert owners(child, beebe) == []
    assert owners("Mr. Beebe, a kindly man, turned his dark head.\n", beebe) == [
        "Arthur Beebe:hair:dark"
    ]
    compared = "He married a young person, no older than Alicia herself, with flaxen ringlets.\n"
    assert owners(compared, alicia) == []
    # a paragraph about "she", carried over, keeps her in play beside whom it names
    phoebe = "# Phoebe Marks\n- Aliases: Phoebe\n- Eyes: grey\n"
    carried = (
        "Phoebe was busy at a little table, darning as daintily as if they had been my "
        "lady's silken hose.\n\nI say that she took no color from external things, in the "
        "Castle Inn as in Lady Audley's boudoir.\n\nShe looked up. There was some shade of "
        "vexation in her pale blue eyes.\n"
    )
    assert owners(carried, AUDLEY, phoebe) == []
    # words after a predicate noun and a comma are said of its subject
    michael = "# Sir Michael Audley\n- Aliases: Sir Michael\n- Height: short\n"
    big = "Sir Michael Audley was fifty-six. He was a big man, tall and stout.\n"
    assert owners(big, michael) == ["Sir Michael Audley:height:tall"]
    assert owners("Sir Michael stood by a man, tall and stout.\n", michael) == []
    # "She was a very pretty girl": the girl is she, nobody else in play; "a girl came in"
    # is someone else
    harriet = "# Harriet Smith\n- Aliases: Harriet\n- Pronouns: she\n- Eyes: brown\n"
    pretty = (
        "Harriet Smith was the natural daughter of somebody.\n\nShe was a very pretty "
        "girl. She was short, plump, and fair, with blue eyes.\n"
    )
    assert owners(pretty, harriet) == ["Harriet Smith:height:short", "Harriet Smith:eyes:blue"]
    other = pretty.replace("She was a very pretty girl.", "A very pretty girl came in.")
    assert owners(other, harriet) == []
    # a figure seen, then named: "The tall form was that of Gabriel Oak"; not someone's view
    oak = "# Gabriel Oak\n- Aliases: Oak\n- Pronouns: he\n- Height: tall\n"
    assert owners("The tall form was that of Gabriel Oak.\n", oak) == ["Gabriel Oak:height:tall"]
    assert owners("Liddy saw the tall form. It was that of Gabriel Oak.\n", oak) == []
    assert owners("The tall form was that of a man near Oak.\n", oak) == []
    # how a named person came into view: "Lily Bart appeared, tall and noble"
    lily = "# Lily Bart\n- Aliases: Lily\n- Pronouns: she\n- Height: tall\n"
    came = "Lily Bart appeared, tall and noble in her black dress, with Gerty at her side.\n"
    assert owners(came, lily) == ["Lily Bart:height:tall"]
    assert owners("Lily Bart appeared, tall men behind her.\n", lily) == []
    assert owners("Then Lily Bart appeared, tall and pale.\n", lily) == []
    opened = "The door opened, and Lily Bart appeared, tall and noble in her black dress.\n"
    assert owners(opened, lily) == ["Lily Bart:height:tall"]
    assert owners("When the door opened, Lily Bart appeared, tall and pale.\n", lily) == []


def test_a_correction_changes_the_flagged_word_to_the_cards_own_word() -> None:
    from controlroom.models.offline_roles import propose_corrections

    message = (
        "book/ch_04.md:11: Alicia Audley's hair is 'flaxen' but canon says 'waving brown "
        "hair; a handsome brunette' (in “with flaxen ringlets”)"
    )
    said = propose_corrections("", [("report", json.dumps({"findings": [{"message": message}]}))])
    assert "change 'flaxen' to 'brown' (Alicia Audley's hair per the canon card:" in said


def test_a_slip_of_a_pet_name_is_offered_the_pet_name(tmp_path: Path) -> None:
    """Lady Audley's Secret's one "Georgie" among 49 "Georgey": the slip is for the boy's
    pet name, one letter further than "George" but spelt the same save its ending."""
    from controlroom.tools.builtin.consistency_checker import name_variants

    (tmp_path / "ch.md").write_text(
        "# Chapter 1\n\nGeorge Talboys came home. Georgey ran to him, and then Georgie, "
        "perceiving the distress of his old protector, set up a terrible howl.\n"
    )
    known = {"George Talboys", "George", "Georgey Talboys", "Georgey"}
    found = [
        (v["found"], v["expected"]) for v in name_variants(Workspace(tmp_path), ["ch.md"], known)
    ]
    assert found == [("Georgie", "Georgey")]
    # Far from the Madding Crowd's one "Cainey" among 23 "Cainy": the pet name, not "Cain"
    (tmp_path / "ch.md").write_text(
        "# Chapter 1\n\nCainy Ball ran in. Then Cainey Ball to be under-shepherd, said Cain.\n"
    )
    known = {"Cainy Ball", "Cainy", "Cain Ball", "Cain", "Ball"}
    found = [
        (v["found"], v["expected"]) for v in name_variants(Workspace(tmp_path), ["ch.md"], known)
    ]
    assert found == [("Cainey", "Cainy")]


def test_what_a_sixth_audit_read_wrongly_is_no_finding() -> None:
    """Wives and Daughters, in its shape: five false findings of a sixth held-out round."""
    molly = "# Molly Gibson\n- Aliases: Molly\n- Pronouns: she\n- Hair: black\n- Eyes: grey\n"
    hyacinth = "# Hyacinth Gibson\n- Aliases: Mrs. Gibson\n- Eyes: blue\n"
    cynthia = "# Cynthia Kirkpatrick\n- Aliases: Cynthia\n- Pronouns: she\n- Height: tall\n"
    osborne = "# Osborne Hamley\n- Aliases: Osborne\n- Pronouns: he\n- Height: tall\n"
    # untagged speech after Molly's turn: whoever says it may be the "she" that follows
    speech = (
        "“Why, I quite forgot you!” she said at length.\n\n“But papa!” sobbed out Molly.\n\n"
        "“Well, don't go and make a piece of work about what can't be helped now.”\n\n"
        "During this speech she was shaking her long soft auburn hair over her shoulders.\n"
    )
    assert owners(speech, molly) == []
    # one who "felt herself colour" looks at nobody: her eyes are her own
    felt = (
        "Mrs. Gibson sat by the window.\n\nMolly felt herself colour all over with the "
        "consciousness of his regard. She looked up, and showed him her soft blue eyes.\n"
    )
    assert owners(felt, molly, hyacinth) == ["Molly Gibson:eyes:blue"]
    said = "“But he died when I was quite a little thing,” said Cynthia.\n"
    assert owners(said, cynthia) == []  # a time past
    assert owners("Cynthia was quite a little thing.\n", cynthia) == [
        "Cynthia Kirkpatrick:height:little"
    ]
    gift = "If he did not see Cynthia, he left her some little thing which she would like.\n"
    assert owners(gift, cynthia) == []
    money = "“I'm short enough myself at present,” said Osborne.\n"
    assert owners(money, osborne) == []
    assert owners("“I'm short enough,” said Osborne.\n", osborne) == ["Osborne Hamley:height:short"]
    # where one sits, and how one is cut off, are no heights
    assert owners("Molly was sitting, a little behind Lady Harriet.\n", molly) == []
    cut = "He rose, cutting short Mrs. Gibson's querulous lamentations.\n"
    assert owners(cut, hyacinth) == []
    assert owners("The short Mrs. Gibson came in.\n", hyacinth) == ["Hyacinth Gibson:height:short"]


def test_a_cards_value_may_name_its_source_and_front_matter_may_hold_comments() -> None:
    card = parse_card("Bible/molly.md", "# Molly\n\n## Eyes\n\ngray (ch. 6)\n")
    assert card.attributes == {"eyes": "gray (ch. 6)"}
    yaml = "---\nname: Bitzer\neyes: light  # 'light-eyed' (I.2)\nhair: 'light # kept'\n---\n"
    bitzer = parse_card("notes/people/bitzer.md", yaml)
    assert bitzer.attributes == {"eyes": "light", "hair": "light # kept"}


def test_a_fond_little_is_no_height() -> None:
    """The Portrait of a Lady, as a seventh audit read it."""
    isabel = "# Isabel Archer\n- Aliases: Isabel\n- Pronouns: she\n- Height: tall\n"
    merle = "# Madame Merle\n- Pronouns: she\n- Height: tall\n"
    assert owners("Isabel was a really interesting little figure.\n", isabel) == []
    kiss = "Madame Merle saluted this portion of her charming little person.\n"
    assert owners(kiss, merle) == []
    assert owners("Madame Merle was a little woman, small and quick.\n", merle) == [
        "Madame Merle:height:small"
    ]


def test_what_a_tenth_audit_read_wrongly_is_no_finding(tmp_path: Path) -> None:
    """Nostromo, The Way We Live Now, The Scarlet Pimpernel, Sons and Lovers and The Valley
    of Fear, in their shape: each once gave a description to the wrong person."""
    he = "- **Pronouns:** he\n"
    she = "- **Pronouns:** she\n"
    mitchell = "# Captain Mitchell\n- **Aliases:** Mitchell\n" + he + "- **Hair:** white\n"
    said = (
        "“It is abominable!” Captain Mitchell declared.\n\n"
        "The tall colonel, livid, with his coal-black ringlets, crouched to look at him.\n"
    )
    assert conflicts(said, mitchell) == []  # the colonel's ringlets
    felix = "# Sir Felix Carbury\n- **Aliases:** Sir Felix, Felix\n" + he + "- **Hair:** dark\n"
    said = (
        "Roger Carbury himself was all alone in the world. His nearest relatives were Sir "
        "Felix and Henrietta. He had sisters. He was a stout man. His hair was red.\n"
    )
    roger = "# Roger Carbury\n- **Aliases:** Roger\n" + he
    assert conflicts(said, felix, roger) == []  # Roger's, whose "his" opened the sentence
    sally = "# Sally Jellyband\n- **Aliases:** Sally\n" + she + "- **Eyes:** brown\n"
    said = (
        "“Lud!” exclaimed Sally.\n\n“He looked thirsty,” simpered Martha, one of the "
        "kitchen-maids; and her beady black eyes twinkled.\n"
    )
    assert conflicts(said, sally) == []  # Martha's, who has no card
    chauvelin = "# Chauvelin\n" + he + "- **Height:** small\n"
    said = (
        "Marguerite wondered at what particular spot, on this lonely coast, Percy could be "
        "at this moment. Not very far surely, for he had had less than a quarter of an "
        "hour's start of Chauvelin. She wondered if he knew that in this cool, ocean-scented "
        "bit of France, there lurked many spies, all eager to sight his tall figure, to "
        "track him to where his unsuspecting friends waited for him.\n"
    )
    assert conflicts(said, chauvelin) == []  # Percy's, whom "he" means
    polly = "# Polly\n" + she + "- **Hair:** black\n"
    said = (
        "Polly glanced at him. He had a sketch: Connie sitting on the stool before the "
        "wheel, her flowing mane of red hair on her frock.\n"
    )
    assert conflicts(said, polly) == []
    miriam = "# Miriam Leivers\n- **Aliases:** Miriam\n" + she + "- **Eyes:** dark\n"
    said = (
        "Agatha was dressed first, and ran downstairs. Miriam heard her greet the lad, knew "
        "how brilliant her grey eyes became.\n"
    )
    assert conflicts(said, miriam) == []
    paul = "# Paul Morel\n- **Aliases:** Paul\n" + he + "- **Eyes:** light blue\n"
    for said in (
        "Paul came in. His eyes were dark and shining.\n",
        "Paul came in. His eyes were dark with pain.\n",
        "Paul looked up with his dark, wondering eyes.\n",
    ):
        assert conflicts(said, paul) == [], said  # a look, not a colour
    assert conflicts("Paul looked up with his dark eyes.\n", paul) == ["Paul Morel:eyes:dark"]
    # round 11: a young man brought in unnamed, and a face seen, own what follows
    stevie = "# Stevie\n" + he + "- **Hair:** fair\n"
    said = (
        "Stevie blacked the boots in the scullery. But this vision had a breath of summer "
        "in it, and for a central figure a young man wearing his Sunday best, with a straw "
        "hat on his dark head.\n"
    )
    assert conflicts(said, stevie) == []
    said = "Stevie came in. He was a tall young man, and his hair was dark.\n"
    assert conflicts(said, stevie) == ["Stevie:hair:dark"]
    malone = "# Edward Malone\n- **Aliases:** Malone\n" + he + "- **Eyes:** grey\n"
    said = "Looking up I saw a frightful face with cold light blue eyes looking down.\n"
    assert conflicts(said, malone, narrator="Edward Malone") == []
    said = "Malone had a handsome face with blue eyes.\n"
    assert conflicts(said, malone) == ["Edward Malone:eyes:blue"]
    # round 11b: a phrase the sentence opens on is its doer's, named after it
    wragge = "# Mrs. Wragge\n" + she + "- **Eyes:** faded blue\n"
    said = (
        "Speaking in her softest voice, surveying Mrs. Wragge with a sweet smile on her "
        "lips, and a melting interest in her handsome black eyes, the housekeeper spoke.\n"
    )
    assert conflicts(said, wragge) == []
    said = (
        "Saving for one smile, I felt sure that Mrs. Wragge's face could not smile, nor her "
        "black eyes brighten.\n"
    )
    assert conflicts(said, wragge) == ["Mrs. Wragge:eyes:black"]
    # round 12: a woman who speaks unnamed ("replied the lady") may be the next "she"
    ruth = "# Ruth Hilton\n- **Aliases:** Ruth\n" + she + "- **Eyes:** grey\n"
    said = (
        '"Oh, no!" replied the lady. "A few stitches will do." But now she addressed Ruth.\n\n'
        "She was very pretty, with long dark ringlets and sparkling black eyes.\n"
    )
    assert conflicts(said, ruth) == []
    assert conflicts(said.replace("replied the lady", "she replied"), ruth) == [
        "Ruth Hilton:eyes:black"
    ]
    # a name in a list of others no card has, and a name clipped in speech, are no slips;
    # a slip beside a carded name still is
    from controlroom.tools.builtin.consistency_checker import name_variants

    (tmp_path / "ch.md").write_text(
        "# Chapter 1\n\nWho bought the ironworks of Manson and of Shuman and of Atwood? "
        '"Is that you, Giovann\' Battista?" Then Jnae and Elizabeth came. "I\'ll tell you, '
        'Carrrie: people like Ezry never learn." Carrie nodded; Ezra too.\n'
    )
    known = {"White Mason", "Mason", "Giovanni", "Jane", "Elizabeth", "Carrie", "Ezra"}
    found = name_variants(Workspace(tmp_path), ["ch.md"], known)
    assert [v["found"] for v in found] == ["Jnae"]
    # ... while a letter tripled in narration is a slip ("with Suzannne, and the Vicomte")
    (tmp_path / "ch.md").write_text("# Chapter 1\n\nThe Comtesse came, with Suzannne.\n")
    found = name_variants(Workspace(tmp_path), ["ch.md"], {"Suzanne"})
    assert [v["found"] for v in found] == ["Suzannne"]
    # a pet name's ending clipped in speech is how it is said ("Fance Day, I mean," said
    # Bowman, of Fancy); in narration it is a slip
    said = '# Chapter 1\n\n"Fance Day, I mean," said Bowman.\n\nAnd Fance sat down.\n'
    assert variants_in(tmp_path, said, {"Fancy", "Fancy Day"}) == [("Fance", 5)]


def test_a_paragraph_closing_on_someone_carries_her_and_little_though_grown_is_stature() -> None:
    """Round 10's misses: The Good Soldier's Nancy, The Professor's Caroline."""
    nancy = "# Nancy Rufford\n- **Aliases:** Nancy\n- **Pronouns:** she\n- **Height:** short\n"
    leonora = "# Leonora Ashburnham\n- **Aliases:** Leonora\n- **Pronouns:** she\n"
    said = (
        "They regarded her as Leonora's daughter. And Nancy was a queer girl; it is hard "
        "to describe her.\n\nShe was tall and strikingly thin.\n"
    )
    assert conflicts(said, nancy, leonora) == ["Nancy Rufford:height:tall"]
    # the last sentence naming two, or opening on someone else, carries nobody
    said = said.replace("And Nancy was", "Then Leonora and Nancy were")
    assert conflicts(said, nancy, leonora) == []
    caroline = "# Caroline\n- **Pronouns:** she\n- **Height:** tall\n"
    said = "Caroline was little, though evidently full grown; raven-black hair.\n"
    assert conflicts(said, caroline) == ["Caroline:height:little"]
    assert conflicts("Caroline was little, though very clever.\n", caroline) == []


def test_a_height_in_feet_said_of_ones_height_and_a_little_over() -> None:
    """Round 11's Lost World: "His height was a little over six feet" went unread, and the
    card's own "a little over six feet" read as tall or short ("little")."""
    assert HEIGHT.classes("a little over six feet") == {"tall"}
    assert HEIGHT.classes("a trifle under five feet") == {"short"}
    roxton = (
        "# Lord John Roxton\n- **Aliases:** Lord John\n- **Pronouns:** he\n- **Height:** short\n"
    )
    for said in (
        "Lord John came in. His height was a little over six feet.\n",
        "Lord John's height was six feet.\n",
        "Lord John was a trifle over six feet.\n",
    ):
        assert conflicts(said, roxton) == ["Lord John Roxton:height:six feet"], said
    for said in (
        "Lord John jumped a little over six feet.\n",
        "Lord John measured the wall. Its height was six feet.\n",
    ):
        assert conflicts(said, roxton) == [], said


def test_portrait_lists_crowning_hair_and_a_faces_owner_reach_their_owner() -> None:
    """What a read of The Secret Agent, The Professor and Ivanhoe left "not stated": hair
    that tops someone's face, a portrait's list after a semicolon, a list a possessive
    opens, and "his face was broad, with large blue eyes"."""
    ossipon = "# Alexander Ossipon\n- **Aliases:** Ossipon\n- **Pronouns:** he\n- **Hair:** black\n"
    said = "Ossipon stretched out his legs. A bush of crinkly yellow hair topped his red face.\n"
    assert conflicts(said, ossipon) == ["Alexander Ossipon:hair:yellow"]
    # hair falling about another part than the head, or hair that is someone else's
    for said in (
        "Ossipon stretched out his legs. Yellow hair fell about his knees.\n",
        "Ossipon stood still. Her yellow hair topped his face.\n",
    ):
        assert conflicts(said, ossipon) == [], said
    caroline = "# Caroline\n- **Pronouns:** she\n- **Hair:** fair\n"
    said = "Caroline was little, though grown; raven-black hair, very dark eyes, good teeth.\n"
    assert conflicts(said, caroline) == ["Caroline:hair:raven-black"]
    # no portrait: the clause before the semicolon says what someone did, not was
    said = "Caroline spoke to him; raven-black hair, very dark eyes, good teeth.\n"
    assert conflicts(said, caroline) == []
    hunsden = "# Yorke Hunsden\n- **Aliases:** Hunsden\n- **Pronouns:** he\n- **Hair:** fair\n"
    said = "Hunsden came in; his tall figure, long and dark locks, his voice, impressed me.\n"
    assert conflicts(said, hunsden) == ["Yorke Hunsden:hair:dark"]
    cedric = "# Cedric\n- **Pronouns:** he\n- **Eyes:** grey\n"
    said = "Cedric sat down.\n\nHe was stout; his face was broad, with large blue eyes.\n"
    assert conflicts(said, cedric) == ["Cedric:eyes:blue"]


def test_men_in_general_are_nobody_in_play() -> None:
    """ "there were few men in England capable of such exertions" brings no second man in:
    the paragraph's "his height" is still the one it is about."""
    roxton = (
        "# Lord John Roxton\n- **Aliases:** Lord John\n- **Pronouns:** he\n- **Height:** short\n"
    )
    said = (
        "Lord John sat down.\n\nIn figure he was spare; there were few men in England so "
        "strong. His height was a little over six feet.\n"
    )
    assert conflicts(said, roxton) == ["Lord John Roxton:height:six feet"]
    said = said.replace("few men in England", "the men by the door")
    assert conflicts(said, roxton) == []


def test_what_a_thirteenth_audit_read_wrongly_is_no_finding(tmp_path: Path) -> None:
    """My Antonia, Uncle Tom's Cabin and The Beautiful and Damned, in their shape: each
    once gave a description to the wrong person or took a name's own form for a slip."""
    she, he = "- **Pronouns:** she\n", "- **Pronouns:** he\n"
    antonia = "# Antonia Shimerda\n- **Aliases:** Antonia\n" + she + "- **Eyes:** brown\n"
    said = "Antonia came.\n\nShe clapped her hands and murmured, ‘Blue sky, blue eyes,’ softly.\n"
    assert conflicts(said, antonia) == []  # the eyes she pointed to, not hers
    gloria = "# Gloria Gilbert\n- **Aliases:** Gloria\n" + she + "- **Hair:** auburn\n"
    muriel = "# Muriel Kane\n- **Aliases:** Muriel\n" + she
    said = (
        "Muriel Kane arrived in New York. Like Gloria, she seemed never to change. She knew "
        "the latest slang. Her clothes were extreme; her black hair was bobbed, now, like "
        "Gloria's.\n"
    )
    assert conflicts(said, gloria, muriel) == []  # Muriel's, not the one compared with
    ophelia = "# Miss Ophelia\n- **Aliases:** Ophelia\n" + she + "- **Eyes:** dark\n"
    st_clare = "# Augustine St. Clare\n- **Aliases:** St. Clare\n" + he
    said = (
        "“Why, Augustine!” said Miss Ophelia.\n\n“My mother was divine,” said St. Clare; "
        "and seating himself on an ottoman, he went on:\n\n“My brother and I were twins. "
        "I had blue eyes and fair complexion.”\n"
    )
    assert conflicts(said, ophelia, st_clare) == []  # St. Clare goes on speaking
    shelby = (
        "# George Shelby\n- **Aliases:** Mas’r George, George Shelby\n" + he
        + "- **Height:** tall\n"
    )  # fmt: skip
    said = (
        "Negroes scuttled about for the benefit of Mas’r and his guests.\n\nInto such an "
        "assembly our traveller entered. He was a short, thick-set man.\n"
    )
    assert conflicts(said, shelby) == []  # "Mas’r" is a title, not George
    from controlroom.tools.builtin.consistency_checker import name_variants

    (tmp_path / "ch.md").write_text(
        "# Chapter 1\n\n“Georgey is coming,” said Sam, unwilling to implicate Liza. Then "
        "Jhon came.\n"
    )
    known = {"George", "George Shelby", "Eliza", "Lizy", "John"}
    found = name_variants(Workspace(tmp_path), ["ch.md"], known)
    assert [v["found"] for v in found] == ["Jhon"]
    # where a card spells a pet form itself, another spelling of it is a slip
    found = name_variants(Workspace(tmp_path), ["ch.md"], {"George", "Georgie", "Eliza"})
    assert [v["found"] for v in found] == ["Georgey"]


def test_what_a_thirteenth_audit_a_took_for_slips_is_no_finding(tmp_path: Path) -> None:
    """The Woodlanders and The Master of Ballantrae: a father's "Gracie", a Scots speaker's
    "Ball’ntrae" and a broad accent's "Hairry" are the names as said, not slips."""
    from controlroom.tools.builtin.consistency_checker import name_variants

    (tmp_path / "ch.md").write_text(
        "# Chapter 1\n\n“Morning t’ye, Gracie.” “It was a grand thing for the Master o’ "
        "Ball’ntrae!” “Come, come, Hairry lad,” says he. Then Hairry came in, and sang to Grase.\n"
    )
    known = {"Grace", "Ballantrae", "Harry"}
    found = name_variants(Workspace(tmp_path), ["ch.md"], known)
    # in narration the drawl is a slip; a consonant for a consonant is a slip anywhere
    assert [v["found"] for v in found] == ["Grase", "Hairry"]


def test_a_quoted_card_value_keeps_its_escaped_quotes() -> None:
    """YAML's escapes in a quoted front-matter value: the value is read whole."""
    card = parse_card(
        "Cast/tom.md",
        '---\nname: Tom\neyes: "blue (\\"Tom had blue eyes\\")"\n'
        "height: 'tall (it''s said)'\n---\n",
    )
    values = {f.attribute: f.value for f in facts_of([card])}
    assert values["eyes"] == 'blue ("Tom had blue eyes")'
    assert values["height"] == "tall (it's said)"


def test_joined_adjectives_before_a_person_noun_and_a_bare_value_with_a_likeness() -> None:
    """The Invisible Man's "a tall and slender young man, with flaxen hair" and The
    Woodlanders' "his eyes blue as corn-flowers" went unread."""
    kemp = "# Dr. Kemp\n- **Aliases:** Kemp\n- **Pronouns:** he\n- **Hair:** black\n"
    said = "Dr. Kemp was a tall and slender young man, with flaxen hair.\n"
    assert conflicts(said, kemp) == ["Dr. Kemp:hair:flaxen"]
    # not the man he meets
    assert conflicts("Kemp met a tall and slender young man, with flaxen hair.\n", kemp) == []
    giles = "# Giles\n- **Pronouns:** he\n- **Eyes:** grey\n"
    said = "Giles walked on, his face sunburnt, his eyes blue as corn-flowers, his hands dyed.\n"
    assert conflicts(said, giles) == ["Giles:eyes:blue"]
    # a colour that is a noun's after the feature is no value of it
    assert conflicts("Giles walked on, his eyes brown hair.\n", giles) == []


def test_a_person_set_out_after_a_colon_is_the_one_the_clause_names() -> None:
    """The Master of Ballantrae: "Mr. Henry came himself to the door to welcome me: a tall
    dark young gentleman" went unread."""
    henry = "# Henry Durie\n- **Aliases:** Mr. Henry\n- **Pronouns:** he\n- **Height:** short\n"
    said = "Mr. Henry came himself to the door to welcome me: a tall dark young gentleman.\n"
    assert conflicts(said, henry) == ["Henry Durie:height:tall"]
    for said in (
        "Mr. Henry spoke to his father: a tall old gentleman.\n",  # the father
        "Mr. Henry came to the door: a tall cabinet stood there.\n",  # no person
    ):
        assert conflicts(said, henry) == [], said


def test_a_giantess_on_a_card_is_tall() -> None:
    """My Ántonia's card "almost a giantess in height" was not checkable."""
    assert HEIGHT.classes("almost a giantess in height") == {"tall"}
    assert HEIGHT.classes("stubby") == {"short"}  # The Virginian's card (round 14)


def test_what_a_thirteenth_audit_c_took_for_slips_is_no_finding(tmp_path: Path) -> None:
    """The Way of All Flesh: "Christiana", listed among The Pilgrim's Progress's people and
    then opening a sentence, is someone else; "a God-fearing earnest Christian" is a word."""
    from controlroom.tools.builtin.consistency_checker import name_variants

    (tmp_path / "ch.md").write_text(
        "# Chapter 1\n\nHe dramatised it, with Mr Greatheart, Apollyon, Christiana, Mercy, and "
        "Hopeful as the principal characters. Christiana did not wear much. He was a "
        "God-fearing earnest Christian. Then Christnia came.\n"
    )
    found = name_variants(Workspace(tmp_path), ["ch.md"], {"Christina"})
    assert [v["found"] for v in found] == ["Christnia"]


def test_cards_a_long_described_value_and_a_name_column() -> None:
    """A "## Hair" section of a hundred characters was dropped without a word; a table's
    "Name" column made a fact "name" that could not be checked."""
    card = parse_card(
        "Dramatis Personae/skinner.md",
        "# Dr Skinner\n\n## Hair\n\nred when he was a young man; after a brain fever he wore "
        "a wig, which was brown by the time he was forty\n",
    )
    assert card.attributes["hair"].startswith("red when he was a young man")
    card = parse_card(
        "People/clara.md",
        "# Clara\n\n| Name | Pronouns | Eyes |\n|---|---|---|\n| Clara | she | brown |\n",
    )
    assert [(f.attribute, f.value) for f in facts_of([card])] == [
        ("pronouns", "she"),
        ("eyes", "brown"),
    ]


def test_what_a_fourteenth_audit_read_wrongly_is_no_finding(tmp_path: Path) -> None:
    """Romola: Tessa "looking up at Tito with wide blue eyes" gave Tito her eyes; "Lollo",
    three times in a paragraph, and the Italian plurals "Frati", "Messeri", "Neri" were
    taken for slips of "Lillo", "the Frate", "Messer" and "del Nero"."""
    tito = "# Tito Melema\n- **Aliases:** Tito\n- **Pronouns:** he\n- **Eyes:** dark\n"
    said = "Tito came.\n\n“I’ll go home,” she said, looking up at Tito with wide blue eyes.\n"
    assert conflicts(said, tito) == []
    from controlroom.tools.builtin.consistency_checker import name_variants

    (tmp_path / "ch.md").write_text(
        "# Chapter 1\n\nIt was an act of the conjuror's lad Lollo. Lollo had no compassion. "
        "Lollo felt that his moment was come. The Frati sang, and the Messeri and the Neri "
        "came. Then Bernado ran.\n"
    )
    known = {"Lillo", "the Frate", "Messer", "Bernardo del Nero", "Nero", "Bernardo"}
    found = name_variants(Workspace(tmp_path), ["ch.md"], known)
    assert [v["found"] for v in found] == ["Bernado"]


def test_a_plain_card_value_keeps_its_quotes_and_near_six_feet_is_tall() -> None:
    """Erewhon's `role: the elder daughter, "very handsome"` lost its closing quote; Tom
    Brown's "near six feet high" and Romola's "of great stature" were not checkable."""
    card = parse_card(
        "Dramatis/zulora.md",
        '---\nname: Zulora\nrole: the elder daughter, "very handsome"\n---\n',
    )
    assert card.attributes["role"] == 'the elder daughter, "very handsome"'
    assert HEIGHT.classes("near six feet high (at nineteen)") == {"tall"}
    assert HEIGHT.classes("of great stature") == {"tall"}


HARLOW = "# John Harlow\n- **Aliases:** Harlow\n- **Pronouns:** he\n- **Height:** short\n"
MARY = "# Mary Dunstan\n- **Aliases:** Mary\n- **Pronouns:** she\n- **Hair:** fair\n"


def test_a_name_set_beside_a_strangers_description_is_theirs() -> None:
    """A description given before the name, in the same sentence: an apposition, "named",
    ", whose name was", or "The … man at the desk was …"."""
    assert conflicts("A dark-haired girl, Mary Dunstan, answered the bell.\n", MARY) == [
        "Mary Dunstan:hair:dark-haired"
    ]
    for text in (
        "A tall young man named John Harlow stood at the gate.\n",
        "The tall man—John Harlow—bustled about the kitchen.\n",
        "The tall stranger, whose name was Harlow, bowed.\n",
        "The tall man at the desk was John Harlow.\n",
    ):
        assert conflicts(text, HARLOW) == ["John Harlow:height:tall"], text
    # a vocative in speech, a name opening a clause of its own, a man who calls another
    for text in (
        "“A tall man, Harlow, came asking for you.”\n",
        "It was a tall man, Harlow thought, who stood there.\n",
        "The tall man called Harlow over to the window.\n",
        "The tall man at the desk was Harlow's brother.\n",
    ):
        assert conflicts(text, HARLOW) == [], text


def test_a_phrase_set_after_its_clause_describes_the_subject() -> None:
    """ "He swung down, a tall figure against the grey wall": the sentence's subject, when
    no one else is named, told or called by a noun before it, and no noun phrase ends the
    clause (it might be the one described)."""
    text = "Harlow rode into the yard.\nHe swung down, a tall figure against the wall.\n"
    assert conflicts(text, HARLOW) == ["John Harlow:height:tall"]
    dashed = "Harlow rode into the yard. He swung down—a tall figure against the wall.\n"
    assert conflicts(dashed, HARLOW) == ["John Harlow:height:tall"]
    for other in (
        "Harlow rode in.\nHe sent for the carpenter, a tall man with a limp.\n",
        "Harlow rode in.\nHe sent for the carpenter—a tall man with a limp.\n",
        "Harlow rode in.\nHe looked at Mary, a tall girl in white.\n",
        "Harlow rode in.\nHe rose as they came in, a tall man among them.\n",
    ):
        assert conflicts(other, HARLOW, MARY) == [], other


def test_a_saints_title_or_a_title_alone_is_nobody_else_in_view() -> None:
    """Barchester Towers: "the living of St. Ewold" was a stranger in view, and the "Mr" of
    "Mr. Slope" a given name, so "He was above the middle height" and the paragraph's
    "his … pale-brown eyes" eight sentences on were read as nobody's."""
    arabin = "# Francis Arabin\n- **Aliases:** Mr. Arabin\n- **Height:** short\n"
    text = "Mr. Arabin accepted the living of St. Ewold. He was above the middle height.\n"
    assert conflicts(text, arabin) == ["Francis Arabin:height:above the middle height"]
    slope = "# Obadiah Slope\n- Aliases: Mr. Slope, Slope\n- Eyes: blue\n"
    portrait = (
        "Mr. Slope is tall, and not ill-made. His feet and hands are large, as has ever "
        "been the case with all his family. His countenance, however, is not specially "
        "prepossessing. His hair is lank. It is always formed into three masses; two of "
        "them adhere closely to the sides of his face. He wears no whiskers. His face is "
        "red. His forehead is high. His mouth is large, and his big, prominent, pale-brown "
        "eyes inspire anything but confidence.\n"
    )
    assert conflicts(portrait, slope) == ["Obadiah Slope:eyes:pale-brown"]


def test_a_hand_used_for_everything_or_as_left_handed_men_do_is_the_hand() -> None:
    """Three ways of saying which hand someone uses that were passed over: "for
    everything", "as left-handed men do" (the doer is granted to be one), "a southpaw"."""
    mary = "# Mary Dunstan\n- **Aliases:** Mary\n- **Pronouns:** she\n- **Handedness:** right\n"
    john = (
        "# John Harlow\n- **Aliases:** John, Harlow\n- **Pronouns:** he\n- **Handedness:** right\n"
    )
    assert conflicts("Mary used her left hand for everything.\n", mary) == [
        "Mary Dunstan:handedness:left hand, by habit"
    ]
    assert conflicts("John ate with his left hand, as left-handed men do.\n", john) == [
        "John Harlow:handedness:left-handed"
    ]
    assert conflicts("Harlow was a southpaw.\n", john) == ["John Harlow:handedness:southpaw"]
    # one use is not a habit, and a comparison with others is not a concession
    assert conflicts("Mary signed the letter with her left hand.\n", mary) == []
    assert conflicts("John was not, as left-handed men are said to be, clumsy.\n", john) == []


def test_he_or_she_in_speech_is_the_one_the_speech_names() -> None:
    """In speech, "he", "she" and "her" mean the one person of that sex the speech has
    named: in an earlier sentence of it, or before the tag that breaks it."""
    assert conflicts("“I saw Mary today. Her hair is black.”\n", MARY) == [
        "Mary Dunstan:hair:black"
    ]
    assert conflicts("“I know John Harlow well; he is a tall man,” said Mary.\n", HARLOW) == [
        "John Harlow:height:tall"
    ]
    harlow_hair = HARLOW + "- **Hair:** red\n"
    said = "“That Harlow,” said Tom, “with his black hair and his airs!”\n"
    assert conflicts(said, harlow_hair) == ["John Harlow:hair:black"]
    # the one spoken to in an earlier sentence is not the one meant; two named, nobody
    mary_called = "“You should know, Mary. Anne, poor creature, with her black hair, was right.”\n"
    assert conflicts(mary_called, MARY) == []
    two = "“I saw Mary and Anne Lee today. Her hair is black.”\n"
    anne = "# Anne Lee\n- **Aliases:** Anne\n- **Pronouns:** she\n"
    assert conflicts(two, MARY, anne) == []


def test_a_name_two_people_go_by_is_read_as_neither(tmp_path: Path) -> None:
    """The Rainbow: father and son are both "Tom Brangwen" (the son's card "Tom Brangwen
    the younger"); "Tom, the elder brother, … his hazel eyes" was a finding on the father.
    A name a second card begins, set apart only by a qualifier, names neither; a plain
    first name another card shares ("John" beside "John Fry") is still the card's own."""
    father = "# Tom Brangwen\n- **Aliases:** Tom\n- **Pronouns:** he\n- **Eyes:** blue\n"
    son = "# Tom Brangwen the younger\n- **Aliases:** young Tom\n- **Pronouns:** he\n"
    text = "“What were you laughing for?” asked Tom, the elder brother, his hazel eyes bright.\n"
    assert conflicts(text, father, son) == []
    cast = build_cast([parse_card("People/f.md", father), parse_card("People/s.md", son)])
    assert cast.shared == {
        "Tom Brangwen": "Tom Brangwen the younger",
        "Tom": "Tom Brangwen the younger",
    }
    # someone is in view all the same: "his" is not pinned on the one named before
    will = "# Will Brangwen\n- **Aliases:** Will\n- **Pronouns:** he\n- **Eyes:** brown\n"
    gloomy = "Will went to see Anna. Tom Brangwen was gloomy, his blue eyes sombre.\n"
    assert conflicts(gloomy, father, son, will) == []
    ridd = "# John Ridd\n- **Aliases:** John\n- **Pronouns:** he\n- **Height:** tall\n"
    fry = "# John Fry\n- **Pronouns:** he\n"
    assert build_cast([parse_card("a.md", ridd), parse_card("b.md", fry)]).shared == {}
    assert conflicts("John was a short man.\n", ridd, fry) == ["John Ridd:height:short"]
    # the check says which names it read as neither, and the summary agents read says so
    (tmp_path / "People").mkdir()
    (tmp_path / "People/f.md").write_text(father)
    (tmp_path / "People/s.md").write_text(son)
    (tmp_path / "ch.md").write_text("Tom, the elder brother, had hazel eyes.\n")
    result = TOOLS.execute(
        "consistency_checker",
        {"scene_paths": ["ch.md"], "canon_paths": ["People/f.md", "People/s.md"]},
        Workspace(tmp_path),
    )
    assert result.output["findings"] == []
    assert result.output["names_read_as_neither"] == [
        {"name": "Tom", "also_begins": "Tom Brangwen the younger"},
        {"name": "Tom Brangwen", "also_begins": "Tom Brangwen the younger"},
    ]
    assert "~ Tom Brangwen (also Tom Brangwen the younger)" in result.summary


def test_a_name_a_fronted_phrase_gives_is_not_the_subject_after_it() -> None:
    """The Rainbow: "To Ursula she had always given pleasure" (she is Miss Inger) made
    Ursula the "she" of the paragraph, and the next paragraph's "Her eyes were blue" hers.
    And "he was not a little, fussy man" (petty) said nothing of a height."""
    ursula = "# Ursula Brangwen\n- **Aliases:** Ursula\n- **Pronouns:** she\n- **Eyes:** brown\n"
    text = (
        "To Ursula she had always given pleasure, because of her clear appearance.\n\n"
        "Her voice was just as ringing and clear. Her eyes were blue, clear, proud.\n"
    )
    assert conflicts(text, ursula) == []
    harby = "# Mr. Harby\n- **Aliases:** Harby\n- **Pronouns:** he\n- **Height:** short\n"
    assert conflicts("Harby came in. Yet he was not a little, fussy man.\n", harby) == []


def test_card_words_a_book_uses_for_colours_and_sizes_are_read() -> None:
    """Round 15: "greyish" eyes, "smallish", "a pursy dwarf", "a huge, strong fellow of six
    feet high", and "grey-headed" hair were outside the vocabulary; a card giving two
    heights over the story's time agreed with every height, unsaid."""
    from controlroom.tools.vocabulary import EYES, HAIR, checkability

    assert EYES.card_classes("greyish, very clear") == {"grey"}
    assert HAIR.card_classes("reddish") == {"red"}
    assert HAIR.card_classes("reddish blonde") == {"blond"}  # a shade of blonde
    assert HEIGHT.card_classes("smallish") == {"short"}
    # in the text an "-ish" colour only leans: "his greenish eyes" against "light-gray"
    assert EYES.classes("greenish") == frozenset()
    assert HEIGHT.classes("a pursy dwarf") == {"short"}
    assert HEIGHT.classes("a huge, strong fellow of six feet high") == {"tall"}
    assert HAIR.classes("grey-headed") == {"grey"}
    assert EYES.classes("grey-headed") == frozenset()  # the head's, not the eyes'
    kind, why = checkability("height", "small for her age at ten; tall at seventeen")
    assert kind is None and "two heights" in why


def test_a_name_said_wrong_and_said_right_in_the_reply_is_no_slip(tmp_path: Path) -> None:
    """The Rainbow: "'… a pinny for Miss Brangwin,' muttered the boy" is corrected in the
    reply ("'Miss Brangwen!' laughed Miss Harby"); in narration it is a slip still."""
    from controlroom.tools.builtin.consistency_checker import name_variants

    (tmp_path / "ch.md").write_text(
        '# Chapter 1\n\n"Please, Mrs. Harby, Miss Harby wants a pinny for Miss Brangwin," '
        'muttered the boy.\n\n"Miss Brangwen!" laughed Miss Harby.\n\nThen Brangwin came in.\n'
    )
    found = name_variants(Workspace(tmp_path), ["ch.md"], {"Brangwen", "Harby"})
    assert [(v["found"], v["line"]) for v in found] == [("Brangwin", 7)]


def test_someone_unnamed_closing_a_paragraph_is_in_play_in_the_next() -> None:
    """The Rainbow: "Skrebensky lingered by her. The man glanced up.¶ “Good evening,” he
    called … He had blue eyes": the man on the barge, not Skrebensky."""
    anton = "# Anton Skrebensky\n- **Aliases:** Skrebensky\n- **Pronouns:** he\n- **Eyes:** grey\n"
    text = (
        "Ursula lingered to look. Skrebensky lingered by her. The man glanced up.\n\n"
        "“Good evening,” he called, half impudent. He had blue eyes which glanced "
        "impudently from his grimy face.\n"
    )
    assert conflicts(text, anton) == []
    named = "Ursula lingered to look. Skrebensky lingered by her.\n\nHe had blue eyes.\n"
    assert conflicts(named, anton) == ["Anton Skrebensky:eyes:blue"]


def test_a_name_said_in_full_for_a_cards_elided_one_is_no_slip(tmp_path: Path) -> None:
    """Uncle Tom's Cabin: "Masir" in dialect speech for a card's "Mas’r"."""
    from controlroom.tools.builtin.consistency_checker import name_variants

    (tmp_path / "ch.md").write_text(
        "# Chapter 1\n\n“Dat ar Tom’s gwine to make trouble, Masir,” said Sambo.\n\n"
        "Masir came in.\n"
    )
    found = name_variants(Workspace(tmp_path), ["ch.md"], {"Mas’r", "Tom"})
    assert [(v["found"], v["line"]) for v in found] == [("Masir", 5)]


def test_what_a_sixteenth_audit_read_wrongly_is_no_finding() -> None:
    """Round 16: a claim the narrator corrects ("Phineas had declared … that Lady Laura was
    six feet high"), a short speech ("made his speech,--and though he was short"), a want
    ("never quite tall enough", "half an inch too short") and a childhood ("I was little for
    fourteen years") said nothing of a height."""
    laura = (
        "# Lady Laura Standish\n- **Aliases:** Lady Laura\n- **Pronouns:** she\n"
        "- **Height:** middle\n"
    )
    phineas = (
        "# Phineas Finn\n- **Aliases:** Phineas, Mr. Finn\n- **Pronouns:** he\n- **Height:** tall\n"
    )
    monk = "# Mr. Monk\n- **Pronouns:** he\n- **Height:** tall\n"
    anne = "# Anne Shirley\n- **Aliases:** Anne\n- **Pronouns:** she\n- **Height:** tall\n"
    claim = "Phineas had declared at Killaloe that Lady Laura was six feet high.\n"
    assert conflicts(claim, laura, phineas) == []
    speech = "Mr. Monk made his speech,--and though he was short, he was very fiery.\n"
    assert conflicts(speech, monk) == []
    want = "“Mr. Finn was never quite tall enough. Mr. Finn was just half an inch too short.”\n"
    assert conflicts(want, phineas) == []
    past = "“You see, I was little for fourteen years,” said Anne gaily.\n"
    assert conflicts(past, anne) == []
    # a stature told plainly still is, and "tall for her years" is one
    assert conflicts("Mr. Monk was short and stout.\n", monk) == ["Mr. Monk:height:short"]
    assert conflicts("Anne was short for her years.\n", anne) == ["Anne Shirley:height:short"]


def test_a_section_cards_value_with_a_colon_and_scotts_words_are_read() -> None:
    """Dombey and Son: `## Eyes` over `dark: "her … deep dark eyes" (ch. 1)` made an
    attribute "dark"; Kenilworth's "sable" hair and "low of stature" were not read."""
    card = parse_card(
        "Dramatis Personae/florence.md",
        '# Florence Dombey\n\n## Eyes\n\ndark: "her deep dark eyes" (ch. 1)\n\n'
        "## Notes\n\nRole: daughter\n",
    )
    assert card.attributes == {"eyes": 'dark: "her deep dark eyes" (ch. 1)', "role": "daughter"}
    from controlroom.tools.vocabulary import HAIR

    assert HAIR.classes("sable") == {"black"}
    assert HEIGHT.classes("low of stature") == {"short"}


def test_a_he_who_acted_on_the_one_named_goes_on_being_he() -> None:
    """The Ambassadors: "he had … taught Strether that … . He had done … in his thick black
    hair": Chad's hair, not Strether's; but "I was sure he must be Long John. … He was very
    tall" names who he is."""
    strether = "# Lambert Strether\n- **Aliases:** Strether\n- **Pronouns:** he\n- **Hair:** grey\n"
    text = (
        "Here already were results; he had on the spot taught Strether that there were "
        "different ways. He had done still more; the change in him was a matter of the "
        "streaks of grey, extraordinary at his age, in his thick black hair.\n"
    )
    assert conflicts(text, strether) == []
    silver = (
        "# Long John Silver\n- **Aliases:** Long John\n- **Pronouns:** he\n- **Height:** short\n"
    )
    seen = "At a glance I was sure he must be Long John. He was very tall and strong.\n"
    assert conflicts(seen, silver) == ["Long John Silver:height:tall"]


def test_the_other_who_speaks_unnamed_is_in_play_in_the_next_paragraph() -> None:
    """Dombey and Son: "‘If what you ask,’ said Harriet, gently …¶ ‘But it’s not!’ returned
    the other …¶ Still upon her knees, … her wild black hair": Alice's hair, not Harriet's."""
    harriet = "# Harriet Carker\n- **Aliases:** Harriet\n- **Pronouns:** she\n- **Hair:** brown\n"
    text = (
        "‘If what you ask,’ said Harriet, gently, ‘is forgiveness--’\n\n"
        "‘But it’s not!’ returned the other, with a proud, fierce look.\n\n"
        "Still upon her knees, and with the fire shining on her wild black hair, she went on.\n"
    )
    assert conflicts(text, harriet) == []


def test_a_name_in_a_latin_phrase_is_no_slip(tmp_path: Path) -> None:
    """Dombey and Son's "anno Dombei": the name put into Latin after a Latin word is the
    name as the book means it; the same spelling in plain English is still a slip."""
    from controlroom.tools.builtin.consistency_checker import name_variants

    (tmp_path / "ch.md").write_text(
        "# Chapter 1\n\nCommon abbreviations took new meanings in his eyes: A.D. had no "
        "concern with anno Domini, but stood for anno Dombei—and Son.\n"
    )
    known = {"Dombey"}
    assert name_variants(Workspace(tmp_path), ["ch.md"], known) == []
    (tmp_path / "ch.md").write_text("# Chapter 1\n\nThen Dombei came in and sat down.\n")
    found = name_variants(Workspace(tmp_path), ["ch.md"], known)
    assert [v["found"] for v in found] == ["Dombei"]


MARTIN = "# Martin Eden\n- **Aliases:** Martin\n- **Pronouns:** he\n- **Eyes:** grey\n"
RANSOM = "# Basil Ransom\n- **Aliases:** Ransom, the Mississippian\n- **Pronouns:** he\n"
VERENA = "# Verena Tarrant\n- **Aliases:** Verena\n- **Pronouns:** she\n"


def test_black_eyes_told_beside_other_hurts_are_no_ones_colour() -> None:
    """Martin Eden: "black eyes and bloody noses became quite the order of the day" are
    blacked in fights; the same words as a colour still count."""
    fights = (
        "The Silva tribe stanchly defended him, fighting more than one pitched battle for his "
        "honor, and black eyes and bloody noses became quite the order of the day.\n\n"
        "Martin came home with bruises and two black eyes.\n"
    )
    assert eyes_read(fights, MARTIN) == []
    assert eyes_read("Martin looked up. His black eyes were steady.\n", MARTIN) == [
        ("Martin Eden", "black")
    ]


def test_his_after_a_sentence_about_an_unnamed_man_near_a_named_one_is_nobodys() -> None:
    """The Bostonians: the sentence before is the unnamed young man's, the one named only
    where he was ("in the presence of the Mississippian"): "His handsome blue eyes" may be
    either's. A sentence that names its own subject still gives "his" to him."""
    text = (
        "The young man, who supported her on his arm, instantly lost himself in the spectacle "
        "of Verena, and in the unexpected presence of the Mississippian. His handsome blue "
        "eyes turned from one to the other.\n"
    )
    assert eyes_read(text, RANSOM, VERENA) == []
    # as the book has it: the young man opens a clause after a semicolon
    clause = (
        "The mother's face expressed surprise; the young man, who supported her on his arm, "
        "lost himself in the spectacle of Verena, and in the presence of the Mississippian. "
        "His handsome blue eyes turned from one to the other.\n"
    )
    assert eyes_read(clause, RANSOM, VERENA) == []
    named = "The oldest son, Ransom, came out and stood beside Verena. His blue eyes were sly.\n"
    assert eyes_read(named, RANSOM, VERENA) == [("Basil Ransom", "blue")]


KREIS = "# Kreis\n- **Aliases:** Kreis\n- **Pronouns:** he\n"


def test_a_surname_without_a_card_before_participle_phrases_owns_their_his() -> None:
    """Martin Eden: "Norton, smarting under …, clutching his chair …, his gray eyes
    snapping": Norton has no card, and the eyes are his, not those of Kreis, named in the
    sentence before. A carded name there keeps its own."""
    text = (
        "Norton was sensitive, while Kreis and Hamilton were like a pair of cold-blooded "
        "savages. As the evening grew late, Norton, smarting under the repeated charges of "
        "being a metaphysician, clutching his chair to keep from jumping to his feet, his "
        "gray eyes snapping, made a grand attack upon their position.\n"
    )
    assert eyes_read(text, KREIS, MARTIN) == []
    carded = text.replace("late, Norton,", "late, Kreis,")
    assert eyes_read(carded, KREIS, MARTIN) == [("Kreis", "gray")]


def test_a_superlative_ranking_two_or_those_named_says_nothing_of_a_height() -> None:
    """The Small House at Allington: "two pretty, fair-haired girls, of whom Bell was the
    tallest", both "something below the usual height": the tallest of two is only the
    taller. The tallest of three is still read as tall."""
    bell = "# Bell Dale\n- **Aliases:** Bell\n- **Pronouns:** she\n- **Height:** short\n"
    lily = "# Lily Dale\n- **Aliases:** Lily\n- **Pronouns:** she\n"
    text = (
        "They were two pretty, fair-haired girls, of whom Bell was the tallest and the "
        "prettiest, whereas Lily was almost as pretty as her sister.\n\n"
        "Of the two, Bell was the tallest.\n"
    )
    assert conflicts(text, bell, lily) == []
    assert conflicts("Bell was the tallest of the three.\n", bell, lily) == [
        "Bell Dale:height:tallest"
    ]


def test_her_darling_is_someone_else_whose_hair_the_next_her_may_be() -> None:
    """A Tale of Two Cities: "Miss Pross …, taking off her darling's bonnet …, and smoothing
    her rich hair": Lucie's hair, not Miss Pross's. A darling in speech is no one new."""
    pross = "# Miss Pross\n- **Pronouns:** she\n- **Hair:** red\n"
    lucie = "# Lucie Manette\n- **Aliases:** Lucie\n- **Pronouns:** she\n- **Hair:** golden\n"
    said = (
        "Miss Pross was a pleasant sight, albeit wild, and red, and grim, taking off her "
        "darling's bonnet when she came up-stairs, and smoothing her rich brown hair.\n"
    )
    assert hair_read(said, pross, lucie) == []
    said = 'Miss Pross said "my darling" twice, smoothing her rich brown hair.\n'
    assert hair_read(said, pross, lucie) == [("Miss Pross", "brown")]


def test_a_hand_used_for_everything_said_in_more_ways() -> None:
    """The blind plants' handedness misses (Fitzgerald, Dickens, Wells): a deed done
    left-handed "since boyhood", a "long left hand, the hand he did everything with", a
    hand "which was the hand he did everything with" holding a wounded toe. A hand used
    once, or while the hand itself is hurt, is still no habit."""
    he = "# Tom Robarts\n- **Aliases:** Robarts\n- **Pronouns:** he\n- **Handedness:** right\n"

    def hand(said: str) -> list[tuple[str, str]]:
        return feature_read("handedness", said + "\n", he)

    assert hand("Robarts had written left-handed since boyhood.") == [
        ("Tom Robarts", "left-handed")
    ]
    assert hand(
        "Robarts came in, pointing with his long left hand, the hand he did everything with."
    ) == [("Tom Robarts", "left hand, by habit")]
    assert hand(
        "Robarts held the wounded toe in his left hand, which was the hand he did everything with."
    ) == [("Tom Robarts", "left hand, by habit")]
    assert hand("Robarts came in, pointing with his long left hand to the room.") == []
    assert (
        hand(
            "Robarts held the cup in his left hand, his wounded right in a sling, as he always did."
        )
        == []
    )


def test_a_short_thick_body_is_a_stature() -> None:
    """The blind plants' "his short, thick body" (My Ántonia); a little body is fondness or
    a corpse, not a stature."""
    he = "# Tom Robarts\n- **Aliases:** Robarts\n- **Pronouns:** he\n- **Height:** average\n"

    def height(said: str) -> list[tuple[str, str]]:
        return feature_read("height", said + "\n", he)

    assert height("Robarts bent, driving his short, thick body at the soil.") == [
        ("Tom Robarts", "short")
    ]
    assert height("Robarts thought his little body would soon fall into the background.") == []
    assert height("Robarts's body was small and cold.") == []


def test_a_rank_after_the_names_a_thing_not_someone_in_play() -> None:
    """The Enchanted April: "the familiar words of the General Thanksgiving came into her
    mind" named no General Thanksgiving who might be the next paragraph's "she"; "General
    Grant" without "the" is someone still."""
    lotty = "# Lotty Wilkins\n- **Aliases:** Mrs. Wilkins\n- **Pronouns:** she\n"
    said = (
        '"Well," thought Mrs. Wilkins. The familiar words of the General Thanksgiving came '
        "into her mind.\n\nShe moved about with quick steps, her short plump body held up.\n"
    )
    assert feature_read("height", said, lotty) == [("Lotty Wilkins", "short")]
    said = said.replace("the General Thanksgiving", "Mrs. Fisher")
    assert feature_read("height", said, lotty) == []
    from controlroom.tools.newcomers import _people_in

    assert [n for n, _, _ in _people_in("the General Thanksgiving; General Grant")] == ["Grant"]


def test_eyes_of_hers_mine_or_yours_are_theirs() -> None:
    """The blind plants' "those great grey eyes of hers" (Howards End) and "these grey eyes
    of mine" (Phineas Finn): the possessive after the feature says whose it is."""
    he = "# Tom Robarts\n- **Aliases:** Robarts, Dick\n- **Pronouns:** he\n- **Eyes:** green\n"
    she = "# Ann Lee\n- **Aliases:** Ann\n- **Pronouns:** she\n- **Eyes:** green\n"
    said = "Ann is clever. With those great grey eyes of hers looking innocent, she will talk.\n"
    assert eyes_read(said, he, she) == [("Ann Lee", "grey")]
    said = 'Robarts came in. "Never did I set these grey eyes of mine on him," said Robarts.\n'
    assert eyes_read(said, he, she) == [("Tom Robarts", "grey")]
    said = '"Dick, those blue eyes of yours are fine," said Ann.\n'
    assert eyes_read(said, he, she) == [("Tom Robarts", "blue")]
    assert eyes_read("Ann saw the blue eyes of his father.\n", he, she) == []


def test_what_round_18_read_wrongly_is_no_finding() -> None:
    """Round 18's false findings (Trilby, The Song of the Lark): a foot on a stool is no
    height; "a little thing" from a time past is an age; one of several girls owns the
    next "her"; "reddish-brown" hair is red and brown, as "sandy" may be."""
    trilby = "# Trilby\n- **Pronouns:** she\n- **Height:** tall\n"
    said = "Trilby stood with her hands behind her, one foot (the left one) on a little stool.\n"
    assert conflicts(said, trilby) == []
    assert conflicts("Trilby stood four feet ten in her stockings.\n", trilby) == [
        "Trilby:height:four feet ten"
    ]
    thea = "# Thea\n- **Pronouns:** she\n- **Height:** tall\n- **Hair:** yellow\n"
    for said in (
        "But Thea, from the time she was a little thing, had her own routine.\n",
        '"They have known me since I was little," said Thea.\n',
    ):
        assert conflicts(said, thea) == [], said
    assert conflicts("Thea was a little thing, and thin.\n", thea) == ["Thea:height:little"]
    said = (
        "Thea watched the dancers. There were three little girls under twelve; one of them "
        "had an orange marigold in her black hair.\n"
    )
    assert conflicts(said, thea) == []
    assert conflicts(said.replace("one of them", "she"), thea) == ["Thea:hair:black"]
    archie = "# Archie\n- **Pronouns:** he\n- **Hair:** reddish-brown\n"
    assert conflicts("Archie came in. His sandy hair was thin.\n", archie) == []
    assert conflicts("Archie came in. His black hair was thin.\n", archie) == ["Archie:hair:black"]


def test_an_aside_like_her_hair_and_a_figure_of_a_girl() -> None:
    """Round 18's Silas Lapham, facts its text states that were "not stated": "Her large
    eyes, like her hair, were brown"; "She was a very pretty figure of a girl … She had red
    hair" (the girl is what she is, not someone else in view)."""
    pen = "# Penelope Lapham\n- **Aliases:** Penelope\n- **Pronouns:** she\n- **Eyes:** grey\n"
    said = "Penelope was the girl. Her large eyes, like her hair, were brown.\n"
    assert eyes_read(said, pen) == [("Penelope Lapham", "brown")]
    irene = "# Irene Lapham\n- **Aliases:** Irene\n- **Pronouns:** she\n- **Hair:** black\n"
    said = "Irene rose.\n\nShe was a very pretty figure of a girl, and her face was regular. "
    assert hair_read(said + "She had red hair.\n", irene) == [("Irene Lapham", "red")]
    said = "Irene rose.\n\nA very pretty figure of a girl came in. She had red hair.\n"
    assert hair_read(said, irene) == []


def test_a_fronted_list_and_a_name_being_short() -> None:
    """Round 18's Trilby and Edwin Drood, facts their texts state that were "not stated":
    "Tall, thin, red-haired, and well-favored, he was …"; "‘Immensely tall!’ Rosa being
    short." A place before the list ("Under tall trees, Robarts sat") is no one's."""
    lorrimer = "# Lorrimer\n- **Pronouns:** he\n- **Height:** short\n- **Hair:** black\n"
    said = "Lorrimer came.\n\nTall, thin, red-haired, and well-favored, he was eager.\n"
    assert conflicts(said, lorrimer) == ["Lorrimer:height:tall", "Lorrimer:hair:red-haired"]
    assert conflicts("Under tall trees, Lorrimer sat.\n", lorrimer) == []
    rosa = "# Rosa Bud\n- **Aliases:** Rosa\n- **Pronouns:** she\n- **Height:** tall\n"
    assert conflicts("‘Immensely tall!’ Rosa being short.\n", rosa) == ["Rosa Bud:height:short"]
    assert conflicts("The wall being short, Rosa jumped.\n", rosa) == []


def test_a_list_after_a_predicate_and_a_colon_is_the_subjects() -> None:
    """Round 18's Song of the Lark: "he was very handsome: slender, gold-colored, with wavy
    black hair": the colon spells out what he was. Someone named after the colon is not
    him ("he was very handsome: his wife had black eyes")."""
    johnny = "# Spanish Johnny\n- **Aliases:** Johnny\n- **Pronouns:** he\n- **Hair:** red\n"
    said = "Spanish Johnny was very handsome: slender, gold-colored, with wavy black hair.\n"
    assert hair_read(said, johnny) == [("Spanish Johnny", "black")]
    said = "Spanish Johnny was very handsome: his wife had wavy black hair.\n"
    assert hair_read(said, johnny) == []


def test_what_round_18a_read_wrongly_is_no_finding(tmp_path: Path) -> None:
    """Round 18's Little Dorrit, Anna of the Five Towns and The Eustace Diamonds: each
    false finding, read right, and the same words where they do mean the one named."""
    casby = "# Christopher Casby\n- **Aliases:** Casby, the Patriarch\n- **Pronouns:** he\n"
    pancks = "# Pancks\n- **Aliases:** Mr Pancks\n- **Pronouns:** he\n- **Eyes:** black\n"
    clennam = "# Arthur Clennam\n- **Aliases:** Clennam\n- **Pronouns:** he\n- **Eyes:** brown\n"
    affery = "# Affery Flintwinch\n- **Aliases:** Affery\n- **Pronouns:** she\n- **Height:** tall\n"
    # an alias "the Patriarch" names him after an adjective too
    said = "Mr Pancks spoke, and even the unwieldy Patriarch moved his blue eyes to look at him.\n"
    assert conflicts(said, casby, pancks) == []
    # a speaker no card names ("returned Doyce") may be the one "his" means
    said = (
        "'My dear Doyce, it is sense,' said Clennam.\n\n'I am glad,' returned Doyce, with his "
        "grey eye looking kind.\n"
    )
    assert conflicts(said, clennam) == []
    said = "'I am glad,' returned Clennam, with his grey eye looking kind.\n"
    assert conflicts(said, clennam) == ["Arthur Clennam:eyes:grey"]
    # one spoken to, set off by commas after a noun, is not the one described
    said = "'A fine young woman, Clennam, with very dark eyes,' said Casby.\n"
    assert conflicts(said, casby, clennam) == []
    # a mention the sentence denies for someone else
    said = (
        "It was not presided over by Affery, but by the girl who had come. Now that he could "
        "observe her, Clennam found that her diminutive figure made her look young.\n"
    )
    assert conflicts(said, affery, clennam) == []
    assert conflicts(said.replace("not presided over by Affery, but by the girl", "Affery"),
                     affery, clennam) == ["Affery Flintwinch:height:diminutive"]  # fmt: skip
    # an apposition after "her father" is the father's
    anna = "# Anna\n- **Pronouns:** she\n- **Height:** tall\n"
    said = "Anna turned. There stood her father, a short, stout, ruddy, middle-aged man.\n"
    assert conflicts(said, anna) == []
    # "the violet eyes of his slim wife" are hers
    mynors = "# Henry Mynors\n- **Aliases:** Mynors\n- **Pronouns:** he\n- **Eyes:** black\n"
    said = "Mynors caught the admired violet eyes of his slim wife.\n"
    assert conflicts(said, mynors) == []
    # a broad Scots "Camperdoon" for "Camperdown", in dialect speech
    said = (
        "# Chapter 1\n\n\"I'd find a maister in Mr. Camperdoon, as'll nae alloo me to be "
        'thrown out," said Andy.\n\nMr. Camperdoon came.\n'
    )
    known = {"Camperdown", "Mr. Camperdown"}
    assert variants_in(tmp_path, said, known) == [("Camperdoon", 5)]


def test_an_adverb_in_an_apposition_and_a_hand_used_usually() -> None:
    """Round 18's Little Dorrit, facts its text states that were "not stated": "Flora,
    always tall, had grown to be very broad too"; "All her action was usually with her
    left hand"."""
    flora = "# Flora Finching\n- **Aliases:** Flora\n- **Pronouns:** she\n- **Height:** short\n"
    assert conflicts("Flora, always tall, had grown to be very broad too.\n", flora) == [
        "Flora Finching:height:tall"
    ]
    assert conflicts("Flora, always, tall men bored her.\n", flora) == []
    merdle = "# Mrs Merdle\n- **Pronouns:** she\n- **Handedness:** right\n"
    said = "Mrs Merdle curled a finger. All her action was usually with her left hand.\n"
    assert conflicts(said, merdle) == ["Mrs Merdle:handedness:left hand, by habit"]


def test_what_round_19_read_wrongly_is_no_finding(tmp_path: Path) -> None:
    """Round 19's This Side of Paradise: "Amory's companion proved to be … He was, perhaps,
    nineteen, with … pale blue eyes": the companion is someone else in view; "'Clair de
    Lune'" is a song, not a slip for St. Claire."""
    amory = "# Amory Blaine\n- **Aliases:** Amory\n- **Pronouns:** he\n- **Eyes:** green\n"
    said = "Amory's companion proved to be a poet. He was nineteen, with pale blue eyes.\n"
    assert conflicts(said, amory) == []
    said = "Amory proved to be a poet. He was nineteen, with pale blue eyes.\n"
    assert conflicts(said, amory) == ["Amory Blaine:eyes:blue"]
    known = {"Claire", "Myra St. Claire"}
    said = "# Chapter 1\n\nHe tried to recite ‘Clair de Lune’ at luncheon.\n"
    assert variants_in(tmp_path, said, known) == []
    assert variants_in(tmp_path, "# Chapter 1\n\nThen Clair sat.\n", known) == [("Clair", 3)]
