"""Lowering of the tile linalg operations (see tile_calls.py for the shared helpers)."""
