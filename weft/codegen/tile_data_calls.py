"""Lowering of the tile data operations (see tile_calls.py for the shared helpers)."""
