"""Start-up: `controlroom --help` builds every command's parser without importing what only
a command's work needs (numerical, cryptographic, database and vendor libraries)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = (
    "numpy",
    "blingfire",
    "psycopg",
    "cryptography",
    "duckdb",
    "pyarrow",
    "openai",
    "anthropic",
    "uvicorn",
)

PROBE = f"""
import contextlib, io, sys
from controlroom.api.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main(["--help"])
print(",".join(sorted(m for m in {HEAVY!r} if m in sys.modules)))
"""


def test_help_imports_none_of_the_heavy_libraries() -> None:
    probe = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=False
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == ""
