"""Model providers behind one port. `offline` is deterministic and needs no network."""
