"""Indexing tiles and the aliasing of views.

``t[i, j]`` reads an element, ``t[2:6, :]`` / ``t[i]`` / ``t[::-1]`` a sub-tile (NumPy's basic
indexing: slice bounds known when the kernel is built, integer indices at run time, checked),
``t[idx, :]`` gathers rows; ``t[...] = v`` writes. In Warp a sub-tile (``row = t[i]``,
``wp.tile_view(t, ...)``) aliases its parent, so updating it in place (``wp.tile_assign(row, u)``,
``row[j] = x``, ``wp.tile_matmul(a, b, row)``) changes the parent. weft's tiles are values: the
frontend remembers which name was bound to a view of which tile, and after an in-place update of
the view (``_rebind``) writes its new value back into the parent, which is rebound in turn.
"""

from __future__ import annotations

import ast
import typing

from .. import types as wt
from ..tile import ops
from ..tile.types import TileType
from .ast_scans import subscript_indices
from .cnames import ctype_name
from .errors import WarpCodegenError, WarpCodegenTypeError, WarpCodegenValueError
from .tile_args import _REQUIRED, _bind, _emit, _int_list, _padded, _static

if typing.TYPE_CHECKING:
    from .frontend import Lowerer


def _rebind(lw: Lowerer, target_node, value):
    """Warp updates the tile named by ``target_node`` in place: rebind the name to ``value`` (and
    write it back into the tile it is a view of, if it is one)."""
    if isinstance(target_node, ast.Name):
        lw.assign_to(ast.Name(id=target_node.id, ctx=ast.Store()), value)
        write_back(lw, target_node.id, target_node)
    elif isinstance(target_node, (ast.Attribute, ast.Subscript)):
        lw.assign_to(target_node, value)
    return value


def _views(lw: Lowerer) -> dict:
    return lw.__dict__.setdefault("tile_views", {})


def view_parent(lw: Lowerer, value_node):
    """The name of the tile ``value_node`` takes a view of (``t[i]``, ``t[1:3, :]``,
    ``wp.tile_view(t, ...)``), or None."""
    if isinstance(value_node, ast.Subscript) and isinstance(value_node.value, ast.Name):
        base = value_node.value.id
    elif isinstance(value_node, ast.Call) and value_node.args and isinstance(value_node.args[0], ast.Name):
        try:
            if lw.static_value(value_node.func) is not ops.tile_view:
                return None
        except WarpCodegenError:
            return None
        base = value_node.args[0].id
    else:
        return None
    v = lw.env.get(base)
    if not (hasattr(v, "type") and isinstance(v.type, TileType)):
        return None
    if isinstance(value_node, ast.Subscript) and not is_view(v, value_node):
        return None
    return base


def note_assignment(lw: Lowerer, name: str, value_node):
    """``name = value``: remember (or forget) that ``name`` is a view of another tile."""
    views = _views(lw)
    views.pop(name, None)
    parent = view_parent(lw, value_node)
    if parent is not None and parent != name:
        views[name] = (parent, value_node)


def write_back(lw: Lowerer, name: str, node):
    """After ``name`` (a view) was updated in place: its parent takes the new values."""
    rec = _views(lw).get(name)
    if rec is None:
        return
    parent, view_node = rec
    pv, v = lw.env.get(parent), lw.env.get(name)
    if not (hasattr(pv, "type") and isinstance(pv.type, TileType)):
        return
    sub = view_node
    if isinstance(view_node, ast.Call):
        a = _bind(lw, view_node, [("t", _REQUIRED), ("offset", _REQUIRED), ("shape", None)])
        sub = _view_as_subscript(lw, view_node, a) or view_node
    if isinstance(sub, ast.Subscript):
        new = assign(lw, pv, sub, v)
    else:
        new = _emit(lw, "tile_assign", [pv, v] + _padded(lw, _int_list(lw, a["offset"], node)), pv.type, node)
    lw.assign_to(ast.Name(id=parent, ctx=ast.Store()), new)
    write_back(lw, parent, node)


def _element_indices(lw: Lowerer, t, idx, node):
    if len(idx) != t.type.ndim:
        raise lw.error(f"a {t.type.ndim}-D tile indexed with {len(idx)} indices", node, WarpCodegenValueError)
    return [lw.const(lw.loc(node).id, wt.int32)] + _padded(lw, idx)


def get_element(lw: Lowerer, t, idx, node):
    return _emit(lw, "tile_extract", [t] + _element_indices(lw, t, idx, node), t.type.dtype, node)


def set_element(lw: Lowerer, t, idx, v, node):
    v = lw.cast(v, t.type.dtype) if wt.is_scalar(v.type) and wt.is_scalar(t.type.dtype) else v
    if v.type != t.type.dtype:
        raise lw.error(f"a {wt.type_repr(v.type)} assigned to an element of a tile of {wt.type_repr(t.type.dtype)}", node, WarpCodegenTypeError)
    return _emit(lw, "tile_set", [t] + _element_indices(lw, t, idx, node) + [v], t.type, node)


def _index_plan(lw: Lowerer, t, node, first=None):
    """How ``t[...]`` indexes: per source dimension, an int32 value (an index, or a slice's start)
    and a step (None for an integer index); the result's shape. Slices are NumPy's, with bounds
    known when the kernel is built; integer indices may be runtime values. ``first``: the first
    index, when the caller has lowered it already."""
    nodes = subscript_indices(node)
    shape = t.type.shape
    if len(nodes) > len(shape):
        raise lw.error(f"a {len(shape)}-D tile indexed with {len(nodes)} indices", node, WarpCodegenValueError)
    nodes = nodes + [ast.Slice(None, None, None)] * (len(shape) - len(nodes))
    values, steps, out = [], [], []
    for d, n in enumerate(nodes):
        if isinstance(n, ast.Slice):
            bounds = [None if b is None else _static(lw, b, "slice bound", node) for b in (n.lower, n.upper, n.step)]
            if bounds[2] == 0:
                raise lw.error("slice step cannot be zero", node, WarpCodegenValueError)
            start, stop, step = slice(*bounds).indices(shape[d])
            length = len(range(start, stop, step))
            if length == 0:
                raise lw.error(f"the slice gives a zero-length axis: an empty tile ({ast.unparse(node)})", node, WarpCodegenValueError)
            values.append(lw.const(start, wt.int32))
            steps.append(step)
            out.append(length)
            continue
        v = first if d == 0 and first is not None else lw.expr(n)
        if not wt.is_int(v.type):
            raise lw.error(
                f"tile indices must be integers or slices, got {wt.type_repr(v.type)} in {ast.unparse(node)}",
                node,
                WarpCodegenTypeError,
            )
        if v.is_const and not -shape[d] <= int(v.const) < shape[d]:
            raise lw.error(f"index {v.const} is out of bounds for axis {d} of size {shape[d]}", node, WarpCodegenValueError)
        values.append(lw.cast(v, wt.int32))
        steps.append(None)
    return values, steps, tuple(out)


def _slice_call(lw: Lowerer, symbol, t, values, steps, out_shape, extra, rtype, node):
    mask = sum(1 << d for d, st in enumerate(steps) if st is None)
    strides = [st or 0 for st in steps] + [0] * (4 - len(steps))
    view_t = TileType(t.type.dtype, out_shape)
    targs = f"<{ctype_name(view_t)}, {mask}, {', '.join(str(x) for x in strides)}>"
    args = [t, lw.const(lw.loc(node).id, wt.int32)] + _padded(lw, values) + extra
    return _emit(lw, f"{symbol}{targs}", args, rtype, node)


def _advanced_index(lw: Lowerer, t, idx, node):
    """``t[idx, :]`` with the int tile ``idx``: the rows at those indices."""
    if not wt.is_int(idx.type.dtype):
        raise lw.error("tile advanced indexing needs an integer index tile", node, WarpCodegenValueError)
    if idx.type.ndim != 1:
        raise lw.error("tile advanced indexing takes a 1-D integer index tile", node, WarpCodegenValueError)
    if any(not (isinstance(n, ast.Slice) and n.lower is None and n.upper is None and n.step is None) for n in subscript_indices(node)[1:]):
        raise lw.error("tile advanced indexing requires ':' on all other axes", node, WarpCodegenValueError)
    r = TileType(t.type.dtype, (idx.type.shape[0], *t.type.shape[1:]))
    loc = lw.const(lw.loc(node).id, wt.int32)
    return _emit(lw, f"tile_gather_rows<{ctype_name(r)}>", [t, loc, idx], r, node)


def subscript(lw: Lowerer, t, node):
    """``t[i, j]``: an element; ``t[i]``, ``t[2:6, :]``, ``t[::-1]``: the sub-tile (NumPy's
    basic indexing); ``t[idx, :]`` with an int tile: those rows. Each index is lowered once."""
    nodes = subscript_indices(node)
    first = None if isinstance(nodes[0], ast.Slice) else lw.expr(nodes[0])
    if first is not None and isinstance(first.type, TileType):
        return _advanced_index(lw, t, first, node)
    values, steps, out = _index_plan(lw, t, node, first)
    if not out:  # every dimension indexed by an integer
        return get_element(lw, t, values, node)
    return _slice_call(lw, "tile_slice", t, values, steps, out, [], TileType(t.type.dtype, out), node)


def is_view(t, node) -> bool:
    """Whether the subscript ``node`` of tile ``t`` names a sub-tile rather than an element."""
    nodes = subscript_indices(node)
    return len(nodes) < t.type.ndim or any(isinstance(n, ast.Slice) for n in nodes)


def assign(lw: Lowerer, t, node, v):
    """``t[...] = v``: the new value of ``t`` (an element, or a sub-tile of ``v``'s shape)."""
    if not is_view(t, node):
        values, _, _ = _index_plan(lw, t, node)
        return set_element(lw, t, values, v, node)
    values, steps, out = _index_plan(lw, t, node)
    if not isinstance(v.type, TileType):
        raise lw.error(f"assigning to a tile slice requires a tile of matching shape {out}, got {wt.type_repr(v.type)}", node, WarpCodegenTypeError)
    if v.type.shape != out:
        raise lw.error(f"tile slice assignment: shape mismatch, a tile of shape {v.type.shape} does not fit the slice of shape {out}", node, WarpCodegenValueError)
    if v.type.dtype != t.type.dtype:
        raise lw.error("tile slice assignment: tiles of different dtypes", node, WarpCodegenTypeError)
    return _slice_call(lw, "tile_slice_set", t, values, steps, out, [v], t.type, node)


def _slice_call_as_slice(lw: Lowerer, e):
    """``slice(a, b, c)`` written in a kernel, as the ``ast.Slice`` it means; else None."""
    if not (isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "slice" and not e.keywords):
        return None
    args = list(e.args)
    if not 1 <= len(args) <= 3:
        raise lw.error("slice() takes 1 to 3 arguments", e, WarpCodegenTypeError)
    if len(args) == 1:
        args = [None] + args
    return ast.Slice(*(args + [None] * (3 - len(args))))


def _view_as_subscript(lw: Lowerer, node, a):
    """``wp.tile_view(t, offset=(slice(...), ...))`` as the subscript ``t[...]`` it equals, or
    None when the offset holds no slice."""
    off = a["offset"]
    elts = off.elts if isinstance(off, ast.Tuple) else [off]
    slices = [_slice_call_as_slice(lw, e) for e in elts]
    if not any(sl is not None for sl in slices):
        return None
    if a["shape"] is not None:
        raise lw.error("tile_view(): pass either 'shape' together with a slice offset, not both: a slice gives the shape", node, WarpCodegenValueError)
    items = [sl if sl is not None else e for sl, e in zip(slices, elts)]
    sub = ast.Subscript(value=a["t"], slice=ast.Tuple(items, ast.Load()) if len(items) > 1 else items[0], ctx=ast.Load())
    return ast.copy_location(sub, node)


def view(lw: Lowerer, t, offs, shape, node):
    if len(shape) > t.type.ndim:
        raise lw.error(f"a view of shape {shape} of a {t.type.ndim}-D tile", node, WarpCodegenValueError)
    r = TileType(t.type.dtype, tuple(shape))
    return _emit(lw, f"tile_view<{ctype_name(r)}>", [t] + _padded(lw, offs), r, node)
