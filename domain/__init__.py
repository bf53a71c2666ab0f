"""Pure domain code: aggregates, events, recipes, `$ref` resolution, DoD, routing.

Nothing in this package performs I/O, reads the clock or generates random ids:
the engine computes those and passes them in.
"""
