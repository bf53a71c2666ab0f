"""`controlroom audit`: signed checkpoints of the log, and proof against them.

    controlroom audit keygen --out FILE          a new Ed25519 key (keep it out of the store)
    controlroom audit export-key [--out FILE]    its public half (PEM) and fingerprint: what
                                                 a verifier keeps
    controlroom audit checkpoint [--out FILE]    sign the log's head, size and Merkle root
    controlroom audit verify --checkpoint FILE   prove nothing up to it changed; list what
        [--public-key FILE | --key-fingerprint SHA256:…]   was appended after it

The signing key comes from CONTROLROOM_CHECKPOINT_KEY (64 hex characters) or
CONTROLROOM_CHECKPOINT_KEY_FILE. A checkpoint carries its public key, so verifying proves
something only against a key the verifier trusts: --public-key / --key-fingerprint, else
`$CONTROLROOM_HOME/checkpoint-key.pub`, else the public half of the configured signing key.
Without one, verify checks consistency and says it proved nothing. Exit codes: 0 verified
(or consistent, unproven), 1 tampering found or signed by another key than the trusted
one, 64 bad input (no key, an unreadable checkpoint or key).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controlroom.api.audit_args import add_parser, add_trust_arguments
from controlroom.domain.errors import BadInputError
from controlroom.engine.context import Context
from controlroom.eventstore.store import EventStore
from controlroom.projections import checkpoints
from controlroom.projections.audit import Uncovered, uncovered
from controlroom.projections.checkpoints import CheckpointError, Report, TrustedKey

EXIT_OK, EXIT_TAMPERED, EXIT_BAD_INPUT = 0, 1, 64
#: Where `audit checkpoint` writes without --out, and where the server keeps its own.
CHECKPOINT_DIR = "checkpoints"
#: The trusted public key a verifier installs in its user layer (`$CONTROLROOM_HOME`).
TRUSTED_KEY_NAME = "checkpoint-key.pub"
#: How many streams a report names one by one.
LISTED = 10
# The command's arguments live apart (`audit_args`), so building the CLI's parser does not
# import the cryptography this module needs.
__all__ = ["add_parser", "add_trust_arguments"]


def signing_key(ctx: Context) -> Ed25519PrivateKey:
    settings = ctx.settings
    return checkpoints.load_key(settings.checkpoint_key, settings.checkpoint_key_file)


def trusted_key_path() -> Path:
    """`$CONTROLROOM_HOME/checkpoint-key.pub` (the user layer, as for prompts)."""
    base = os.environ.get("CONTROLROOM_HOME")
    return (Path(base) if base else Path.home() / ".control-room") / TRUSTED_KEY_NAME


def trusted_key(ctx: Context, ns: argparse.Namespace) -> TrustedKey | None:
    """The key a checkpoint must be signed with: the one given on the command line, else
    the configured ones (installed in the user layer, the signing key's public half), which
    must agree; None when there is none."""
    given = _given_key(ns)
    if given is not None:
        return given
    configured: list[TrustedKey] = []
    installed = trusted_key_path()
    if installed.is_file():
        configured.append(TrustedKey.of(checkpoints.load_public_key(installed), str(installed)))
    settings = ctx.settings
    if settings.checkpoint_key or settings.checkpoint_key_file:
        where = settings.checkpoint_key_file or checkpoints.KEY_VAR
        source = f"the signing key's public half ({where})"
        configured.append(TrustedKey.of(signing_key(ctx).public_key(), source))
    if len({k.fingerprint for k in configured}) > 1:
        raise CheckpointError(
            "the configured keys disagree: "
            + "; ".join(f"{k.source} is {k.fingerprint}" for k in configured)
            + "; give the one you trust with --public-key FILE or --key-fingerprint"
        )
    return configured[0] if configured else None


def _given_key(ns: argparse.Namespace) -> TrustedKey | None:
    from_file = from_print = None
    if ns.public_key:
        key = checkpoints.load_public_key(Path(ns.public_key))
        from_file = TrustedKey.of(key, f"--public-key {ns.public_key}")
    if ns.key_fingerprint:
        from_print = TrustedKey(
            checkpoints.parse_fingerprint(ns.key_fingerprint), "--key-fingerprint"
        )
    if from_file and from_print and from_file.fingerprint != from_print.fingerprint:
        raise CheckpointError(
            f"--public-key {ns.public_key} is {from_file.fingerprint}, not "
            f"{from_print.fingerprint} (--key-fingerprint): give the key you trust once"
        )
    return from_file or from_print


def run_audit(ctx: Context, ns: argparse.Namespace) -> int:
    if ns.action != "verify" and (ns.public_key or ns.key_fingerprint):
        raise BadInputError("--public-key and --key-fingerprint go with audit verify")
    if ns.action == "keygen":
        return _keygen(ns)
    if ns.action == "export-key":
        return _export_key(ctx, ns)
    if ns.action == "checkpoint":
        key = signing_key(ctx)
        taken = checkpoints.take(ctx.store, key)
        out = Path(ns.out) if ns.out else default_path(ctx, taken)
        checkpoints.write(taken, out)
        signed_by = checkpoints.fingerprint(key.public_key())
        if ns.json:
            fields = {k: taken[k] for k in ("size", "position", "root", "taken_at")}
            print(json.dumps({**fields, "key_fingerprint": signed_by}))
        print(
            f"checkpoint of {taken['size']} events up to position {taken['position']} "
            f"(root {taken['root'][:16]}…) signed by {signed_by}, written to {out}; keep a "
            "copy outside this machine, and verify it with --key-fingerprint or the key "
            "`audit export-key` writes",
            file=sys.stderr,
        )
        return EXIT_OK
    if not ns.checkpoint:
        raise BadInputError("audit verify needs --checkpoint FILE")
    checkpoint = checkpoints.read(Path(ns.checkpoint))
    report = checkpoints.verify(ctx.store, checkpoint, trusted=trusted_key(ctx, ns))
    return print_report(report, ns.json, what="the log")


def _keygen(ns: argparse.Namespace) -> int:
    if not ns.out:
        raise BadInputError("audit keygen needs --out FILE")
    out = Path(ns.out)
    if out.exists():
        raise BadInputError(f"{out} exists; refusing to overwrite a key")
    out.parent.mkdir(parents=True, exist_ok=True)
    seed = checkpoints.generate_key()
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(seed + "\n")
    signed_by = checkpoints.fingerprint(checkpoints.load_key(seed).public_key())
    print(
        f"wrote {out} ({signed_by}); use it with CONTROLROOM_CHECKPOINT_KEY_FILE={out}, and "
        "give verifiers its public half (`controlroom audit export-key`)",
        file=sys.stderr,
    )
    return EXIT_OK


def _export_key(ctx: Context, ns: argparse.Namespace) -> int:
    """The signing key's public half: what a verifier keeps, away from the store."""
    key = signing_key(ctx)
    pem, signed_by = checkpoints.public_pem(key), checkpoints.fingerprint(key.public_key())
    if ns.out:
        out = Path(ns.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_suffix(out.suffix + ".tmp")
        partial.write_text(pem, encoding="utf-8")
        partial.replace(out)
    if ns.json:
        print(json.dumps({"key_fingerprint": signed_by, "public_key_pem": pem}))
    elif not ns.out:
        print(pem, end="")
    print(
        f"checkpoint key {signed_by}{f' written to {ns.out}' if ns.out else ''}; verify with "
        f"--public-key FILE or --key-fingerprint {signed_by}, or install the file as "
        f"{trusted_key_path()} where you verify",
        file=sys.stderr,
    )
    return EXIT_OK


def default_path(ctx: Context, taken: dict[str, Any]) -> Path:
    stamp = str(taken["taken_at"]).replace(":", "").replace("-", "")
    return ctx.workspace.root / ".control-room" / CHECKPOINT_DIR / f"checkpoint-{stamp}.json"


def print_report(report: Report, as_json: bool, what: str) -> int:
    if as_json:
        print(json.dumps(report.as_dict(), indent=2))
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    for problem in report.problems:
        print(f"tampered: {problem}", file=sys.stderr)
    if report.problems:
        trusted = report.trusted_key
        if trusted is not None and report.signed_by != trusted.fingerprint:
            verdict = (
                f"the checkpoint is not signed by the key you trust ({trusted.fingerprint}): "
                f"nothing it says about {what} can be relied on"
            )
        else:
            verdict = f"{what} does not match the checkpoint at position {report.position}"
        print(f"verify failed: {verdict}", file=sys.stderr)
        return EXIT_TAMPERED
    appended = sum(tail.count for tail in report.appended.values())
    span = f"{what} up to position {report.position} ({report.size} events in the log then)"
    if report.trusted_key is not None:
        print(
            f"verified: {span} is unchanged, against a checkpoint signed by the key you "
            f"trust ({report.trusted_key.fingerprint}, {report.trusted_key.source}); "
            f"{appended} event(s) appended since",
            file=sys.stderr,
        )
    else:
        print(
            f"consistent, not proven: {span} matches the checkpoint, whose signer no trusted "
            f"key vouches for; {appended} event(s) appended since",
            file=sys.stderr,
        )
    print_uncovered(list(report.appended.values()))
    return EXIT_OK


def print_uncovered(tails: list[Uncovered]) -> None:
    """Name the events no checkpoint covers, a few streams one by one."""
    ordered = sorted(tails, key=lambda t: (not t.outcome_unproven, t.stream_id))
    for tail in ordered[:LISTED]:
        print(f"not covered: {tail.describe()}", file=sys.stderr)
    if len(ordered) > LISTED:
        rest = sum(t.count for t in ordered[LISTED:])
        print(
            f"not covered: {rest} more event(s) in {len(ordered) - LISTED} more stream(s) "
            "(--json lists them all)",
            file=sys.stderr,
        )


def print_unanchored(store: EventStore, run_id: str) -> None:
    """What `replay RUN --verify` without a checkpoint cannot prove."""
    tail = uncovered(store, run_id)
    if tail is not None:
        print_uncovered([tail])
    print(
        "note: without a checkpoint this cannot prove that no events were removed from the "
        "run's end, or that it was not rewritten with every hash after the change "
        "recomputed; take one with `controlroom audit checkpoint` and verify with "
        "--checkpoint FILE --public-key FILE",
        file=sys.stderr,
    )
