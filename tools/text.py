"""Reading a manuscript file: markdown structure, unwrapped paragraphs, real sentences.

markdown-it-py parses the structure (it keeps each block's source lines, so every sentence
knows the line it starts on); paragraphs hard-wrapped at any width are joined before any
sentence work; blingfire finds the sentence boundaries. CRLF and lone CR line ends read as LF.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from markdown_it import MarkdownIt
from markdown_it.token import Token

BlockKind = Literal["heading", "paragraph", "item", "quote"]

_MD = MarkdownIt("commonmark")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_FRONT_LINE = re.compile(r"^([A-Za-z_][\w -]*?)\s*:\s*(.*?)\s*$")
#: A first line like "CHAPTER IV." or "Scene 2: The Ambush" is a title even without `#`.
_TITLE_LINE = re.compile(
    r"^(?:chapter|scene|part|book|prologue|epilogue|interlude)\b[\w .:,'’\-–—]{0,80}$",
    re.IGNORECASE,
)
_TITLE_ABBREVIATIONS = r"(?:Mr|Mrs|Ms|Messrs|Mme|Mlle|Dr|St|Mt|Capt|Col|Gen|Lt|Sgt|Rev|Prof|Hon)"
#: blingfire ends a sentence after a title it does not know ("... times. Mr." | "Gray came").
_TITLES_BEFORE_NAMES = re.compile(r"(?:^|\s)(?:" + _TITLE_ABBREVIATIONS + r"|Sr|Jr)\.$")
#: ... and never before one: "He was poor. Mr. Smith was rich." is two sentences. A word's
#: last letter ends the one before, so "Mr. and Mrs. Smith" and "J. Smith" stay whole.
_SENTENCE_BEFORE_A_TITLE = re.compile(
    r"(?<=[a-z][.!?])(?:[\"”’']?)\s+(?=" + _TITLE_ABBREVIATIONS + r"\.\s+(?:[A-Z]|and\s))"
)


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True)
class Block:
    """One markdown block as plain text: soft line breaks are spaces, markup is gone.

    `breaks` holds the offsets in `text` where each following source line begins, so an
    offset maps back to the file line it came from.
    """

    kind: BlockKind
    text: str
    line: int
    breaks: tuple[int, ...] = ()
    level: int = 0

    def line_at(self, offset: int) -> int:
        return self.line + bisect_right(self.breaks, offset)


@dataclass(frozen=True)
class Sentence:
    text: str
    line: int
    block: int
    start: int

    @property
    def end(self) -> int:
        return self.start + len(self.text)


@dataclass(frozen=True)
class Document:
    front_matter: dict[str, str]
    blocks: tuple[Block, ...]
    sentences: tuple[Sentence, ...]

    @property
    def title(self) -> str | None:
        heading = next((b for b in self.blocks if b.kind == "heading"), None)
        if heading is not None:
            return heading.text
        return self.front_matter.get("title")

    @property
    def prose(self) -> tuple[Block, ...]:
        return tuple(b for b in self.blocks if b.kind != "heading")

    def quoted_spans(self, block: int) -> tuple[tuple[int, int], ...]:
        return quoted_spans(self.blocks[block].text)


def parse_front_matter(text: str) -> tuple[dict[str, str], str, int]:
    """`key: value` pairs of a leading `---` block, the text after it, and its line count."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return {}, text, 0
    fields: dict[str, str] = {}
    for line in match.group(1).splitlines():
        pair = _FRONT_LINE.match(line)
        if pair:
            fields[pair.group(1).strip().lower()] = _yaml_scalar(pair.group(2))
    consumed = match.group(0)
    return fields, text[len(consumed) :], consumed.count("\n")


_YAML_COMMENT = re.compile(r"\s+#.*$")
#: A quoted YAML scalar, whole: 'it''s said' and "blue (\"Tom had blue eyes\")".
_SINGLE_QUOTED = re.compile(r"'((?:[^']|'')*)'")
_DOUBLE_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _yaml_scalar(raw: str) -> str:
    """A front-matter value as YAML reads it: a quoted value whole, else up to a comment
    (`eyes: dark  # 'so dark-eyed' (I.2)` is "dark")."""
    value = raw.strip()
    quoted = _SINGLE_QUOTED.match(value) or _DOUBLE_QUOTED.match(value)
    rest = value[quoted.end() :].strip() if quoted is not None else ""
    if rest and not rest.startswith("#") and len(value) > 1 and value[-1] == value[0]:
        # 'blue ("Fred's blond face")': an apostrophe inside single quotes not doubled, which
        # YAML refuses; the writer meant the whole value, not "blue (\"Fred"
        return value[1:-1].replace("''", "'") if value[0] == "'" else value[1:-1]
    if quoted is not None and (not rest or rest.startswith("#")):
        body = quoted.group(1)
        if value[0] == "'":
            return body.replace("''", "'")  # YAML's one escape in single quotes
        try:
            # YAML's double-quoted escapes (\", \\, \n, \u00e9) are JSON's
            decoded: str = json.loads(f'"{body}"')
        except ValueError:
            return body.replace('\\"', '"')
        return decoded
    plain = _YAML_COMMENT.sub("", value).strip()
    # a quote opening a value it never closes is dropped; quotes inside a plain value
    # are the writer's ('the elder daughter, "very handsome"')
    return plain.strip("\"'") if plain[:1] in ("'", '"') else plain


def _inline_text(token: Token) -> tuple[str, tuple[int, ...]]:
    parts: list[str] = []
    breaks: list[int] = []
    size = 0
    for child in token.children or []:
        if child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
            size += 1
            breaks.append(size)
        elif child.type in ("text", "code_inline"):
            parts.append(child.content)
            size += len(child.content)
        elif child.type == "image":
            alt = "".join(c.content for c in child.children or [])
            parts.append(alt)
            size += len(alt)
    return "".join(parts), tuple(breaks)


def parse_blocks(text: str, line_offset: int = 0) -> list[Block]:
    blocks: list[Block] = []
    context: list[str] = []
    heading_level = 0
    for token in _MD.parse(text):
        if token.nesting == 1 and token.type in ("bullet_list_open", "ordered_list_open"):
            context.append("item")
        elif token.nesting == 1 and token.type == "blockquote_open":
            context.append("quote")
        elif token.nesting == -1 and token.type in (
            "bullet_list_close",
            "ordered_list_close",
            "blockquote_close",
        ):
            context.pop()
        elif token.type == "heading_open":
            heading_level = int(token.tag[1:])
        elif token.type == "heading_close":
            heading_level = 0
        elif token.type == "inline" and token.map is not None:
            plain, breaks = _inline_text(token)
            if not plain.strip():
                continue
            kind: BlockKind = (
                "heading" if heading_level else context[-1] if context else "paragraph"  # type: ignore[assignment]
            )
            blocks.append(Block(kind, plain, token.map[0] + 1 + line_offset, breaks, heading_level))
    if blocks and blocks[0].kind == "paragraph" and _TITLE_LINE.match(blocks[0].text.strip()):
        first = blocks[0]
        blocks[0] = Block("heading", first.text.strip(), first.line, first.breaks, 1)
    return blocks


def split_sentences(text: str) -> list[tuple[int, str]]:
    """(offset, sentence) pairs of one unwrapped paragraph."""
    if not text.strip():
        return []
    # blingfire (with numpy, ~80 ms) is imported by the first text split, not at start-up.
    import blingfire

    pieces = [
        part
        for piece in blingfire.text_to_sentences(text).split("\n")
        for part in _split_before_titles(piece)
        if part.strip()
    ]
    merged: list[str] = []
    for piece in pieces:
        if merged and _TITLES_BEFORE_NAMES.search(merged[-1]):
            merged[-1] = f"{merged[-1]} {piece}"
        else:
            merged.append(piece)
    found: list[tuple[int, str]] = []
    position = 0
    for piece in merged:
        words = piece.split()
        # blingfire normalises inner whitespace; find the piece by its first and last words.
        start = text.find(words[0], position)
        if start < 0:
            start = position
        end = text.find(words[-1], max(start, position)) + len(words[-1]) if words else start
        if end < start:
            end = start + len(piece)
        found.append((start, text[start:end]))
        position = end
    return found


def _split_before_titles(piece: str) -> list[str]:
    if ". " not in piece and "! " not in piece and "? " not in piece:
        return [piece]
    parts: list[str] = []
    start = 0
    for boundary in _SENTENCE_BEFORE_A_TITLE.finditer(piece):
        parts.append(piece[start : boundary.start() + len(boundary.group(0).rstrip())].strip())
        start = boundary.end()
    parts.append(piece[start:])
    return parts


@lru_cache(maxsize=512)
def read_document(text: str) -> Document:
    """The parsed document of a file's text (cached: many tools read the same files)."""
    normal = normalize_newlines(text)
    front, body, skipped = parse_front_matter(normal)
    blocks = tuple(parse_blocks(body, skipped))
    sentences = tuple(
        Sentence(sentence, block.line_at(start), index, start)
        for index, block in enumerate(blocks)
        if block.kind != "heading"
        for start, sentence in split_sentences(block.text)
    )
    return Document(front, blocks, sentences)


def quoted_spans(text: str) -> tuple[tuple[int, int], ...]:
    """Spans of a paragraph inside double quotation marks, or, in a paragraph with none,
    inside single ones (‘…’, as British editions print speech, or '…' as plain-text
    editions do). A single quote doubles as an apostrophe, so it closes only where no
    letter follows it. A quote still open at the paragraph's end runs to its end, as in
    prose where speech goes on."""
    if not any(mark in text for mark in '“"'):
        if "‘" in text:
            return _single_quoted_spans(text)
        if "'" in text:
            return _single_quoted_spans(text, "'", "'")
    spans: list[tuple[int, int]] = []
    opened: int | None = None
    closer = ""
    for i, ch in enumerate(text):
        if opened is None:
            if ch == "“" or (ch == '"' and (i == 0 or not text[i - 1].isalnum())):
                opened, closer = i, "”" if ch == "“" else '"'
        elif ch == closer or (closer == "”" and ch == '"'):
            spans.append((opened, i + 1))
            opened = None
    if opened is not None:
        spans.append((opened, len(text)))
    return tuple(spans)


def _single_quoted_spans(
    text: str, opener: str = "‘", closer: str = "’"
) -> tuple[tuple[int, int], ...]:
    """ "‘Dora,’ said I, ‘you don’t mean it.’": a ’ closes only where no letter follows it
    (in "don’t" it is an apostrophe). A straight quote opens only before a letter and
    never an elision ("'tis", "'em"), and closes only after punctuation."""
    spans: list[tuple[int, int]] = []
    opened: int | None = None
    for i, ch in enumerate(text):
        if opened is None:
            if (
                ch == opener
                and (i == 0 or not text[i - 1].isalnum())
                and not (opener == "'" and _ELISION.match(text, i + 1))
            ):
                opened = i
        elif (
            ch == closer
            and (i + 1 == len(text) or not text[i + 1].isalpha())
            # a plain quote after a letter is an elision ("cud a' dood it", "goin' home"):
            # speech in plain-text editions closes after its punctuation
            and not (
                closer == "'"
                and text[i - 1].isalpha()
                and (i + 1 == len(text) or text[i + 1] not in ",.;:!?")
            )
        ):
            # (a plural's apostrophe, "the girls’ hats", closes a quote early: rare in speech)
            quoted = text[opened + 1 : i]
            if _A_NAME_SET_OFF.fullmatch(quoted) and _A_WORD_BEFORE.search(text, 0, opened):
                pass  # "this was ‘Uncle Robson,’ Mrs. Bloomfield’s brother": a name set off
            elif " " in quoted.strip() or quoted.rstrip()[-1:] in tuple(",.!?;:—-"):
                spans.append((opened, i + 1))
            # else a word set off, not speech: "a stool, which was called ‘Dick’"
            opened = None
    if opened is not None:
        spans.append((opened, len(text)))
    return tuple(spans)


#: A name in quotes within narration: one to three capitalised words, no question or cry.
_A_NAME_SET_OFF = re.compile(r"(?:[A-Z][\w’'.-]*\s*){1,3}[,.]?")
#: ... where the sentence runs on into it: a word (not a stop, comma or colon) just before.
_A_WORD_BEFORE = re.compile(r"[A-Za-z]\s+$")
#: What a straight quote before a word may elide rather than open: "'tis", "'Twas", "'em".
_ELISION = re.compile(
    r"(?:tis|twas|twere|twill|twould|em|cause|un|ee|ere|prentice|bout|gainst|neath|twixt|"
    r"s|t|d|ll|ve|re|m)\b|[^A-Za-z]",
    re.IGNORECASE,
)


def inside(spans: tuple[tuple[int, int], ...], offset: int) -> bool:
    return any(start <= offset < end for start, end in spans)
