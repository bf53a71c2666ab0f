"""`controlroom audit`: signed checkpoints of the log, and proof against them.

    controlroom audit keygen --out FILE          a new Ed25519 key (keep it out of the store)
    controlroom audit checkpoint [--out FILE]    sign the log's head, size and Merkle root
    controlroom audit verify --checkpoint FILE   prove nothing up to it changed; list what
                                                 was appended after it

The key comes from CONTROLROOM_CHECKPOINT_KEY (64 hex characters) or
CONTROLROOM_CHECKPOINT_KEY_FILE. Exit codes: 0 verified, 1 tampering found, 64 bad input
(no key, an unreadable checkpoint).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from controlroom.domain.errors import BadInputError
from controlroom.engine.context import Context
from controlroom.projections import checkpoints
from controlroom.projections.checkpoints import Report

EXIT_OK, EXIT_TAMPERED, EXIT_BAD_INPUT = 0, 1, 64
#: Where `audit checkpoint` writes without --out, and where the server keeps its own.
CHECKPOINT_DIR = "checkpoints"


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "audit", parents=[common], help="signed checkpoints of the log; verify against one"
    )
    p.add_argument("action", choices=["checkpoint", "verify", "keygen"])
    p.add_argument("--out", help="checkpoint/keygen: the file to write")
    p.add_argument("--checkpoint", metavar="FILE", help="verify: the checkpoint to prove against")
    return p


def signing_key(ctx: Context) -> Any:
    settings = ctx.settings
    return checkpoints.load_key(settings.checkpoint_key, settings.checkpoint_key_file)


def trusted_key(ctx: Context) -> Ed25519PublicKey | None:
    """This store's checkpoint public key, when a key is configured."""
    settings = ctx.settings
    if not (settings.checkpoint_key or settings.checkpoint_key_file):
        return None
    return signing_key(ctx).public_key()  # type: ignore[no-any-return]


def run_audit(ctx: Context, ns: argparse.Namespace) -> int:
    if ns.action == "keygen":
        if not ns.out:
            raise BadInputError("audit keygen needs --out FILE")
        out = Path(ns.out)
        if out.exists():
            raise BadInputError(f"{out} exists; refusing to overwrite a key")
        out.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(checkpoints.generate_key() + "\n")
        print(f"wrote {out}; use it with CONTROLROOM_CHECKPOINT_KEY_FILE={out}", file=sys.stderr)
        return EXIT_OK
    if ns.action == "checkpoint":
        taken = checkpoints.take(ctx.store, signing_key(ctx))
        out = Path(ns.out) if ns.out else default_path(ctx, taken)
        checkpoints.write(taken, out)
        if ns.json:
            print(json.dumps({k: taken[k] for k in ("size", "position", "root", "taken_at")}))
        print(
            f"checkpoint of {taken['size']} events up to position {taken['position']} "
            f"(root {taken['root'][:16]}…) written to {out}; keep a copy outside this machine",
            file=sys.stderr,
        )
        return EXIT_OK
    if not ns.checkpoint:
        raise BadInputError("audit verify needs --checkpoint FILE")
    checkpoint = checkpoints.read(Path(ns.checkpoint))
    report = checkpoints.verify(ctx.store, checkpoint, trusted=trusted_key(ctx))
    return print_report(report, ns.json, what="the log")


def default_path(ctx: Context, taken: dict[str, Any]) -> Path:
    stamp = str(taken["taken_at"]).replace(":", "").replace("-", "")
    return ctx.workspace.root / ".control-room" / CHECKPOINT_DIR / f"checkpoint-{stamp}.json"


def print_report(report: Report, as_json: bool, what: str) -> int:
    if as_json:
        print(json.dumps(report.as_dict(), indent=2))
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    appended = sum(report.appended.values())
    for problem in report.problems:
        print(f"tampered: {problem}", file=sys.stderr)
    if report.problems:
        print(
            f"verify failed: {what} does not match the checkpoint at position {report.position}",
            file=sys.stderr,
        )
        return EXIT_TAMPERED
    print(
        f"verified: {what} up to position {report.position} ({report.size} events in the "
        f"log then) is unchanged; {appended} event(s) appended since"
        + (
            f" ({', '.join(f'{k}: {v}' for k, v in sorted(report.appended.items()))})"
            if 0 < len(report.appended) <= 10
            else ""
        ),
        file=sys.stderr,
    )
    return EXIT_OK
