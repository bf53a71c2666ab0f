"""The exit codes `controlroom --help` lists (api/cli.py's docstring); 74 is in api/faults.py.
Light to import: the entry point needs them before it knows which command runs."""

from __future__ import annotations

EXIT_DONE, EXIT_FAILED, EXIT_NOT_ROUTABLE, EXIT_INTERRUPTED = 0, 1, 3, 20
#: Seed 004's codes: 3 HUMAN_INPUT (a run waits for a person's answer), 12 PARTIAL_SUCCESS.
EXIT_HUMAN_INPUT, EXIT_PARTIAL = 3, 12
EXIT_BAD_INPUT, EXIT_UNAVAILABLE, EXIT_CONFLICT, EXIT_OUTPUT_CLOSED = 64, 69, 75, 141
