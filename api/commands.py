"""A command named by module and function, imported only when it runs: the parser of every
command is built for `--help` without loading what only one command's work needs."""

from __future__ import annotations

import argparse
import importlib


class Command:
    """`name(ns)` in `module`; with `with_context`, `name(context, ns)`, the workspace's
    context opened first (api/cli_common.py `open_context`)."""

    def __init__(self, module: str, name: str, *, with_context: bool = False) -> None:
        self.module, self.name, self.with_context = module, name, with_context

    def __call__(self, ns: argparse.Namespace) -> int:
        command = getattr(importlib.import_module(self.module), self.name)
        if not self.with_context:
            code: int = command(ns)
            return code
        from controlroom.api.cli_common import open_context

        code = command(open_context(ns), ns)
        return code

    def __repr__(self) -> str:
        return f"{self.module}:{self.name}"
