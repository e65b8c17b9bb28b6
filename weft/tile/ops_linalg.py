"""The public tile linalg operations (TileOperation objects; lowered by codegen/tile_linalg_calls.py)."""

__all__: list = []
