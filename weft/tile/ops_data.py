"""The public tile data operations (TileOperation objects; lowered by codegen/tile_data_calls.py)."""

__all__: list = []
