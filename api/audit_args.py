"""The `audit` command's arguments (and the trusted-key ones `replay` shares), apart from
`api/audit_cli.py` so that building the parser imports no cryptography."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "audit", parents=[common], help="signed checkpoints of the log; verify against one"
    )
    p.add_argument("action", choices=["checkpoint", "verify", "keygen", "export-key"])
    p.add_argument("--out", help="checkpoint/keygen/export-key: the file to write")
    p.add_argument("--checkpoint", metavar="FILE", help="verify: the checkpoint to prove against")
    add_trust_arguments(p)
    return p


def add_trust_arguments(p: argparse.ArgumentParser) -> None:
    """The key a checkpoint must be signed with (`audit verify`, `replay --checkpoint`)."""
    p.add_argument(
        "--public-key",
        metavar="FILE",
        help="with a checkpoint: the PEM public key you trust (audit export-key writes it)",
    )
    p.add_argument(
        "--key-fingerprint",
        metavar="SHA256:…",
        help="with a checkpoint: the fingerprint of the key you trust",
    )
