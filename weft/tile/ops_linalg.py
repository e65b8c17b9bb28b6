"""The public tile linear-algebra operations: Cholesky factorization, triangular and Cholesky
solves, FFTs (TileOperation objects; lowered by codegen/tile_linalg_calls.py to the C++ of
native/tile/tile_linalg.h).

The in-place forms update the tile named by their ``inout`` argument; weft lowers them to the
out-of-place function and a rebinding of the name, so unlike Warp they are differentiable too.
"""

from __future__ import annotations

from .ops import TileOperation, _op

_FILL = "fill_mode: ``'lower'`` (the default) or ``'upper'``: which triangular factor."

tile_cholesky = _op(
    "tile_cholesky",
    "A, fill_mode='lower'",
    "the Cholesky factor of the symmetric positive-definite 2-D tile `A` (float32 or float64): lower "
    "triangular `L` with `L L^T = A`, or with `fill_mode='upper'` upper triangular `U` with `U^T U = A`; "
    "the other triangle is zero. Only `A`'s lower (upper) triangle is read, so gradients land there; "
    "a matrix that is not positive definite gives NaNs.",
    args=("A: a square 2-D tile of float32 or float64.", _FILL),
    returns="The triangular factor, a tile of ``A``'s shape and type.",
    example="L = wp.tile_cholesky(A)",
)
tile_cholesky_inplace = _op(
    "tile_cholesky_inplace",
    "A, fill_mode='lower'",
    "`A` replaced by its Cholesky factor (see `tile_cholesky`), the other triangle set to zero.",
    inout=((0, "A"),),
    args=("A: a square 2-D float32 or float64 tile (updated in place).", _FILL),
    example="wp.tile_cholesky_inplace(A)",
)
tile_cholesky_solve = _op(
    "tile_cholesky_solve",
    "L, y, fill_mode='lower'",
    "`x` with `A x = y`, given the Cholesky factor `L` of `A` (`L L^T = A`; with `fill_mode='upper'`, "
    "`L` is `U` with `U^T U = A`); `y` is a 1-D tile of `L`'s size or a 2-D tile with as many rows.",
    args=("L: the factor made by ``wp.tile_cholesky``.", "y: the right-hand side, a 1-D tile or a 2-D tile of columns.", _FILL),
    returns="``x``, a tile of ``y``'s shape and type.",
    example="x = wp.tile_cholesky_solve(L, y)",
)
tile_cholesky_solve_inplace = _op(
    "tile_cholesky_solve_inplace",
    "L, y, fill_mode='lower'",
    "`y` replaced by the solution `x` of `A x = y` (see `tile_cholesky_solve`).",
    inout=((1, "y"),),
    args=("L: the factor made by ``wp.tile_cholesky``.", "y: the right-hand side (updated in place).", _FILL),
    example="wp.tile_cholesky_solve_inplace(L, y)",
)
tile_lower_solve = _op(
    "tile_lower_solve",
    "L, y",
    "`z` with `L z = y` by forward substitution, `L` a square non-singular lower-triangular tile (its "
    "strictly upper triangle is not read), `y` a 1-D tile or a 2-D tile of right-hand-side columns.",
    args=("L: a square lower-triangular 2-D tile.", "y: the right-hand side, a 1-D tile or a 2-D tile of columns."),
    returns="``z``, a tile of ``y``'s shape and type.",
    example="z = wp.tile_lower_solve(L, y)",
)
tile_lower_solve_inplace = _op(
    "tile_lower_solve_inplace", "L, y", "`y` replaced by the solution `z` of `L z = y` (see `tile_lower_solve`).", inout=((1, "y"),),
    args=("L: a square lower-triangular 2-D tile.", "y: the right-hand side (updated in place)."),
    example="wp.tile_lower_solve_inplace(L, y)",
)
tile_upper_solve = _op(
    "tile_upper_solve",
    "U, z",
    "`x` with `U x = z` by back substitution, `U` a square non-singular upper-triangular tile (its "
    "strictly lower triangle is not read), `z` a 1-D tile or a 2-D tile of right-hand-side columns.",
    args=("U: a square upper-triangular 2-D tile.", "z: the right-hand side, a 1-D tile or a 2-D tile of columns."),
    returns="``x``, a tile of ``z``'s shape and type.",
    example="x = wp.tile_upper_solve(U, z)",
)
tile_upper_solve_inplace = _op(
    "tile_upper_solve_inplace", "U, z", "`z` replaced by the solution `x` of `U x = z` (see `tile_upper_solve`).", inout=((1, "z"),),
    args=("U: a square upper-triangular 2-D tile.", "z: the right-hand side (updated in place)."),
    example="wp.tile_upper_solve_inplace(U, z)",
)
tile_fft = _op(
    "tile_fft",
    "inout",
    "the forward FFT (exponent sign -1, unnormalized, NumPy's `fft`) of each line along the last dimension "
    "of a tile of at least 2 dimensions of `vec2f` / `vec2d` (complex numbers: real, imaginary), in place.",
    inout=((0, "inout"),),
    args=("inout: a tile of ``vec2f`` or ``vec2d`` with at least 2 dimensions (updated in place).",),
    example="wp.tile_fft(signal)",
)
tile_ifft = _op(
    "tile_ifft",
    "inout",
    "the inverse FFT along the last dimension, unnormalized (`tile_fft` then `tile_ifft` scales by the size "
    "of that dimension), of a tile of `vec2f` / `vec2d`, in place.",
    inout=((0, "inout"),),
    args=("inout: a tile of ``vec2f`` or ``vec2d`` with at least 2 dimensions (updated in place).",),
    example="wp.tile_ifft(spectrum)",
)

__all__ = [name for name, v in dict(globals()).items() if isinstance(v, TileOperation)]
