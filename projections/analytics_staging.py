"""A batch of stored records taken apart on a thread of its own, before DuckDB loads it.

Every stored state starts with the same envelope, written by the store's own encoder:
`{"originator_id":"…","originator_version":…,"timestamp":"…","prev_hash":"…",
"event_hash":"…",` and then the event's own fields. The analytics keep the timestamp and the
payload without the envelope (the hashes, random and incompressible, stay in the log for
audits). The envelope's parts have known lengths (the id and the version are columns of
their own), so where each part lies is arithmetic, checked against the bytes, done here
with numpy while DuckDB loads the batch before. Done by DuckDB, with two regular
expressions and a JSON cast on the loading thread, it was a third of the ingest.

The timestamp and the payload go to DuckDB as Arrow string views into the batch's own bytes
(no text copied per row), the payload typed as JSON (checked as JSON where it is parsed:
`analytics_sql.parse`, `NOT_JSON`; one that is not is dropped, `drop_payloads`). A record
of any other shape (damaged, hand-made, or stored by another release) is handed over whole,
as `fallback`, and DuckDB takes it apart the slow way.

Each record's event name is worked out here too, once per distinct topic, and the rows of
the event types each derived table is loaded from are picked out (`rows_of_types`): DuckDB
then parses only those payloads, each once, not every row of the batch once per table.
"""

from __future__ import annotations

import ctypes
import itertools
import re
from collections.abc import Iterable
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from numpy.lib.stride_tricks import sliding_window_view

_ID_KEY: Final = b'{"originator_id":"'
_VERSION_KEY: Final = b'","originator_version":'
_TIMESTAMP_KEY: Final = b',"timestamp":"'
_PREV_KEY: Final = b'","prev_hash":"'
_HASH_KEY: Final = b'","event_hash":"'
_HASH_HEX: Final = 64  # sha256, in hex
#: Longer than any ISO 8601 timestamp the encoder writes (32 with an offset and microseconds).
_TIMESTAMP_MAX: Final = 40
#: Arrow's string views keep strings of up to 12 bytes inside the view itself.
_INLINE: Final = 12

#: The columns that replace `state` in the stored records (`arrow_log.RAW_SCHEMA`).
TIMESTAMP_TEXT: Final = "timestamp_text"
PAYLOAD: Final = "payload"
FALLBACK: Final = "fallback"
#: The event's name, from its topic (`…:StepStarted.v2` → `StepStarted`).
EVENT_TYPE: Final = "event_type"
#: The columns `rows_of_types` keeps.
ROW_COLUMNS: Final = ("position", "aggregate_id", EVENT_TYPE, TIMESTAMP_TEXT, PAYLOAD, FALLBACK)
#: The event's name is the topic's last word, less its shape's suffix (`.v2`).
_EVENT_NAME: Final = re.compile(r"([A-Za-z0-9_]+)(\.v[0-9]+)?$")

Bytes = npt.NDArray[np.uint8]
Ints = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

_VIEW: Final = np.dtype([("length", "<i4"), ("prefix", "V4"), ("buffer", "<i4"), ("offset", "<i4")])


def split_envelopes(records: pa.Table) -> pa.Table:
    """`records` with its `state` (text) replaced by the envelope's timestamp (text), the
    payload without the envelope (JSON), and the whole state of each record whose envelope
    was not found (null for the others), and with each record's event name.

    The records are handed over: their state bytes are written into (each payload's opening
    brace, over the comma after the envelope's hash), and the columns returned point into
    them. Copying the states instead cost more than all the rest: a batch of 160 MB into
    fresh memory, whose pages fault in one by one, took 0.4 s of the reading thread's 1.1 s.
    Each record batch (the child's, or the one of a read in process) is cut on its own, so
    nothing is joined either: the rows of one never lie in another's bytes. The columns
    returned are one chunk each (string views of many buffers: no text is copied).
    """
    parts = [_split_batch(batch) for batch in records.to_batches() if batch.num_rows]
    columns = records.drop_columns(["state"]).combine_chunks()

    def column(index: int) -> pa.ChunkedArray:
        joined = pa.chunked_array([part[index] for part in parts], pa.string_view())
        return pa.chunked_array([joined.combine_chunks()])

    split = _with(columns, column(0), column(1), column(2))
    return split.append_column(EVENT_TYPE, event_types(columns.column("topic")))


def event_name(topic: str | None) -> str | None:
    """The event's name in `topic` ('' when it has none, as DuckDB's `regexp_extract`)."""
    if topic is None:
        return None
    found = _EVENT_NAME.search(topic)
    return found[1] if found else ""


def event_types(topics: pa.ChunkedArray) -> pa.Array:
    """Each record's event name, worked out once per distinct topic (a batch has a few)."""
    encoded = _encoded(topics)
    names = [event_name(topic) for topic in encoded.dictionary.to_pylist()]
    return pa.array(names, pa.string()).take(encoded.indices)


def rows_of_types(
    split: pa.Table, groups: Iterable[tuple[str, ...]]
) -> tuple[dict[tuple[str, ...], pa.Table], pa.Table]:
    """For each group of event types (no type in two groups), the rows of `split`
    (`split_envelopes`'s) of those types, and then the rows of none of them, each in their
    order, with the columns `ROW_COLUMNS`. The rows are put in the order of their groups
    once, and each group's are a slice of them; no text is copied (a string view is 16
    bytes, pointing into the same bytes as before)."""
    groups = list(dict.fromkeys(groups))
    columns = split.select(list(ROW_COLUMNS)).combine_chunks()
    encoded = _encoded(columns.column(EVENT_TYPE))
    names = encoded.dictionary.to_pylist()
    group_of = {name: index for index, group in enumerate(groups) for name in group}
    if len(group_of) < sum(len(set(group)) for group in groups):
        raise ValueError(f"an event type in two groups: {groups}")
    # Each row's group (the rest after the last), by its name's index in the dictionary.
    of_name = np.array([group_of.get(name, len(groups)) for name in names] + [len(groups)])
    codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False))
    ranks = of_name[np.where(codes < 0, len(names), codes)]  # a null name: in no group
    order = np.argsort(ranks, kind="stable")
    ordered = pa.Table.from_arrays(
        [_take(column.chunk(0), order) for column in columns.columns], schema=columns.schema
    )
    bounds = np.searchsorted(ranks[order], np.arange(len(groups) + 2))
    parts = [ordered.slice(start, end - start) for start, end in itertools.pairwise(bounds)]
    return dict(zip(groups, parts, strict=False)), parts[-1]


def drop_payloads(split: pa.Table, positions: pa.Array) -> pa.Table:
    """`split` (`split_envelopes`'s) without the payloads of the records at `positions`
    (null there, as the payload of a record whose JSON does not parse)."""
    if not len(positions):
        return split
    payload = split.column(PAYLOAD).combine_chunks()
    storage = payload.storage
    at = np.asarray(split.column("position").to_numpy(), np.int64)
    keep = ~np.isin(at, np.asarray(positions.to_numpy(zero_copy_only=False), np.int64))
    keep &= np.asarray(storage.is_valid().to_numpy(zero_copy_only=False), np.bool_)
    validity = pa.py_buffer(np.packbits(keep, bitorder="little"))
    kept = pa.Array.from_buffers(
        pa.string_view(),
        len(storage),
        [validity, pa.py_buffer(_views_of(storage)), *storage.buffers()[2:]],
        null_count=-1,
    )
    json = pa.ExtensionArray.from_storage(payload.type, kept)
    return split.set_column(split.schema.get_field_index(PAYLOAD), PAYLOAD, json)


def _encoded(strings: pa.ChunkedArray | pa.Array) -> pa.DictionaryArray:
    """`strings` as a dictionary (nulls stay null: their index is null)."""
    if isinstance(strings, pa.ChunkedArray):
        strings = strings.combine_chunks()
    encoded: pa.DictionaryArray = pc.dictionary_encode(strings)
    return encoded


def _take(column: pa.Array, rows: Ints) -> pa.Array:
    """`column`'s values at `rows`; a string view's by its 16-byte view (Arrow's `take`
    has no kernel for string views), pointing into the same bytes."""
    extension = column.type if isinstance(column, pa.ExtensionArray) else None
    storage = column.storage if isinstance(column, pa.ExtensionArray) else column
    if not pa.types.is_string_view(storage.type):
        return column.take(pa.array(rows, pa.int64()))
    valid = np.asarray(storage.is_valid().to_numpy(zero_copy_only=False), np.bool_)[rows]
    taken = pa.Array.from_buffers(
        pa.string_view(),
        len(rows),
        [
            pa.py_buffer(np.packbits(valid, bitorder="little")),
            pa.py_buffer(_views_of(storage)[rows]),
            *storage.buffers()[2:],
        ],
        null_count=-1,
    )
    return taken if extension is None else pa.ExtensionArray.from_storage(extension, taken)


def _views_of(strings: pa.Array) -> npt.NDArray[np.void]:
    """The 16-byte views of a string view array (its own rows, after its offset)."""
    views = np.frombuffer(strings.buffers()[1], _VIEW)
    return views[strings.offset : strings.offset + len(strings)]


def _split_batch(batch: pa.RecordBatch) -> tuple[pa.Array, pa.Array, pa.Array]:
    """(timestamp, payload, fallback) of one record batch."""
    state = batch.column("state")
    count = len(state)
    if not isinstance(state, pa.StringArray) or not pc.sum(pc.binary_length(state)).as_py():
        nothing = pa.nulls(count, pa.string_view())
        return nothing, nothing, state.cast(pa.string_view())
    offsets = np.frombuffer(state.buffers()[1], np.int32, count + 1, state.offset * 4)
    starts, ends = offsets[:-1].astype(np.int64), offsets[1:].astype(np.int64)
    present = np.ones(count, np.bool_)
    if state.null_count:
        present = np.asarray(state.is_valid().to_numpy(zero_copy_only=False), np.bool_)
    buffer = state.buffers()[2]
    text = _writable(buffer)[: ends[-1]]

    id_length = np.asarray(pc.binary_length(batch.column("aggregate_id")).to_numpy(), np.int64)
    version = np.asarray(batch.column("version").to_numpy(), np.int64)
    digits = np.ones(count, np.int64)
    for power in range(1, 19):
        digits += version >= 10**power
    stamp = starts + len(_ID_KEY) + id_length + len(_VERSION_KEY) + digits + len(_TIMESTAMP_KEY)
    shaped = present & (stamp + _TIMESTAMP_MAX < ends)
    shaped &= _matches(text, starts, _ID_KEY, shaped)
    shaped &= _matches(text, stamp - len(_TIMESTAMP_KEY), _TIMESTAMP_KEY, shaped)
    stamp_length = _first(text, stamp, ord('"'), _TIMESTAMP_MAX, shaped)
    shaped &= stamp_length >= 0
    prev = stamp + stamp_length
    hash_at = prev + len(_PREV_KEY) + _HASH_HEX
    quote = hash_at + len(_HASH_KEY) + _HASH_HEX  # the event hash's closing quote
    shaped &= quote + 1 < ends
    shaped &= _matches(text, prev, _PREV_KEY, shaped)
    shaped &= _matches(text, hash_at, _HASH_KEY, shaped)
    after = _byte(text, quote + 1, shaped)
    more = after == ord(",")  # `…",` then the event's fields
    shaped &= (_byte(text, quote, shaped) == ord('"')) & (more | (after == ord("}")))
    shaped &= _byte(text, ends - 1, shaped) == ord("}")
    begin = np.where(more, quote + 1, quote)  # `…"}`: an event without fields of its own
    text[begin[shaped]] = ord("{")
    return (
        _views(buffer, text, stamp, stamp_length, shaped),
        _views(buffer, text, begin, ends - begin, shaped),
        _views(buffer, text, starts, ends - starts, present & ~shaped),
    )


def _with(
    columns: pa.Table,
    timestamp: pa.ChunkedArray,
    payload: pa.ChunkedArray,
    fallback: pa.ChunkedArray,
) -> pa.Table:
    json = pa.chunked_array(
        [
            pa.ExtensionArray.from_storage(pa.json_(pa.string_view()), part)
            for part in payload.chunks
        ],
        pa.json_(pa.string_view()),
    )
    return (
        columns.append_column(TIMESTAMP_TEXT, timestamp)
        .append_column(PAYLOAD, json)
        .append_column(FALLBACK, fallback)
    )


def _writable(buffer: pa.Buffer) -> Bytes:
    """The buffer's bytes, to write into (Arrow's buffers are read-only to Python)."""
    return np.frombuffer((ctypes.c_uint8 * buffer.size).from_address(buffer.address), np.uint8)


def _matches(text: Bytes, at: Ints, key: bytes, rows: Mask) -> Mask:
    """Whether `key` lies at `at` in each of `rows` (False elsewhere)."""
    found = np.zeros(len(at), np.bool_)
    windows = sliding_window_view(text, len(key))
    found[rows] = (windows[at[rows]] == np.frombuffer(key, np.uint8)).all(axis=1)
    return found


def _first(text: Bytes, at: Ints, byte: int, width: int, rows: Mask) -> Ints:
    """How far after `at` `byte` first is, within `width` (-1: not there, or not in `rows`)."""
    distance = np.full(len(at), -1, np.int64)
    hits = sliding_window_view(text, width)[at[rows]] == byte
    distance[rows] = np.where(hits.any(axis=1), hits.argmax(axis=1), -1)
    return distance


def _byte(text: Bytes, at: Ints, rows: Mask) -> Ints:
    values = np.zeros(len(at), np.int64)
    values[rows] = text[at[rows]]
    return values


def _views(buffer: pa.Buffer, text: Bytes, begin: Ints, length: Ints, valid: Mask) -> pa.Array:
    """Arrow string views of `text[begin:begin + length]`, null where not `valid`."""
    count = len(begin)
    views = np.zeros(count, _VIEW)
    length = np.where(valid, length, 0)
    views["length"] = length
    long = length > _INLINE
    views["prefix"][long] = sliding_window_view(text, 4)[begin[long]].view("V4")[:, 0]
    views["offset"][long] = begin[long]
    short = valid & ~long
    if short.any():  # kept inside the view, zero-padded
        reach = begin[short][:, None] + np.arange(_INLINE)  # few rows: index them
        head = text[np.minimum(reach, len(text) - 1)]
        head[np.arange(_INLINE)[None, :] >= length[short][:, None]] = 0
        inline = views.view(np.uint8).reshape(count, 16)
        inline[np.flatnonzero(short)[:, None], np.arange(4, 16)[None, :]] = head
    validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(
        pa.string_view(), count, [validity, pa.py_buffer(views), buffer], null_count=-1
    )
