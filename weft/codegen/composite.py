"""Frontend rules for composite values (vectors, matrices, quaternions, transforms): constructors,
component reads (``v.x``, ``v[i]``, ``m[i, j]``, ``m[i]``) and component writes, which in SSA form
produce a modified copy (``assign_copy``) that is then bound back to the written name.

Contract: functions take the ``Lowerer`` and IR vars and return IR vars; they never render C++.
Constructors lower to the ``construct`` intrinsic whose ``attr`` is the C++ constructor name; the
renderer prints ``weft::<name><ResultType>(args)``.
"""

from __future__ import annotations

import ast

from .. import types as wt
from .. import vector_types as vt
from . import intrinsics as intr
from . import typing_rules as tr
from .errors import WarpCodegenAttributeError, WarpCodegenIndexError, WarpCodegenTypeError, WarpCodegenValueError

_component_letters = {"x": 0, "y": 1, "z": 2, "w": 3}


def is_composite(t) -> bool:
    return vt.is_composite(t)


def _scalar_args(lw, args, dtype, what, node):
    out = []
    for a in args:
        if a.type == dtype:
            out.append(a)
        elif a.literal and tr.literal_fits(a.const, dtype):
            out.append(lw.const(tr.convert_literal(a.const, dtype), dtype))
        elif wt.is_scalar(a.type):
            kind = getattr(what, "_kind", "vector")
            role = (
                "the value used to fill this matrix is"
                if kind == "matrix" and len(args) == 1
                else f"all values used to initialize this {kind} are"
            )
            raise lw.error(
                f"{what.__name__} has {wt.type_repr(dtype)} components but got a {wt.type_repr(a.type)}; cast it "
                f"(e.g. {wt.type_repr(dtype)}(x)): {role} expected to be of the type `{wt.type_repr(dtype)}`",
                node,
                WarpCodegenTypeError,
            )
        else:
            return None
    return out


def construct(lw, cls, args, node):
    """Lower ``cls(args...)`` for a composite class ``cls``."""
    kind, dtype, n = cls._kind, cls._scalar, cls._length
    name = cls.__name__
    prefix = {"vector": "vec", "matrix": "mat", "quaternion": "quat", "transform": "transform"}[kind]

    def build(symbol, xs):
        return lw.call(intr.CONSTRUCT, xs, cls, attr=symbol, node=node)

    if not args:
        return build(f"{prefix}_zero", [])
    if len(args) == 1 and args[0].type is not cls and is_composite(args[0].type):
        src = args[0].type
        if src._kind != kind or src._shape != cls._shape:
            raise lw.error(f"cannot convert {src.__name__} to {name}", node, WarpCodegenTypeError)
        return build(f"{prefix}_convert", args)
    if len(args) == 1 and args[0].type is cls:
        return args[0]
    if kind == "transform" and len(args) == 2:
        p, q = args
        if vt.is_vector(p.type) and p.type._length == 3 and vt.is_quaternion(q.type):
            if p.type._scalar is not dtype or q.type._scalar is not dtype:
                raise lw.error(f"{name}(p, q) needs {wt.type_repr(dtype)} parts", node, WarpCodegenTypeError)
            return build("transform_make", args)
    if (
        kind == "vector"
        and n == 6
        and len(args) == 2
        and all(vt.is_vector(a.type) and a.type._length == 3 for a in args)
    ):
        if any(a.type._scalar is not dtype for a in args):
            raise lw.error(f"{name}(w, v) needs {wt.type_repr(dtype)} parts", node, WarpCodegenTypeError)
        return build("spatial_vector_from_parts", args)
    if kind == "quaternion" and len(args) == 2 and vt.is_vector(args[0].type) and args[0].type._length == 3:
        real = _scalar_args(lw, args[1:], dtype, cls, node)
        if args[0].type._scalar is not dtype or real is None:
            raise lw.error(f"{name}(ijk, real) needs {wt.type_repr(dtype)} parts", node, WarpCodegenTypeError)
        return build("quat_from_parts", [args[0]] + real)
    if kind == "matrix" and all(vt.is_vector(a.type) for a in args):
        raise lw.error(
            "passing vectors to a matrix constructor is not supported; use wp.matrix_from_rows() or "
            "wp.matrix_from_cols()",
            node,
            WarpCodegenTypeError,
        )
    scalars = _scalar_args(lw, args, dtype, cls, node)
    if scalars is None:
        shown = ", ".join(wt.type_repr(a.type) for a in args)
        raise lw.error(f"no constructor {name}({shown})", node, WarpCodegenTypeError)
    if len(scalars) == 1 and kind in ("vector", "matrix"):
        return build(f"{prefix}_fill", scalars)
    if len(scalars) == n:
        return build(f"{prefix}_make", scalars)
    target = f"a vector of length {n}" if kind != "matrix" else f"a matrix of shape {tuple(cls._shape)}"
    raise lw.error(
        f"{name} takes 0, 1 or {n} components: incompatible number of values given ({len(scalars)}) when "
        f"constructing {target}",
        node,
        WarpCodegenTypeError,
    )


def from_rows_or_cols(lw, args, node, cols: bool):
    if not args or not all(vt.is_vector(a.type) for a in args):
        raise lw.error("matrix_from_rows/cols takes vectors", node, WarpCodegenTypeError)
    t0 = args[0].type
    if any(a.type is not t0 for a in args):
        raise lw.error(
            "all vectors passed to matrix_from_rows/cols must have the same type", node, WarpCodegenTypeError
        )
    shape = (t0._length, len(args)) if cols else (len(args), t0._length)
    cls = vt.matrix(shape, t0._scalar)
    return lw.call(intr.CONSTRUCT, args, cls, attr="mat_from_cols" if cols else "mat_from_rows", node=node)


def check_index(lw, i, node, size=None):
    """An integer component index; a constant one must lie in ``[-size, size)`` (negative indices
    count from the end, as in Python and Warp). A variable one is checked when the kernel runs."""
    if not wt.is_int(i.type):
        raise lw.error(f"component indices must be integers, got {wt.type_repr(i.type)}", node, WarpCodegenTypeError)
    if size is not None and i.is_const and not -size <= int(i.const) < size:
        raise lw.error(
            f"component index {int(i.const)} is out of range for a dimension of size {size}",
            node,
            WarpCodegenIndexError,
        )
    return i


def component_type(t, nidx):
    """Type of ``t[i]`` (nidx=1) or ``t[i, j]`` (nidx=2)."""
    if t._kind == "matrix":
        return vt.vector(t._shape[1], t._scalar) if nidx == 1 else t._scalar
    return t._scalar


def read(lw, base, idx, node):
    """``base[idx...]`` for a composite ``base``."""
    t = base.type
    nmax = 2 if t._kind == "matrix" else 1
    if not 1 <= len(idx) <= nmax:
        raise lw.error(f"{t.__name__} takes {nmax} index(es), got {len(idx)}", node, WarpCodegenTypeError)
    idx = [check_index(lw, i, node, t._shape[k]) for k, i in enumerate(idx)]
    return lw.call(intr.EXTRACT, [base] + idx, component_type(t, len(idx)), node=node)


def write(lw, base, idx, value, node):
    """A copy of composite ``base`` with ``base[idx...] = value``."""
    t = base.type
    want = component_type(t, len(idx))
    if value.type != want:
        if value.literal and tr.literal_fits(value.const, want):
            value = lw.const(tr.convert_literal(value.const, want), want)
        else:
            raise lw.error(
                f"cannot assign {wt.type_repr(value.type)} to a component of {t.__name__} ({wt.type_repr(want)})",
                node,
                WarpCodegenTypeError,
            )
    idx = [check_index(lw, i, node, t._shape[k]) for k, i in enumerate(idx)]
    return lw.call(intr.ASSIGN_COPY, [base] + idx + [value], t, node=node)


# ---------------------------------------------------------------------------------------------
# Slices of composites (``v[1:]``, ``m[:, 1]``, ``m[1:, ::2] = ...``): the positions are known at
# build time, so a slice reads or writes one component at a time (its gradient comes with them).


def _positions(lw, index_node, size, node):
    """The positions an index selects: a Python slice's (bounds known at build time) or one."""
    if not isinstance(index_node, ast.Slice):
        return None

    def bound(e):
        if e is None:
            return None
        v = lw.constant_index(e)
        if v is None:
            raise lw.error("slice bounds of a vector or matrix must be known at build time", node, WarpCodegenTypeError)
        return v

    step = bound(index_node.step)
    if step == 0:
        raise lw.error("Slice step cannot be zero", node, WarpCodegenValueError)
    picked = list(range(*slice(bound(index_node.lower), bound(index_node.upper), step).indices(size)))
    if not picked:
        raise lw.error("the slice selects no component (weft has no empty vectors)", node, WarpCodegenValueError)
    return picked


def _sliced_positions(lw, t, index_nodes, node):
    """``(rows, cols, shape)`` for an index list with a slice: the selected positions of each
    axis and the shape of the result (one axis: a vector)."""
    nmax = 2 if t._kind == "matrix" else 1
    if not 1 <= len(index_nodes) <= nmax:
        raise lw.error(f"{t.__name__} takes {nmax} index(es), got {len(index_nodes)}", node, WarpCodegenTypeError)
    axes = []
    for k, e in enumerate(index_nodes):
        size = t._shape[k] if t._kind == "matrix" else t._length
        picked = _positions(lw, e, size, node)
        if picked is None:
            v = lw.constant_index(e)
            if v is None or not -size <= v < size:
                raise lw.error(f"an index next to a slice must be a constant in [-{size}, {size})", node, WarpCodegenTypeError)
            axes.append((v % size, False))
        else:
            axes.append((picked, True))
    if t._kind == "matrix" and len(axes) == 1:
        axes.append((list(range(t._shape[1])), True))  # m[1:] selects whole rows
    return axes


def _flat_index(t, pos):
    return pos[0] * t._shape[1] + pos[1] if t._kind == "matrix" else pos[0]


def read_slice(lw, base, index_nodes, node):
    """``base[slice...]``: a vector (one sliced axis) or a matrix (two) of the picked components."""
    t = base.type
    axes = _sliced_positions(lw, t, index_nodes, node)
    grids = [a if sliced else [a] for a, sliced in axes]
    shape = tuple(len(g) for (g, (_, sliced)) in zip(grids, axes) if sliced)
    comps = []
    for pos in _product(grids):
        comps.append(lw.call(intr.EXTRACT, [base] + [lw.const(i, wt.int32) for i in pos], t._scalar, node=node))
    cls = vt.vector(shape[0], t._scalar) if len(shape) == 1 else vt.matrix(shape, t._scalar)
    return construct(lw, cls, comps, node)


def write_slice(lw, base, index_nodes, value, node):
    """A copy of ``base`` with ``base[slice...] = value`` (a vector or matrix of the slice's shape)."""
    t = base.type
    axes = _sliced_positions(lw, t, index_nodes, node)
    grids = [a if sliced else [a] for a, sliced in axes]
    shape = tuple(len(g) for (g, (_, sliced)) in zip(grids, axes) if sliced)
    want = vt.vector(shape[0], t._scalar) if len(shape) == 1 else vt.matrix(shape, t._scalar)
    if value.type != want:
        got = value.type
        if is_composite(got) and got._shape != want._shape and got._scalar is t._scalar:
            size = lambda shape: shape[0] if len(shape) == 1 else shape  # noqa: E731
            raise lw.error(
                f"The length of the provided {got._kind} ({size(got._shape)}) isn't compatible with the given "
                f"slice (expected {size(want._shape)}).",
                node,
                WarpCodegenValueError,
            )
        if vt.is_vector(want) and is_composite(got) and got._kind == "vector":
            raise lw.error(
                f"The provided vector is expected to be of length {want._length} with dtype {wt.type_repr(t._scalar)}.",
                node,
                WarpCodegenValueError,
            )
        what = (
            f"a vector of length {want._length}" if vt.is_vector(want) else f"a matrix of shape {tuple(want._shape)}"
        )
        raise lw.error(
            f"The provided value is expected to be {what}, with dtype {wt.type_repr(t._scalar)}.",
            node,
            WarpCodegenValueError,
        )
    for k, pos in enumerate(_product(grids)):
        src = [lw.const(k, wt.int32)] if len(shape) == 1 else [lw.const(k // shape[1], wt.int32), lw.const(k % shape[1], wt.int32)]
        comp = lw.call(intr.EXTRACT, [value] + src, t._scalar, node=node)
        base = lw.call(intr.ASSIGN_COPY, [base] + [lw.const(i, wt.int32) for i in pos] + [comp], t, node=node)
    return base


def _product(grids):
    out = [[]]
    for g in grids:
        out = [p + [i] for p in out for i in g]
    return out


def has_slice(index_nodes) -> bool:
    return any(isinstance(e, ast.Slice) for e in index_nodes)


def attribute_index(t, attr):
    """Component index for ``v.x`` style access, or None."""
    if t._kind in ("vector", "quaternion") and attr in _component_letters:
        k = _component_letters[attr]
        return k if k < t._length else None
    return None


def read_attribute(lw, base, attr, node):
    t = base.type
    k = attribute_index(t, attr)
    if k is not None:
        return read(lw, base, [lw.const(k, wt.int32)], node)
    if t._kind == "transform" and attr in ("p", "q"):
        sym = "transform_get_translation" if attr == "p" else "transform_get_rotation"
        rt = vt.vector(3, t._scalar) if attr == "p" else vt.quaternion(t._scalar)
        return lw.call(intr.CONSTRUCT, [base], rt, attr=sym, node=node)
    return None


def write_attribute(lw, base, attr, value, node):
    t = base.type
    k = attribute_index(t, attr)
    if k is not None:
        return write(lw, base, [lw.const(k, wt.int32)], value, node)
    if t._kind == "transform" and attr in ("p", "q"):
        p = read_attribute(lw, base, "p", node) if attr == "q" else value
        q = read_attribute(lw, base, "q", node) if attr == "p" else value
        return construct(lw, t, [p, q], node)
    return None


def literal_components(value) -> list:
    """Flat Python components of a composite constant (captured globals like GRAVITY = wp.vec3(...))."""
    return value._flat()


# ---------------------------------------------------------------------------------------------
# Structs (``@wp.struct``): field reads, field writes (a modified copy), construction.


def is_struct(t) -> bool:
    return getattr(t, "_kind", None) == "struct"


def struct_get(lw, base, field, node):
    t = base.type
    if field not in t.vars:
        raise lw.error(
            f"`{field}` is not an attribute of '{ast.unparse(node.value) if isinstance(node, ast.Attribute) else t.key}' "
            f"(struct {t.key}, fields: {', '.join(t.vars)})",
            node,
            WarpCodegenAttributeError,
        )
    return lw.call(intr.GET_FIELD, [base], t.vars[field], attr=(t, field), node=node)


def struct_set(lw, base, field, value, node):
    t = base.type
    if field not in t.vars:
        raise lw.error(
            f"`{field}` is not an attribute of '{ast.unparse(node.value) if isinstance(node, ast.Attribute) else t.key}' "
            f"(struct {t.key}, fields: {', '.join(t.vars)})",
            node,
            WarpCodegenAttributeError,
        )
    want = t.vars[field]
    if value.type != want:
        if value.literal and tr.literal_fits(value.const, want):
            value = lw.const(tr.convert_literal(value.const, want), want)
        else:
            raise lw.error(
                f"struct {t.key} field '{field}' is {wt.type_repr(want)}, cannot assign {wt.type_repr(value.type)}",
                node,
                WarpCodegenTypeError,
            )
    return lw.call(intr.SET_FIELD, [base, value], t, attr=(t, field), node=node)


def struct_construct(lw, t, args, kwargs, node):
    """``S()`` (zero fields), ``S(a, b)`` (fields in declaration order) or ``S(x=a)``."""
    names = list(t.vars)
    if len(args) > len(names):
        raise lw.error(f"struct {t.key} has {len(names)} fields, {len(args)} values were given", node)
    fields = dict(zip(names, args))
    for name, value in kwargs.items():
        if name in fields:
            raise lw.error(f"struct {t.key}(...) got field '{name}' twice", node)
        fields[name] = value
    v = lw.call(intr.CONSTRUCT, [], t, attr="struct_zero", node=node)
    for name, value in fields.items():
        v = struct_set(lw, v, name, value, node)
    return v
