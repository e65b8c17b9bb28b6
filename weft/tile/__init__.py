"""The tile model (Warp's block-level programming): tile types, ``launch_tiled`` and the public
tile operations (``wp.tile_load``, ``wp.tile_matmul``...). The operations are lowered by
``codegen/tile_calls.py`` to the C++ of ``native/tile/``."""
