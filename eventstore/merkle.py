"""A Merkle tree over the log: one leaf per stored record, in global position order.

The per-event hash chain proves a run's events agree with each other; it cannot prove that
none were dropped from the end, or that someone rewrote an event and recomputed every hash
after it. A root over the whole log, signed and kept outside the store (a checkpoint),
can: any change, removal, reordering or insertion below the checkpoint changes the root.

Leaves hash the record exactly as stored (position, aggregate id, version, topic, bytes),
so nothing needs decoding: a damaged record is still covered. The tree is RFC 6962's
(leaves prefixed 0x00, nodes 0x01), so a lone leaf can never pose as a node.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from eventsourcing.persistence import Notification

from controlroom.eventstore.store import EventStore

PAGE = 1000


def leaf_hash(record: Notification) -> bytes:
    header = (
        f"{record.id}\n{record.originator_id}\n{record.originator_version}\n{record.topic}\n"
    ).encode()
    return hashlib.sha256(b"\x00" + header + record.state).digest()


def merkle_root(leaves: Iterable[bytes]) -> bytes:
    """RFC 6962's Merkle tree hash, built bottom-up (the split at the largest power of two
    below n is what pairing left to right and promoting an odd last node produces)."""
    level = list(leaves)
    if not level:
        return hashlib.sha256(b"").digest()
    while len(level) > 1:
        paired = [
            hashlib.sha256(b"\x01" + level[i] + level[i + 1]).digest()
            for i in range(0, len(level) - 1, 2)
        ]
        if len(level) % 2:
            paired.append(level[-1])
        level = paired
    return level[0]


@dataclass
class StreamDigest:
    """One aggregate's records folded in log order: how many, their hash, where they end."""

    count: int = 0
    digest: str = ""
    last_position: int = 0
    last_topic: str = ""

    def add(self, record: Notification, leaf: bytes) -> None:
        self.count += 1
        self.digest = hashlib.sha256(bytes.fromhex(self.digest) + leaf).hexdigest()
        self.last_position = record.id
        self.last_topic = record.topic


@dataclass
class LogDigest:
    """The whole log up to a position: its size, root and one digest per aggregate."""

    size: int = 0
    position: int = 0
    root: str = ""
    streams: dict[str, StreamDigest] = field(default_factory=dict)


def records(store: EventStore, after: int = 0, upto: int | None = None) -> Iterator[Notification]:
    """Every stored record after `after` (and up to `upto`), raw, in position order."""
    cursor = after
    while True:
        page = store.recorder.select_notifications(
            start=cursor, limit=PAGE, stop=upto, inclusive_of_start=False
        )
        yield from page
        if len(page) < PAGE:
            return
        cursor = page[-1].id


def digest_log(store: EventStore, upto: int | None = None) -> LogDigest:
    """Hash the log up to position `upto` (all of it when None)."""
    result = LogDigest()
    leaves: list[bytes] = []
    for record in records(store, 0, upto):
        leaf = leaf_hash(record)
        leaves.append(leaf)
        result.streams.setdefault(str(record.originator_id), StreamDigest()).add(record, leaf)
        result.position = record.id
    result.size = len(leaves)
    result.root = merkle_root(leaves).hex()
    return result
