"""Entry points: the `controlroom` CLI (and, later, the HTTP API). Thin: parse, call, render."""
