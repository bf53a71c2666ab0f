"""Where a workspace keeps its scenes or chapters, its outline and its canon cards.

Declared in `.control-room/workspace.json` (schema: `workspace.schema.json` beside this
module), or detected when that file is absent:

- manuscript units: files under a folder named Scenes, Chapters, Manuscript, Draft(s) or Text,
  or a numbered Part, Book or Volume; files named `SCN-…`, `CH-…`, `Scene 3…`, `Chapter 3…`
  (after a number or not: `01 Chapter I`); files whose front matter has
  `scene:` or `chapter:`. They are chapters when their folder or names say so, else scenes.
- the outline: a file whose name contains "outline", "synopsis" or "beat sheet".
- canon cards: files under Compendium, Canon, Codex, Bible, Characters, Cast, People, Persons,
  Locations, Places, World or Wiki, or named `CHAR-…`, `LOC-…`, `ITEM-…`, or anywhere else
  when two or more of their lines give a person's attributes ("Eyes: grey", "| Hair | dark |").
- numbers: front matter `scene:`/`chapter:`/`number:`, else the first number (or roman
  numeral after "Chapter"/"Scene") in the file name, else in the title; order is by number,
  then by name, with numbers read as numbers ("Chapter 10" after "Chapter 9").

README files and anything under `.control-room/` are never part of a layout, nor what the
workspace listing leaves out (`Workspace.skipped`): those of them a writer should know about
(files over the size limit, links to nothing, files that cannot be read) are the layout's
warnings, a few named and the rest counted.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from controlroom.domain.errors import WorkspaceError
from controlroom.tools.text import normalize_newlines, parse_front_matter, read_document
from controlroom.tools.workspace import (
    REPORTS_DIR,
    STATE_DIR,
    FileTooLargeError,
    Skipped,
    Workspace,
)

LAYOUT_FILE = f"{STATE_DIR}/workspace.json"
SCHEMA_PATH = Path(__file__).with_name("workspace.schema.json")
UnitKind = Literal["scene", "chapter"]

_UNIT_DIRS = {
    "scenes": "scene",
    "scene": "scene",
    "chapters": "chapter",
    "chapter": "chapter",
    "manuscript": None,
    "draft": None,
    "drafts": None,
    "text": None,
}
_CANON_DIRS = frozenset(
    "compendium canon codex bible characters character cast people locations places "
    "world worldbuilding wiki items glossary persons personae profiles bios".split()
) | {"dramatis personae", "dramatis_personae", "dramatis-personae", "dramatispersonae"}
#: A card kept anywhere ("Dramatis Personae/silver.md") is known by its lines: two or more
#: of these attributes as "Eyes: grey", "- **Eyes:** grey" or a table row "| Eyes | grey |".
_CARD_KEYS = r"aliases|pronouns|eyes|hair|height|handedness|age|role|occupation|gender|build"
_CARD_LINE = re.compile(
    rf"^\s*(?:[-*+]\s+)?(?:\|\s*)?\*{{0,2}}(?:{_CARD_KEYS})\*{{0,2}}\s*(?::|\|)"
    # or a section per attribute: "## Eyes"
    rf"|^#{{2,6}}\s+(?:{_CARD_KEYS})\s*$",
    re.IGNORECASE | re.MULTILINE,
)
_CARD_LINES_MIN = 2
#: How many files opening on a chapter heading make a folder of any name a chapter folder.
_HEADED_CHAPTERS_MIN = 3
#: Only a card's head is read to know it: cards are short, chapters are not cards.
_CARD_HEAD = 4000
_UNIT_NAME = re.compile(
    r"^(?:\d+[\s_\-.]+)?(scn|scene|ch|chap|chapter)(?=[\s_\-.]*(\d|[ivxlc]+\b))", re.IGNORECASE
)
#: A unit's first line naming it a chapter: "# CHAPTER IV.", "Chapter 12: The Return", "Ch. 3".
#: A book's own matter before or after its chapters: not a scene, whatever its heading.
_BOOKS_OWN_MATTER = re.compile(
    r"^\s*#{0,6}\s*(?:the\s+)?(?:dedication|preface|foreword|introduction|prologue|prelude|epilogue|"
    r"author'?s?['’]?\s+note|postscript|afterword)\b",
    re.IGNORECASE,
)
#: A chapter's number in words: "Chapter One", "CHAPTER TWENTY-TWO", "Chapter the First".
_NUMBER_IN_WORDS = (
    r"(?:the\s+)?(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"\w+teen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|first|second|"
    r"third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth)\b"
)
_CHAPTER_HEADING = re.compile(
    rf"^\s*#{{0,6}}\s*(?:chapter|chap\.|ch\.)\s*(?:[0-9ivxlc]|{_NUMBER_IN_WORDS})", re.IGNORECASE
)
#: A book's own divisions, numbered: "Part 1", "Book Two", "Volume III" hold its chapters.
_PART_DIR = re.compile(
    r"^(?:part|book|volume|vol)[\s_\-.]*(?:the\s+)?(?:\d+|[ivxlc]+|one|two|three|four|five|six|seven|"
    # "Part 1 - The Wild Land", "Book II: Maggie": a title may follow the number
    r"eight|nine|ten|first|second|third|fourth|fifth|sixth)(?:$|[\s_\-.:,–—]+\S.*$)",
    re.IGNORECASE,
)
#: A heading that is a roman numeral alone or before its title: "# XII. “SEE THE PALE
#: MARTYR”", "# IV", a line "XIV": how chapters are headed far more often than scenes
#: (never "I went out", a first line in the first person).
_NUMERAL_HEADING = re.compile(r"^\s*(?:#{1,6}\s*[IVXLC]+\b\.?(?:\s|$)|[IVXLC]+\.?\s*$)")
_CANON_NAME = re.compile(r"^(char|loc|item)-", re.IGNORECASE)
_OUTLINE_NAME = re.compile(r"outline|synopsis|beat[\s_-]?sheet|treatment", re.IGNORECASE)
_NUMBER = re.compile(r"\d+")
_ROMAN = re.compile(r"\b(?:chapter|scene|part|ch)[\s_\-.]*([ivxlcdm]+)\b", re.IGNORECASE)
_ROMAN_VALUES = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}
#: Paths a warning names before it counts the rest.
NAMED_IN_WARNING = 5
_WARNED_ABOUT = {
    "too_large": "over the size limit per file",
    "dangling_link": "that are links to nothing",
    "broken_link": "that are links that cannot be followed",
    "unreadable": "that cannot be read",
}


class LayoutSpec(BaseModel):
    """`.control-room/workspace.json`: where this workspace keeps each kind of file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1] = 1
    unit: UnitKind = Field(
        default="scene", description="What one manuscript file is: a scene or a chapter."
    )
    units: list[str] = Field(
        default_factory=list,
        description="Glob patterns (workspace-relative, `**` for any folders) of the scene or "
        "chapter files. Absent or empty: the layout is detected, and the other settings here "
        "(narrator, ignore_names, exclude) still apply.",
    )
    outline: str | None = Field(default=None, description="Path of the outline, if any.")
    canon: list[str] = Field(
        default_factory=list, description="Glob patterns of the canon card files."
    )
    numbering: Literal["front_matter", "filename", "title", "order"] = Field(
        default="filename",
        description="Where a unit's number comes from; `order` numbers units 1, 2, 3 in the "
        "order of the `units` patterns (each pattern's files by folder and path).",
    )
    exclude: list[str] = Field(default_factory=list, description="Glob patterns to leave out.")
    narrator: str | None = Field(
        default=None,
        description="The character who narrates in the first person (their canon card's "
        "name): 'I', 'my' and 'me' outside dialogue are this character. Detected when absent.",
    )
    ignore_names: list[str] = Field(
        default_factory=list,
        description="Spellings the name check accepts as intended (a nickname, a character's "
        "own misspelling): never reported as a misspelled name.",
    )


def layout_schema() -> dict[str, Any]:
    schema = LayoutSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://controlroom.dev/schemas/workspace.json"
    return schema


@dataclass(frozen=True)
class Unit:
    path: str
    number: int | None
    title: str

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "number": self.number, "title": self.title}


@dataclass(frozen=True)
class Layout:
    source: Literal["declared", "detected"]
    unit: UnitKind
    units: tuple[Unit, ...]
    outline: str | None
    canon: tuple[str, ...]
    other: tuple[str, ...]
    warnings: tuple[str, ...] = field(default=())
    #: What the workspace listing left out, and the files the layout could not read.
    skipped: tuple[Skipped, ...] = field(default=())

    def as_dict(self, max_listed: int | None = None) -> dict[str, Any]:
        """The layout as JSON; `max_listed` bounds the lists of other and skipped paths
        (their totals say how many there are), for a receipt of bounded size."""
        other, skipped = self.other[:max_listed], self.skipped[:max_listed]
        return {
            "source": self.source,
            "unit": self.unit,
            "units": [u.as_dict() for u in self.units],
            "outline": self.outline,
            "canon": list(self.canon),
            "other": list(other),
            "other_total": len(self.other),
            "skipped": [s.as_dict() for s in skipped],
            "skipped_total": len(self.skipped),
            "warnings": list(self.warnings),
        }

    def left_out(self) -> str:
        """What was left out on purpose (folders of packages, what .gitignore ignores), in
        a few words: `node_modules/ (packages or build output), Drafts/ (ignored by
        .gitignore)`; empty when nothing was."""
        chosen = [s for s in self.skipped if s.reason in ("package_folder", "ignored")]
        named = [f"{s.path} ({s.detail})" for s in chosen[:NAMED_IN_WARNING]]
        if len(chosen) > NAMED_IN_WARNING:
            named.append(f"and {len(chosen) - NAMED_IN_WARNING} more")
        return ", ".join(named)

    def require_units(self) -> None:
        if not self.units:
            raise WorkspaceError(no_units_message(self))


def no_units_message(layout: Layout) -> str:
    left_out = layout.left_out()
    also = f" (left out: {left_out})" if left_out else ""
    if layout.source == "declared":
        return f"no scene or chapter files match the patterns in {LAYOUT_FILE}{also}"
    return (
        "no scene or chapter files found: keep them under a folder named Scenes, Chapters, "
        "Manuscript, Draft or Text (or numbered Part/Book/Volume folders), or name them "
        "SCN-01…/CH-01…/'Chapter 1…', or declare where they are in "
        f'{LAYOUT_FILE}, e.g. {{"unit": "chapter", "units": ["Story/*.md"]}} '
        f"(README: Workspace layout){also}"
    )


def skip_warnings(skipped: tuple[Skipped, ...]) -> list[str]:
    """One warning per kind of problem, naming a few paths and counting the rest: a
    workspace with ten thousand broken links gets one line about them, not ten thousand."""
    warnings = []
    for reason, what in _WARNED_ABOUT.items():
        found = [s for s in skipped if s.reason == reason]
        if not found:
            continue
        if len(found) == 1:
            warnings.append(f"skipped '{found[0].path}': {found[0].detail}")
            continue
        named = [f"'{s.path}': {s.detail}" for s in found[:NAMED_IN_WARNING]]
        if len(found) > NAMED_IN_WARNING:
            named.append(f"and {len(found) - NAMED_IN_WARNING} more")
        warnings.append(f"skipped {len(found)} files {what}: {'; '.join(named)}")
    return warnings


def natural_key(path: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p.lower() for p in re.split(r"(\d+)", path))


def roman(text: str) -> int | None:
    total = 0
    values = [_ROMAN_VALUES.get(ch) for ch in text.lower()]
    if not values or None in values:
        return None
    numbers = [v for v in values if v is not None]
    for i, value in enumerate(numbers):
        total += -value if i + 1 < len(numbers) and numbers[i + 1] > value else value
    return total


def number_in(text: str) -> int | None:
    found = _ROMAN.search(text)
    digits = _NUMBER.search(text)
    if digits and (found is None or digits.start() <= found.start()):
        return int(digits.group(0))
    return roman(found.group(1)) if found else None


def _front_number(front: dict[str, str]) -> int | None:
    for key in ("scene", "chapter", "number"):
        value = front.get(key, "")
        if value.strip().isdigit():
            return int(value)
    return None


def _unit_of(workspace: Workspace, path: str, numbering: str) -> Unit:
    doc = read_document(workspace.read_text(path))
    title = doc.title or path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    name = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    number: int | None = None
    if numbering in ("front_matter", "filename", "title"):
        number = _front_number(doc.front_matter)
    if number is None and numbering in ("filename", "title"):
        first, second = (name, title) if numbering == "filename" else (title, name)
        number = number_in(first)
        if number is None:
            number = number_in(second)
    return Unit(path, number, title)


def _units_of(
    workspace: Workspace, paths: list[str], numbering: str, unreadable: list[Skipped]
) -> list[Unit]:
    """The units at `paths`; one that cannot be read is left out and noted in `unreadable`
    (a FIFO, a file made unreadable or removed since the listing): the rest are checked."""
    units = []
    for path in paths:
        try:
            units.append(_unit_of(workspace, path, numbering))
        except WorkspaceError as exc:
            unreadable.append(_not_read(path, exc))
    return units


def _not_read(path: str, error: WorkspaceError) -> Skipped:
    if isinstance(error, FileTooLargeError):
        return Skipped(path, "too_large", error.detail)
    return Skipped(path, "unreadable", str(error))


def _first_readable(
    workspace: Workspace, paths: list[str], unreadable: list[Skipped]
) -> str | None:
    """The first of `paths` that can be read (an outline over the size limit is skipped
    with a warning like any file, not the error of every recipe that reads it)."""
    for path in paths:
        try:
            workspace.read_text(path)
        except WorkspaceError as exc:
            unreadable.append(_not_read(path, exc))
        else:
            return path
    return None


def _finished(
    layout: Layout, workspace: Workspace, unreadable: list[Skipped], warnings: list[str]
) -> Layout:
    """The layout with what was skipped on the way, and the warnings about it."""
    skipped = tuple(sorted((*workspace.skipped, *unreadable), key=lambda s: s.path))
    left = {s.path for s in unreadable}
    return replace(
        layout,
        other=tuple(p for p in layout.other if p not in left),
        warnings=(*warnings, *skip_warnings(skipped)),
        skipped=skipped,
    )


def _ordered(
    units: list[Unit], warnings: list[str], declared: list[str] | None = None
) -> tuple[Unit, ...]:
    """Units in reading order. With `declared` (`numbering: order`), numbered 1, 2, 3 in
    the order of those patterns: `["Prelude.md", "Book */*.md", "Finale.md"]` puts the
    prelude first; within a pattern, by folder and path."""
    numbers = [u.number for u in units if u.number is not None]
    rank = _folder_ranks(units)
    by_order = declared is not None
    if by_order or len(numbers) != len(set(numbers)) or len(numbers) != len(units):
        if numbers and not by_order:
            warnings.append(
                "unit numbers are missing or repeated; units are numbered by their order"
            )
        ordered = sorted(
            units,
            key=lambda u: (
                _pattern_index(u.path, declared or []),
                rank[_folder(u.path)],
                natural_key(u.path),
            ),
        )
        return tuple(Unit(u.path, i, u.title) for i, u in enumerate(ordered, start=1))
    return tuple(
        sorted(units, key=lambda u: (rank[_folder(u.path)], u.number or 0, natural_key(u.path)))
    )


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _folder_ranks(units: list[Unit]) -> dict[str, int]:
    """The order of the folders units sit in: "Book the First" before "Book the Second",
    "Part Two" before "Part Three" (by the number their names give, in digits, roman
    numerals or words), else by the first unit number each holds, then by name. One folder,
    or numbers that run on across folders, order as before."""
    folders = sorted({_folder(u.path) for u in units}, key=natural_key)
    named = {f: _folder_number(f.rsplit("/", 1)[-1]) for f in folders}
    first: dict[str, float] = {}
    for unit in units:
        folder = _folder(unit.path)
        number = float(unit.number) if unit.number is not None else float("inf")
        first[folder] = min(first.get(folder, float("inf")), number)
    if all(n is not None for n in named.values()):
        ordered = sorted(folders, key=lambda f: (named[f], natural_key(f)))
    else:
        ordered = sorted(folders, key=lambda f: (first[f], natural_key(f)))
    return {folder: index for index, folder in enumerate(ordered)}


_NUMBER_WORDS = {
    word: value
    for value, words in enumerate(
        (
            "one first",
            "two second",
            "three third",
            "four fourth",
            "five fifth",
            "six sixth",
            "seven seventh",
            "eight eighth",
            "nine ninth",
            "ten tenth",
            "eleven eleventh",
            "twelve twelfth",
        ),
        start=1,
    )
    for word in words.split()
}
_FOLDER_ROMAN = re.compile(r"\b(?:part|book|act|volume|vol)[\s_\-.]*([ivxlcdm]+)\b", re.I)


def _folder_number(name: str) -> int | None:
    """ "Part 2", "Book II", "Part Three", "Book the First": the number a folder's name
    gives, or None."""
    digits = _NUMBER.search(name)
    if digits:
        return int(digits.group(0))
    numeral = _FOLDER_ROMAN.search(name)
    if numeral:
        return roman(numeral.group(1))
    for word in re.findall(r"[a-z]+", name.lower()):
        if word in _NUMBER_WORDS:
            return _NUMBER_WORDS[word]
    return None


def _glob(paths: list[str], patterns: list[str]) -> list[str]:
    return [p for p in paths if any(fnmatch.fnmatch(p, pat) for pat in patterns)]


def _pattern_index(path: str, patterns: list[str]) -> int:
    """The place of the first of `patterns` that `path` matches (0 when none is given)."""
    return next((i for i, pat in enumerate(patterns) if fnmatch.fnmatch(path, pat)), 0)


def declared_layout(workspace: Workspace) -> LayoutSpec | None:
    path = workspace.root / LAYOUT_FILE
    if not path.is_file():
        return None
    try:
        return LayoutSpec.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'the file'}: {error['msg']}"
            for error in exc.errors()
        )
        raise WorkspaceError(
            f"{LAYOUT_FILE} is not a valid workspace layout: {problems} "
            f"(its fields: {', '.join(LayoutSpec.model_fields)})"
        ) from None
    except ValueError as exc:
        raise WorkspaceError(f"{LAYOUT_FILE} is not a valid workspace layout: {exc}") from None


def _candidates(workspace: Workspace) -> list[str]:
    return [
        p
        for p in workspace.text_files
        if not p.rsplit("/", 1)[-1].lower().startswith("readme")
        and STATE_DIR not in p
        and not p.startswith(f"{REPORTS_DIR}/")
    ]


def detect_layout(workspace: Workspace) -> Layout:
    """The declared layout when there is one, else what the folders and names show; worked
    out once per workspace object (a run's snapshot), as its files are read once."""
    return workspace.derived("layout", _detect_layout)


def _detect_layout(workspace: Workspace) -> Layout:
    spec = declared_layout(workspace)
    paths = _candidates(workspace)
    warnings: list[str] = []
    unreadable: list[Skipped] = []
    if spec is not None:
        paths = [p for p in paths if p not in _glob(paths, spec.exclude)]
    if spec is not None and spec.units:
        unit_paths = _glob(paths, spec.units)
        # Cards not declared are found as detection finds them: declaring where the
        # chapters are must not lose the cards (they were "other files" before).
        canon = (
            _glob(paths, spec.canon)
            if spec.canon
            else [p for p in _detected(workspace, paths, [], []).canon if p not in unit_paths]
        )
        if spec.outline is not None and spec.outline not in paths:
            warnings.append(f"the outline '{spec.outline}' named in {LAYOUT_FILE} does not exist")
        outline = _first_readable(
            workspace, [spec.outline] if spec.outline in paths else [], unreadable
        )
        units = _units_of(
            workspace, [p for p in unit_paths if p not in canon], spec.numbering, unreadable
        )
        taken: set[str | None] = {*unit_paths, *canon, outline}
        declared = Layout(
            "declared",
            spec.unit if "unit" in spec.model_fields_set else _unit_by_titles(units),
            _ordered(units, warnings, spec.units if spec.numbering == "order" else None),
            outline,
            tuple(sorted(canon)),
            tuple(p for p in paths if p not in taken),
        )
        return _finished(declared, workspace, unreadable, warnings)
    detected = _detected(workspace, paths, warnings, unreadable)
    if spec is not None and "unit" in spec.model_fields_set:
        detected = replace(detected, unit=spec.unit)  # {"unit": "chapter"} alone
    if spec is not None and spec.canon:
        # {"canon": ["Dramatis Personae/*.md"]} alone: the cards are where it says, the
        # chapters where detection finds them
        cards = set(_glob(paths, spec.canon))
        detected = replace(
            detected,
            units=tuple(u for u in detected.units if u.path not in cards),
            canon=tuple(sorted(cards)),
            other=tuple(p for p in detected.other if p not in cards),
        )
    if spec is not None and spec.outline is not None:
        if spec.outline in paths:
            detected = replace(
                detected,
                outline=spec.outline,
                other=tuple(p for p in detected.other if p != spec.outline),
            )
        else:
            warnings.append(f"the outline '{spec.outline}' named in {LAYOUT_FILE} does not exist")
    return _finished(detected, workspace, unreadable, warnings)


def _detected(
    workspace: Workspace, paths: list[str], warnings: list[str], unreadable: list[Skipped]
) -> Layout:
    """The layout the folders and names show."""
    outline_paths = sorted(
        (p for p in paths if _OUTLINE_NAME.search(p.rsplit("/", 1)[-1])),
        key=lambda p: (p.count("/"), p),
    )
    outline = _first_readable(workspace, outline_paths, unreadable)
    found_canon: list[str] = []
    found_units: list[str] = []
    kinds: Counter[str] = Counter()
    #: Files elsewhere that open on a chapter heading, by folder.
    headed: dict[str, list[str]] = {}
    for path in paths:
        if path in outline_paths:
            continue
        folders = [f.lower() for f in path.split("/")[:-1]]
        name = path.rsplit("/", 1)[-1]
        try:
            text = workspace.read_text(path)
        except WorkspaceError as exc:
            unreadable.append(_not_read(path, exc))
            continue
        # Only the front matter: a whole parse of every note and card is not needed here.
        front = parse_front_matter(text)[0]
        if _CANON_NAME.match(name) or any(f in _CANON_DIRS for f in folders):
            found_canon.append(path)
        elif (folder := next((f for f in reversed(folders) if _holds_units(f)), None)) or (
            _UNIT_NAME.match(name)
        ):
            found_units.append(path)
            named = _UNIT_NAME.match(name)
            kind = _UNIT_DIRS.get(folder or "") or (
                ("chapter" if named.group(1).lower().startswith("ch") else "scene")
                if named
                else _kind_by_heading(text)
            )
            if kind is not None:
                kinds[kind] += 1
        elif "scene" in front or "chapter" in front:
            found_units.append(path)
            kinds["scene" if "scene" in front else "chapter"] += 1
        elif _reads_as_card(front, text):
            found_canon.append(path)
        elif path.endswith((".md", ".txt", ".markdown")) and _kind_by_heading(text) == "chapter":
            headed.setdefault(path.rsplit("/", 1)[0] if "/" in path else "", []).append(path)
    # "Egoist/05-clara-middleton.md" opening "# CHAPTER V": a folder of files that each open
    # on a chapter heading holds chapters, whatever it is called
    for folder_paths in headed.values():
        if len(folder_paths) >= _HEADED_CHAPTERS_MIN:
            found_units.extend(folder_paths)
            kinds["chapter"] += len(folder_paths)
    if len(outline_paths) > 1:
        warnings.append(f"several outlines found; using '{outline}'")
    units = _units_of(workspace, found_units, "filename", unreadable)
    unit: UnitKind = _kind_of_most(kinds)
    taken = {*found_units, *found_canon, *outline_paths}
    return Layout(
        "detected",
        unit,
        _ordered(units, warnings),
        outline,
        tuple(sorted(found_canon)),
        tuple(p for p in paths if p not in taken),
    )


def _kind_of_most(kinds: Counter[str]) -> UnitKind:
    """Chapters when the units are chapters, one stray in ten allowed: Vanity Fair's "Before
    the Curtain" among sixty-seven chapters does not make them all scenes."""
    return "chapter" if kinds["chapter"] and kinds["scene"] * 10 <= kinds["chapter"] else "scene"


def _unit_by_titles(units: Sequence[Unit]) -> UnitKind:
    """Declared units whose kind is not: chapters when every one titled as a chapter or the
    book's own matter ("CHAPTER XXXVIII", "PREFACE"), and one at least as a chapter."""
    kinds = {_kind_by_heading(u.title) for u in units} - {None}
    return "chapter" if kinds == {"chapter"} else "scene"


def _kind_by_heading(text: str) -> UnitKind | None:
    """What a file in a folder that does not say (`Text/`, `Draft/`, `Book One/`) is, by
    its own first line: `# CHAPTER IV.` is a chapter; a dedication, preface or epilogue
    says nothing of its siblings (None); anything else is taken as a scene."""
    body = parse_front_matter(normalize_newlines(text))[1]
    first = next((line for line in body.splitlines() if line.strip()), "")
    if _BOOKS_OWN_MATTER.match(first):
        return None
    return "chapter" if _CHAPTER_HEADING.match(first) or _NUMERAL_HEADING.match(first) else "scene"


def _holds_units(folder: str) -> bool:
    return folder in _UNIT_DIRS or _PART_DIR.match(folder) is not None


def _reads_as_card(front: dict[str, str], text: str) -> bool:
    if front.get("type", "").lower() in ("character", "location", "item", "canon"):
        return True
    return len(_CARD_LINE.findall(text, 0, _CARD_HEAD)) >= _CARD_LINES_MIN


def _slug_like(title: str, sample: str) -> str:
    """The title written as the sample's words are: `the-arrival`, `The_Arrival`, `The Arrival`."""
    joiner = next((c for c in (" ", "-", "_") if c in sample.strip(" -_.")), "-")
    words = re.findall(r"[0-9A-Za-z]+", re.sub(r"['’]", "", title))
    if sample == sample.lower():
        words = [w.lower() for w in words]
    return joiner.join(words)


_TO_ROMAN = (
    (1000, "m"),
    (900, "cm"),
    (500, "d"),
    (400, "cd"),
    (100, "c"),
    (90, "xc"),
    (50, "l"),
    (40, "xl"),
    (10, "x"),
    (9, "ix"),
    (5, "v"),
    (4, "iv"),
    (1, "i"),
)


def to_roman(number: int) -> str:
    """4 -> "iv" (lower case: the caller writes it as its sample does)."""
    out = []
    for value, letters in _TO_ROMAN:
        while number >= value:
            out.append(letters)
            number -= value
    return "".join(out)


def unit_path_for(layout: Layout, number: int, title: str) -> str | None:
    """Where unit `number` lives, or would live: next to the other units, named as they are
    (`SCN-03-the-archive.md` gives `SCN-04-the-reckoning.md`). None without units."""
    for unit in layout.units:
        if unit.number == number:
            return unit.path
    if not layout.units:
        return None
    before = [u for u in layout.units if (u.number or 0) < number]
    sample = before[-1] if before else layout.units[0]
    folder, _, name = sample.path.rpartition("/")
    stem, dot, suffix = name.rpartition(".")
    if not dot:
        stem, suffix = name, "md"
    digits = _NUMBER.search(stem)
    numeral = (
        re.search(rf"(?<![A-Za-z]){to_roman(sample.number)}(?![A-Za-z])", stem, re.IGNORECASE)
        if digits is None and sample.number is not None
        else None
    )
    if numeral is not None:
        # "Chapter III.md" gives "Chapter IV.md": the numeral in the sample's case, and a
        # title only where the sample's name carries one after its numeral
        written = to_roman(number)
        written = written.upper() if numeral.group(0).isupper() else written
        rest = stem[numeral.end() :]
        separator = re.match(r"[\s_\-.]*", rest)
        sep = separator.group(0) if separator else ""
        words = rest[len(sep) :]
        slugged = _slug_like(title, words) if title and words else ""
        new_stem = f"{stem[: numeral.start()]}{written}{sep + slugged if slugged else ''}"
    elif digits is None:
        new_stem = f"{layout.unit.capitalize()} {number} - {title}".strip(" -")
    else:
        rest = stem[digits.end() :]
        separator = re.match(r"[\s_\-.]*", rest)
        sep = separator.group(0) if separator and separator.group(0) else "-"
        words = rest[len(sep) :] if separator else rest
        numbered = f"{stem[: digits.start()]}{number:0{len(digits.group(0))}d}"
        slugged = _slug_like(title, words or "-") if title else ""
        new_stem = f"{numbered}{sep}{slugged}" if slugged and words else numbered
    return f"{folder}/{new_stem}.{suffix}" if folder else f"{new_stem}.{suffix}"
