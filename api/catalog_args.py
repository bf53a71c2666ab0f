"""The arguments of `controlroom` commands implemented in api/catalog_cli.py; light to import:
`controlroom --help` builds every parser without loading what only a command's work needs."""

from __future__ import annotations

import argparse
from typing import Any

from controlroom.api.commands import Command


def add_route(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "route",
        parents=[common],
        help="which recipe a task routes to",
        description='Which recipe `controlroom run "TEXT"` would run, and why; nothing runs.',
    )
    p.add_argument("text", help='the request, as a writer types it: "Draft scene 4"')
    p.set_defaults(func=Command("controlroom.api.catalog_cli", "cmd_route"))


def add_recipes(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("recipes", parents=[common], help="list, show, validate recipes")
    p.add_argument("action", choices=["list", "show", "validate", "schema"])
    p.add_argument("target", nargs="?", help="recipe id (show) or file/folder (validate)")
    p.set_defaults(func=Command("controlroom.api.catalog_cli", "cmd_recipes"))


def add_models(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("models", parents=[common], help="check which model serves each role")
    p.add_argument("action", choices=["check", "schema"])
    p.set_defaults(func=Command("controlroom.api.catalog_cli", "cmd_models"))


def add_workspace(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "workspace", parents=[common], help="the workspace layout: scenes, outline, canon"
    )
    p.add_argument("action", choices=["check"])
    p.set_defaults(func=Command("controlroom.api.catalog_cli", "cmd_workspace"))
