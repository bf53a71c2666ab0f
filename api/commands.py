"""A command named by module and function, imported only when it runs: the parser of every
command is built for `--help` without loading what only one command's work needs."""

from __future__ import annotations

import argparse
import importlib


class Command:
    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, ns: argparse.Namespace) -> int:
        code: int = getattr(importlib.import_module(self.module), self.name)(ns)
        return code

    def __repr__(self) -> str:
        return f"{self.module}:{self.name}"
