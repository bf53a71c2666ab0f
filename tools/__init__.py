"""Phase A tools: deterministic text analysis confined to the workspace."""
