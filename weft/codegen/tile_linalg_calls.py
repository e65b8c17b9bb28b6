"""Lowering of the tile linear-algebra operations (``wp.tile_cholesky``, the triangular and
Cholesky solves, ``wp.tile_fft`` / ``wp.tile_ifft``); see tile_calls.py for the shared helpers.

Each checks its tiles' shapes and dtypes as Warp does and emits a call of the function of
``native/tile/tile_linalg.h``, whose template arguments carry the build-time choices (fill mode,
transform direction). The in-place forms emit the same call and rebind the updated tile's name.
"""

from __future__ import annotations

import typing

from .. import types as wt
from .. import vector_types as vt
from ..tile import ops_linalg as ops
from .errors import WarpCodegenTypeError, WarpCodegenValueError
from .special_calls import register_special
from .tile_args import _REQUIRED, call_name, _bind, _emit, _static, _tile_arg
from .tile_views import _rebind

if typing.TYPE_CHECKING:
    from .frontend import Lowerer

_FLOATS = (wt.float32, wt.float64)


def _square(lw: Lowerer, x, what: str, node):
    """The tile argument ``x``: a square 2-D tile of float32 or float64."""
    t = _tile_arg(lw, x, what, node)
    shape = t.type.shape
    if len(shape) != 2 or shape[0] != shape[1] or shape[0] == 0:
        raise lw.error(f"{call_name(node)}(): '{what}' must be a square 2-D tile, got shape {shape}", node, WarpCodegenValueError)
    if t.type.dtype not in _FLOATS:
        raise lw.error(
            f"{call_name(node)}(): '{what}' must be a tile of float32 or float64, got {wt.type_repr(t.type.dtype)}",
            node,
            WarpCodegenTypeError,
        )
    return t


def _rhs(lw: Lowerer, x, what: str, m, node):
    """The right-hand side ``x`` of a solve with the square tile ``m``: a 1-D or 2-D tile of
    ``m``'s dtype with as many rows as ``m``."""
    t = _tile_arg(lw, x, what, node)
    if t.type.ndim not in (1, 2):
        raise lw.error(f"{call_name(node)}(): '{what}' must be a 1-D or 2-D tile, got shape {t.type.shape}", node, WarpCodegenTypeError)
    if t.type.shape[0] != m.type.shape[0]:
        raise lw.error(
            f"{call_name(node)}(): '{what}' has {t.type.shape[0]} rows for a {m.type.shape[0]} x {m.type.shape[0]} matrix",
            node,
            WarpCodegenValueError,
        )
    if t.type.dtype != m.type.dtype:
        raise lw.error(
            f"{call_name(node)}(): the tiles must have one dtype, got {wt.type_repr(m.type.dtype)} and {wt.type_repr(t.type.dtype)}",
            node,
            WarpCodegenTypeError,
        )
    return t


def _upper(lw: Lowerer, x, node) -> bool:
    """Whether the build-time ``fill_mode`` argument is ``"upper"`` (``"lower"`` otherwise)."""
    mode = _static(lw, x, "fill_mode", node)
    if mode not in ("lower", "upper"):
        raise lw.error(f"{call_name(node)}(): fill_mode must be \"lower\" or \"upper\", got {mode!r}", node, WarpCodegenValueError)
    return mode == "upper"


def _bool(flag: bool) -> str:
    return "true" if flag else "false"


def _result(lw: Lowerer, target_node, value, inplace: bool):
    """The call's value; for an in-place form, none: the tile named by ``target_node`` is
    rebound to ``value`` instead (Warp updates it in place)."""
    if not inplace:
        return value
    _rebind(lw, target_node, value)
    return None


# ------------------------------------------------------------------------------ Cholesky


def _cholesky(inplace: bool):
    def handler(lw: Lowerer, node):
        a = _bind(lw, node, [("A", _REQUIRED), ("fill_mode", "lower")])
        m = _square(lw, a["A"], "A", node)
        upper = _upper(lw, a["fill_mode"], node)
        r = _emit(lw, f"tile_cholesky<{_bool(upper)}>", [m], m.type, node)
        return _result(lw, a["A"], r, inplace)

    return handler


# ------------------------------------------------------------------------------- solves


def _solve(symbol: str, matrix: str, rhs: str, inplace: bool, fill_mode: bool = False):
    """A solve ``symbol(matrix, rhs)`` (Warp's parameter names); with ``fill_mode``, the
    factor's triangle is chosen by that argument."""

    def handler(lw: Lowerer, node):
        params = [(matrix, _REQUIRED), (rhs, _REQUIRED)] + ([("fill_mode", "lower")] if fill_mode else [])
        a = _bind(lw, node, params)
        m = _square(lw, a[matrix], matrix, node)
        y = _rhs(lw, a[rhs], rhs, m, node)
        targs = f"<{_bool(_upper(lw, a['fill_mode'], node))}>" if fill_mode else ""
        r = _emit(lw, f"{symbol}{targs}", [m, y], y.type, node)
        return _result(lw, a[rhs], r, inplace)

    return handler


# ----------------------------------------------------------------------------------- FFT


def _fft(sign: int):
    def handler(lw: Lowerer, node):
        a = _bind(lw, node, [("inout", _REQUIRED)])
        t = _tile_arg(lw, a["inout"], "inout", node)
        if t.type.dtype not in (vt.vec2f, vt.vec2d):
            raise lw.error(
                f"{call_name(node)}(): the tile must hold vec2f or vec2d (complex numbers), got {wt.type_repr(t.type.dtype)}",
                node,
                WarpCodegenTypeError,
            )
        if t.type.ndim < 2 or t.type.shape[-1] == 0:
            raise lw.error(
                f"{call_name(node)}(): the tile must have at least 2 dimensions and a non-empty last one, got shape {t.type.shape}",
                node,
                WarpCodegenValueError,
            )
        r = _emit(lw, f"tile_fft<{sign}>", [t], t.type, node)
        _rebind(lw, a["inout"], r)

    return handler


for _op, _handler in {
    ops.tile_cholesky: _cholesky(inplace=False),
    ops.tile_cholesky_inplace: _cholesky(inplace=True),
    ops.tile_lower_solve: _solve("tile_lower_solve", "L", "y", inplace=False),
    ops.tile_lower_solve_inplace: _solve("tile_lower_solve", "L", "y", inplace=True),
    ops.tile_upper_solve: _solve("tile_upper_solve", "U", "z", inplace=False),
    ops.tile_upper_solve_inplace: _solve("tile_upper_solve", "U", "z", inplace=True),
    ops.tile_cholesky_solve: _solve("tile_cholesky_solve", "L", "y", inplace=False, fill_mode=True),
    ops.tile_cholesky_solve_inplace: _solve("tile_cholesky_solve", "L", "y", inplace=True, fill_mode=True),
    ops.tile_fft: _fft(-1),
    ops.tile_ifft: _fft(1),
}.items():
    register_special(_op, _handler)
