"""Bundled recipe JSON files, their JSON Schema, and the layered catalog that loads them."""
