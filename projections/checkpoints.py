"""Signed checkpoints: the log's Merkle root, size and per-run digests, signed with an
Ed25519 key that never enters the store, and kept somewhere else.

Verifying a store against a checkpoint proves that no record up to it was changed,
removed, reordered, moved or re-chained, and lists what was appended after it (events
appended to a run that had completed or was cancelled are problems: such a run never
gains events). Without a checkpoint the hash chain alone cannot see a run cut short
at its end, or rewritten with every hash after the change recomputed.

A checkpoint carries its own public key, so its signature alone proves nothing against
someone who can rewrite the store: they can sign a checkpoint of their own. Only a key the
operator keeps elsewhere (`TrustedKey`: a public key file or a fingerprint) tells theirs
from a forger's; verifying without one says it proved nothing.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from controlroom.domain.errors import BadInputError
from controlroom.domain.events import parse_topic
from controlroom.domain.run_events import RunCancelled, RunCompleted
from controlroom.eventstore.merkle import LogDigest, StreamDigest, digest_log, records
from controlroom.eventstore.store import EventStore
from controlroom.projections.audit import Uncovered

FORMAT = "controlroom-checkpoint/1"
KEY_VAR = "CONTROLROOM_CHECKPOINT_KEY"
KEY_FILE_VAR = "CONTROLROOM_CHECKPOINT_KEY_FILE"
FINGERPRINT_PREFIX = "SHA256:"
#: A run that ended so never gains another event (a failed run can be retried).
SEALED_NAMES = frozenset({RunCompleted.type_name, RunCancelled.type_name})


class CheckpointError(BadInputError):
    """A checkpoint or key that cannot be used (unreadable, malformed, badly signed)."""


def generate_key() -> str:
    """A new signing key as 64 hex characters (its 32-byte seed)."""
    return Ed25519PrivateKey.generate().private_bytes_raw().hex()


def load_key(value: str | None = None, path: str | None = None) -> Ed25519PrivateKey:
    """The signing key from the environment's hex seed, or a file holding a hex seed or a
    PEM (PKCS #8) private key."""
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise CheckpointError(
                f"cannot read the checkpoint key {path}: {exc.strerror}"
            ) from None
        if text.startswith("-----BEGIN"):
            try:
                key = serialization.load_pem_private_key(text.encode(), password=None)
            except ValueError as exc:
                raise CheckpointError(f"{path} is not a PEM private key: {exc}") from None
            if not isinstance(key, Ed25519PrivateKey):
                raise CheckpointError(f"{path} holds a {type(key).__name__}, not an Ed25519 key")
            return key
        value, source = text, path
    else:
        source = KEY_VAR
    if not value:
        raise CheckpointError(
            f"no checkpoint key: set {KEY_VAR} (64 hex characters) or {KEY_FILE_VAR}; "
            "make one with `controlroom audit keygen --out FILE`"
        )
    try:
        seed = bytes.fromhex(value.strip())
        if len(seed) != 32:
            raise ValueError
        return Ed25519PrivateKey.from_private_bytes(seed)
    except ValueError:
        raise CheckpointError(f"{source}: an Ed25519 key is 64 hex characters") from None


def public_hex(key: Ed25519PrivateKey) -> str:
    return key.public_key().public_bytes_raw().hex()


def public_pem(key: Ed25519PrivateKey) -> str:
    """The signing key's public half, as the PEM file a verifier keeps."""
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def fingerprint(key: Ed25519PublicKey) -> str:
    """`SHA256:` and the unpadded base64 of the SHA-256 of the 32-byte public key (shaped
    like an OpenSSH fingerprint, though OpenSSH hashes its own encoding of a key)."""
    digest = hashlib.sha256(key.public_bytes_raw()).digest()
    return FINGERPRINT_PREFIX + base64.b64encode(digest).decode().rstrip("=")


def parse_fingerprint(text: str) -> str:
    """A fingerprint as `fingerprint` writes it, or a clear refusal."""
    value = text.strip()
    encoded = value.removeprefix(FINGERPRINT_PREFIX)
    try:
        if encoded == value:
            raise ValueError
        digest = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
        if len(digest) != 32:
            raise ValueError
    except ValueError:
        raise CheckpointError(
            f"'{value}' is not a key fingerprint: it reads {FINGERPRINT_PREFIX} and 43 base64 "
            "characters (`controlroom audit export-key` prints it)"
        ) from None
    return FINGERPRINT_PREFIX + base64.b64encode(digest).decode().rstrip("=")


def load_public_key(path: Path) -> Ed25519PublicKey:
    """A verifier's trusted key: a PEM public key file (`controlroom audit export-key`)."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not text"
        raise CheckpointError(f"cannot read the public key {path}: {reason}") from None
    if "PRIVATE KEY" in text.split("\n", 1)[0]:
        raise CheckpointError(
            f"{path} holds a private key; a verifier needs only its public half "
            "(`controlroom audit export-key --out FILE`)"
        )
    try:
        key = serialization.load_pem_public_key(text.encode())
    except ValueError:
        raise CheckpointError(
            f"{path} is not a PEM public key (`audit export-key --out FILE` writes one)"
        ) from None
    if not isinstance(key, Ed25519PublicKey):
        raise CheckpointError(f"{path} holds a {type(key).__name__}, not an Ed25519 key")
    return key


@dataclass(frozen=True)
class TrustedKey:
    """The key checkpoints must be signed with, by fingerprint, and where the verifier got
    it (a file it keeps, a fingerprint it was given, its own signing key)."""

    fingerprint: str
    source: str

    @classmethod
    def of(cls, key: Ed25519PublicKey, source: str) -> TrustedKey:
        return cls(fingerprint(key), source)


def _canonical(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def take(store: EventStore, key: Ed25519PrivateKey, now: datetime | None = None) -> dict[str, Any]:
    """A signed checkpoint of the log as it stands."""
    log = digest_log(store)
    body: dict[str, Any] = {
        "format": FORMAT,
        "taken_at": (now or datetime.now(UTC)).isoformat().replace("+00:00", "Z"),
        "size": log.size,
        "position": log.position,
        "root": log.root,
        "streams": {sid: asdict(d) for sid, d in sorted(log.streams.items())},
        "public_key": public_hex(key),
    }
    return {**body, "signature": key.sign(_canonical(body)).hex()}


def read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CheckpointError(f"cannot read the checkpoint {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise CheckpointError(f"{path} is not a checkpoint (not JSON: {exc})") from None
    needed = {"format", "size", "position", "root", "streams", "public_key", "signature"}
    if not isinstance(data, dict) or data.get("format") != FORMAT or needed - set(data):
        raise CheckpointError(f"{path} is not a {FORMAT} file")
    return data


def write(checkpoint: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(path.suffix + ".tmp")
    partial.write_text(json.dumps(checkpoint, indent=1) + "\n", encoding="utf-8")
    partial.replace(path)


@dataclass
class Report:
    """What a store shows against a checkpoint: problems (tampering), the events appended
    after it (which it does not cover), and whose key signed it."""

    position: int
    size: int
    #: The fingerprint of the key the checkpoint carries ("" when it carries none usable).
    signed_by: str = ""
    #: The key the signature had to match; None: only the key the checkpoint carries.
    trusted_key: TrustedKey | None = None
    problems: list[str] = field(default_factory=list)
    appended: dict[str, Uncovered] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def proven(self) -> bool:
        """Unchanged up to the checkpoint, and the checkpoint signed by a trusted key."""
        return self.ok and self.trusted_key is not None

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "proven": self.proven, **asdict(self)}


def check_signature(
    checkpoint: dict[str, Any], trusted: TrustedKey | None
) -> tuple[str, list[str]]:
    """The fingerprint of the key the checkpoint carries, and what is wrong with its
    signature: altered content, or a key other than the trusted one."""
    body = {k: v for k, v in checkpoint.items() if k != "signature"}
    try:
        embedded = Ed25519PublicKey.from_public_bytes(bytes.fromhex(checkpoint["public_key"]))
    except (ValueError, TypeError):
        return "", ["the checkpoint carries no usable public key: it was altered"]
    signed_by = fingerprint(embedded)
    try:
        embedded.verify(bytes.fromhex(checkpoint["signature"]), _canonical(body))
    except (ValueError, TypeError, InvalidSignature):
        return signed_by, ["the checkpoint's signature does not match its content: it was altered"]
    if trusted is not None and trusted.fingerprint != signed_by:
        return signed_by, [
            f"the checkpoint is signed by another key than the one you trust: {signed_by}, "
            f"not {trusted.fingerprint} ({trusted.source}); whoever signed it, it is not "
            "yours (a checkpoint re-signed after the store was rewritten, or another store's)"
        ]
    return signed_by, []


def verify(
    store: EventStore,
    checkpoint: dict[str, Any],
    *,
    trusted: TrustedKey | None = None,
    run_id: str | None = None,
) -> Report:
    """Compare the store with a checkpoint (all of it, or one run's stream)."""
    position, size = int(checkpoint["position"]), int(checkpoint["size"])
    report = Report(position, size, trusted_key=trusted)
    report.signed_by, problems = check_signature(checkpoint, trusted)
    report.problems.extend(problems)
    if trusted is None:
        report.notes.append(
            "not proven: no trusted key was given, so the signature was checked only "
            f"against the key the checkpoint carries ({report.signed_by or 'none'}); anyone "
            "who can rewrite the store can sign a checkpoint of it with a key of their own, "
            "so this proves nothing against them. Verify with the key you keep: --public-key "
            f"FILE or --key-fingerprint {FINGERPRINT_PREFIX}… (`controlroom audit export-key` "
            "prints both where the signing key is)"
        )
    now = digest_log(store, upto=position)
    then = {sid: StreamDigest(**d) for sid, d in checkpoint["streams"].items()}
    if run_id is None:
        _compare_log(report, now, then, checkpoint)
    else:
        _compare_stream(report, run_id, now.streams.get(run_id), then.get(run_id))
    _appended(report, store, then, run_id)
    return report


def _compare_log(
    report: Report, now: LogDigest, then: dict[str, StreamDigest], checkpoint: dict[str, Any]
) -> None:
    for sid in sorted(set(then) | set(now.streams)):
        _compare_stream(report, sid, now.streams.get(sid), then.get(sid))
    if now.size != report.size:
        report.problems.append(
            f"the log held {report.size} events up to position {report.position}; "
            f"it now holds {now.size} there"
        )
    if now.root != checkpoint["root"] and not report.problems:
        report.problems.append(
            f"the log's Merkle root up to position {report.position} differs: events were "
            "reordered or moved between positions"
        )


def _compare_stream(
    report: Report, sid: str, now: StreamDigest | None, then: StreamDigest | None
) -> None:
    if then is None and now is None:
        report.problems.append(f"{sid} was not in the log at the checkpoint")
    elif then is None:
        report.problems.append(
            f"{sid}: {now.count if now else 0} event(s) inserted at or below position "
            f"{report.position}, where the checkpoint had none"
        )
    elif now is None:
        report.problems.append(f"{sid}: all {then.count} event(s) removed")
    elif now.count < then.count:
        report.problems.append(
            f"{sid}: {then.count - now.count} event(s) removed (had {then.count}, "
            f"now {now.count} up to position {report.position})"
        )
    elif now.count > then.count:
        report.problems.append(
            f"{sid}: {now.count - then.count} event(s) inserted at or below position "
            f"{report.position}"
        )
    elif now.digest != then.digest:
        report.problems.append(
            f"{sid}: its events were changed, reordered, moved or re-chained since the checkpoint"
        )


def _appended(
    report: Report, store: EventStore, then: dict[str, StreamDigest], run_id: str | None
) -> None:
    for record in records(store, after=report.position):
        sid = str(record.originator_id)
        if run_id is not None and sid != run_id:
            continue
        name = parse_topic(record.topic)[0]
        seen = report.appended.get(sid)
        if seen is None:
            report.appended[sid] = Uncovered(
                sid,
                record.originator_version,
                record.originator_version,
                name,
                after_position=report.position,
                first_position=record.id,
                last_position=record.id,
            )
        else:
            seen.add(record.originator_version, name, record.id)
    for sid, tail in report.appended.items():
        before = then.get(sid)
        if before is not None and parse_topic(before.last_topic)[0] in SEALED_NAMES:
            report.problems.append(
                f"{sid}: {tail.count} event(s) appended after the run had ended "
                f"({parse_topic(before.last_topic)[0]}): a completed or cancelled run never "
                "gains events"
            )
