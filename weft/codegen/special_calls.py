"""Calls the frontend lowers specially (``wp.tid``, ``wp.static``, ``print``, ``wp.printf``,
``len``, atomics, ``wp.constant``): each handler takes the ``Lowerer`` and the ``ast.Call`` and
returns the resulting value. Registered by the identity of the Python object called."""

from __future__ import annotations

import ast
import typing

from .. import types as wt
from . import address
from . import intrinsics as intr
from . import ir
from .errors import UnsupportedConstruct, WarpCodegenTypeError, WarpCodegenValueError
from .statics import Static

if typing.TYPE_CHECKING:  # annotations only: the frontend imports this module, not the reverse
    from .frontend import Lowerer

_specials: dict = {}  # id(object) -> (object, handler)


def register_special(obj, handler):
    """Lower calls of ``obj`` with ``handler(lowerer, node)``."""
    _specials[id(obj)] = (obj, handler)


def handler_for(target):
    """The handler lowering calls of the Python object ``target``, or None."""
    entry = _specials.get(id(target))
    if entry is not None and entry[0] is target:
        return entry[1]
    if isinstance(target, type) and getattr(target, "_weft_kernel_constructible", False):
        return _call_array_from_ptr  # wp.array(ptr=..., shape=..., dtype=...), wp.array2d(...)
    if getattr(target, "_weft_kernel_local_array", False):
        return _call_local_array  # wp.zeros(shape, dtype) / wp.empty(shape, dtype)
    return None


def _call_local_array(lw: Lowerer, node):
    """``wp.zeros(shape, dtype)`` / ``wp.empty(shape, dtype)`` in a kernel or func: a fixed-size
    array in the thread's own memory, zeroed (``empty`` too: reproducible), its shape known when
    the kernel is built. It behaves as an array (indexing, views, slices, ``.ptr``, passing to
    funcs); a func may return it; it takes no gradient."""
    names = ["shape", "dtype"]
    given = dict(zip(names, node.args))
    given.update({k.arg: k.value for k in node.keywords})
    if len(node.args) > 2 or set(given) - set(names) or "shape" not in given:
        raise lw.error("wp.zeros(shape, dtype) in a kernel takes a constant shape and a dtype", node)
    from .errors import WarpCodegenError

    try:
        shape = lw.static_eval(given["shape"])
    except WarpCodegenError:
        raise lw.error(
            "the `shape` argument must be specified as a constant when zero-initializing an array", node
        ) from None
    try:
        shape = wt.fixed_array_shape(shape)
    except (TypeError, ValueError) as e:
        raise lw.error(str(e), node, WarpCodegenValueError) from None
    dtype = _build_time_value(lw, given["dtype"]) if "dtype" in given else float
    try:
        dtype = wt.resolve_array_dtype(dtype)
    except TypeError as e:
        raise lw.error(str(e), node, WarpCodegenTypeError) from None
    storage = lw.call(intr.LOCAL_STORAGE, [], wt.FixedArrayType(dtype, shape), node=node)
    return lw.local_array_over(storage, node)


def _call_array_from_ptr(lw: Lowerer, node):
    """``wp.array(ptr=p, shape=(n, m), dtype=T)`` in a kernel: a contiguous array over the memory
    at address ``p`` (a uint64, e.g. another array's ``.ptr``); the shape may be runtime ints, the
    dtype is known when the kernel is built. It has no gradient."""
    kw = {k.arg: k.value for k in node.keywords}
    if node.args or set(kw) - {"ptr", "shape", "dtype"} or not {"ptr", "shape", "dtype"} <= set(kw):
        raise lw.error(
            "wp.array(...) in a kernel takes exactly ptr=, shape= and dtype= (a view of existing memory); "
            "create arrays with data outside kernels",
            node,
            WarpCodegenTypeError,
        )
    dtype = _build_time_value(lw, kw["dtype"])
    try:
        dtype = wt.resolve_array_dtype(dtype)
    except TypeError as e:
        raise lw.error(str(e), kw["dtype"], WarpCodegenTypeError) from None
    ptr = lw.expr(kw["ptr"])
    if not wt.is_int(ptr.type):
        raise lw.error(f"wp.array(ptr=...) needs an integer address (a uint64), got {wt.type_repr(ptr.type)}", node)
    shape_node = kw["shape"]
    dims = [lw.expr(e) for e in shape_node.elts] if isinstance(shape_node, ast.Tuple) else [lw.expr(shape_node)]
    fixed = getattr(lw.static_value(node.func), "ndim_fixed", 0)
    if not 1 <= len(dims) <= wt.MAX_DIMS or (fixed and len(dims) != fixed):
        raise lw.error(f"wp.array(shape=...) in a kernel needs 1 to {wt.MAX_DIMS} dimensions", node)
    for d in dims:
        if not wt.is_int(d.type):
            raise lw.error(f"array dimensions must be integers, got {wt.type_repr(d.type)}", shape_node)
    return lw.call(intr.ARRAY_FROM_PTR, [ptr] + dims, wt.ArrayType(dtype, len(dims)), node=node)


def _call_tid(lw: Lowerer, node):
    if node.args:
        raise lw.error("wp.tid() takes no arguments", node)
    return lw.tid(1, node)[0]


def _call_static(lw: Lowerer, node):
    if len(node.args) != 1:
        raise lw.error("wp.static() takes one expression", node)
    value = lw.static_eval(node.args[0])
    result = lw.from_python(value, "static", node)
    if isinstance(result, Static) and not callable(value) and not isinstance(value, type):
        why = (
            "a Warp array cannot be created inside Warp kernels; pass it as a kernel argument"
            if hasattr(value, "kernel_type")
            else f"{value!r} is not a value, type or function kernels can use"
        )
        raise lw.error(f"Static expression returns an unsupported value: {why}", node)
    return result


def _call_print(lw: Lowerer, node):
    for k, a in enumerate(node.args):
        if k:
            lw.call(intr.PRINT_STR, [], None, attr=" ", node=node)
        v = lw.visit(a)
        if isinstance(v, str):
            lw.call(intr.PRINT_STR, [], None, attr=v, node=node)
        elif isinstance(v, ir.Var) and (
            wt.is_scalar(v.type) or getattr(v.type, "_kind", None) in ("vector", "matrix", "quaternion", "transform")
        ):
            lw.call(intr.PRINT_VALUE, [v], None, node=node)
        else:
            raise lw.error("print() in kernels takes strings and scalar values", a, UnsupportedConstruct)
    lw.call(intr.PRINT_NEWLINE, [], None, node=node)


def _call_printf(lw: Lowerer, node):
    if not node.args or not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
        raise lw.error("wp.printf() needs a constant format string first", node)
    args = []
    for a in node.args[1:]:
        v = lw.expr(a)
        if wt.is_float(v.type) and v.type is not wt.float64:
            v = lw.cast(v, wt.float64)
        args.append(v)
    lw.call(intr.PRINTF, args, None, attr=node.args[0].value, node=node)


def _call_len(lw: Lowerer, node):
    v = lw.argument(node.args[0])
    if isinstance(v.type, wt.TupleType):
        return lw.const(len(v.type.types), wt.int32)
    if getattr(v.type, "_kind", None) in ("vector", "matrix", "quaternion", "transform"):
        return lw.const(v.type._shape[0], wt.int32)
    if not wt.is_array_like(v.type):
        raise lw.error("len() takes an array, vector, matrix or tuple in kernels", node)
    return lw.call(intr.SHAPE, [v], wt.int32, attr=0)


# The scalar types Warp's wp.atomic_add / atomic_sub and atomic_min / atomic_max take (its CUDA
# hardware atomics), with its words for the rest. weft keeps to them so that a program that runs
# here runs on Warp; `a[i] += v` stays atomic on every array type (Warp makes it a plain
# read-modify-write for the others).
_ARITHMETIC_ATOMIC_SCALARS = {
    "atomic_add": ((wt.int32, wt.uint32, wt.int64, wt.uint64, wt.float16, wt.bfloat16, wt.float32, wt.float64),
                   "[u]int32, [u]int64, float16, bfloat16, float32, or float64"),
    "atomic_min": ((wt.int32, wt.uint32, wt.int64, wt.uint64, wt.bfloat16, wt.float32, wt.float64),
                   "[u]int32, [u]int64, bfloat16, float32, or float64"),
}  # fmt: skip
_ARITHMETIC_ATOMIC_SCALARS["atomic_sub"] = _ARITHMETIC_ATOMIC_SCALARS["atomic_add"]
_ARITHMETIC_ATOMIC_SCALARS["atomic_max"] = _ARITHMETIC_ATOMIC_SCALARS["atomic_min"]


def _check_atomic_scalar(lw: Lowerer, name: str, dtype, node):
    allowed = _ARITHMETIC_ATOMIC_SCALARS.get(name)
    scalar = getattr(dtype, "_scalar", dtype)
    if allowed is not None and scalar not in allowed[0]:
        raise lw.error(
            f"{name}() operations only work on arrays with {allowed[1]} as the underlying scalar types, but got "
            f"{wt.type_repr(dtype)} (with scalar type {wt.type_repr(scalar)})",
            node,
            WarpCodegenTypeError,
        )


def _call_atomic(name):
    values = 2 if name == "atomic_cas" else 1  # compare and value, or value

    def handler(lw: Lowerer, node):
        names = ["arr", "i", "j", "k", "l"][: max(2, len(node.args) - values)] + (["compare"] if values == 2 else [])
        args = lw.call_args(node, names + ["value"])
        what = "compare, value" if values == 2 else "value"
        if len(args) < 2 + values or not wt.is_array_like(args[0].type):
            raise lw.error(f"wp.{name}(array, index..., {what}) needs an array, indices and {what}", node)
        arr, idx, vals = args[0], args[1:-values], args[-values:]
        if len(idx) != arr.type.ndim:
            raise lw.error(f"wp.{name} on a {arr.type.ndim}-d array needs {arr.type.ndim} indices", node)
        dtype = arr.type.dtype
        _check_atomic_scalar(lw, name, dtype, node)
        if name in intr.BITWISE_ATOMICS and not wt.is_int(getattr(dtype, "_scalar", dtype)):
            raise lw.error(
                f"wp.{name}() works on arrays of integers (or of integer vectors and matrices), got "
                f"{wt.type_repr(dtype)}",
                node,
                WarpCodegenTypeError,
            )
        if name in ("atomic_cas", "atomic_exch") and not wt.is_scalar(dtype):
            raise lw.error(
                f"wp.{name}() works on arrays of scalars, got {wt.type_repr(dtype)}", node, WarpCodegenTypeError
            )
        if isinstance(arr.type, wt.IndexedArrayType):
            arr, idx = lw.indexed_element(arr, idx, node)
        elif wt.is_fabric(arr.type):
            arr, idx = lw.fabric_element(arr, idx, node)
        vals = [lw.coerce_store_value(arr, v, node) for v in vals]
        op = intr.ATOMIC_CAS if name == "atomic_cas" else intr.ATOMICS[name]
        return lw.call(op, [arr] + idx + vals, arr.type.dtype, node=node)

    return handler


def _call_address_of(lw: Lowerer, node):
    if len(node.args) != 1 or node.keywords:
        raise lw.error(
            "wp.address_of() takes one argument: a variable, an array element, a struct field or a component",
            node,
        )
    return address.lower(lw, node.args[0], node)


def _call_constant(lw: Lowerer, node):
    return lw.from_python(lw.static_eval(node.args[0]), "constant", node)


register_special(intr.tid, _call_tid)
register_special(intr.static, _call_static)
register_special(print, _call_print)
register_special(intr.print_value, _call_print)
register_special(intr.printf, _call_printf)
def _byte_size(t):
    """Bytes of a value of the kernel type ``t`` (scalar, composite or struct); None otherwise."""
    if wt.is_scalar(t):
        return t.np_dtype.itemsize
    if getattr(t, "_kind", None) in ("vector", "matrix", "quaternion", "transform"):
        return t._length * t._scalar.np_dtype.itemsize
    if getattr(t, "_kind", None) == "struct":
        import ctypes

        return ctypes.sizeof(t.ctype)
    return None


def _call_cast(lw: Lowerer, node):
    if len(node.args) != 2 or node.keywords:
        raise lw.error("wp.cast(value, dtype) takes a value and a type", node)
    v = lw.expr(node.args[0])
    target = lw.static_value(node.args[1])
    if target is None:
        target = lw.static_eval(node.args[1])
    target = tr.annotation_type(target) or target  # int -> int32, float -> float32
    size, target_size = _byte_size(v.type), _byte_size(target)
    if target_size is None:
        raise lw.error(f"wp.cast() needs a scalar, vector, matrix or struct type, got {target!r}", node)
    if size != target_size:
        raise lw.error(
            f"wp.cast() reinterprets bytes: {wt.type_repr(v.type)} has {size} bytes, {wt.type_repr(target)} "
            f"{target_size}",
            node,
            WarpCodegenTypeError,
        )
    if v.literal:
        v = lw.const(v.const, v.type)
    return lw.call(intr.BIT_CAST, [v], target, node=node)


register_special(len, _call_len)
register_special(intr.cast, _call_cast)


def _call_grad(lw: Lowerer, node):
    if len(node.args) != 1 or node.keywords:
        raise lw.error("wp.grad() takes one function: wp.grad(f)(x, ...)", node)
    target = lw.argument(node.args[0])
    if not (isinstance(target, Static) and tr.is_function_target(target.value)):
        raise lw.error(f"wp.grad() takes a func or a builtin, got '{ast.unparse(node.args[0])}'", node)
    return Static(intr.GradOf(target.value))


register_special(intr.grad, _call_grad)
register_special(intr.constant, _call_constant)
register_special(intr.address_of, _call_address_of)
for _name in [*intr.ATOMICS, "atomic_cas"]:
    register_special(getattr(intr, _name), _call_atomic(_name))


# --- composite constructors and output-parameter builtins -----------------------------------
from .. import vector_types as vt  # noqa: E402
from ..builtins import constructors as ctors  # noqa: E402
from . import composite  # noqa: E402
from . import typing_rules as tr  # noqa: E402


def _build_time_value(lw: Lowerer, node):
    """A keyword argument known when the kernel is built: a Python expression of globals and
    constants (``length=3``, ``shape=(2, 2)``) or a kernel expression naming a type or a constant
    (``dtype=type(a)``, ``dtype=x.dtype``, ``length=v.length``)."""
    from .errors import WarpCodegenError

    try:
        return lw.static_eval(node)
    except WarpCodegenError:
        pass
    value = lw.visit(node)
    if isinstance(value, Static):
        return value.value
    if isinstance(value, ir.Var) and value.is_const:
        return value.const
    raise lw.error(f"'{ast.unparse(node)}' must be known when the kernel is built (a type or a constant)", node)


def _static_kwargs(lw: Lowerer, node, names, defaults):
    """Evaluate constant arguments (sizes, dtypes) at build time."""
    values = dict(defaults)
    for name, a in zip(names, node.args):
        values[name] = _build_time_value(lw, a)
    for k in node.keywords:
        if k.arg not in values:
            raise lw.error(f"unexpected keyword argument '{k.arg}'", node)
        values[k.arg] = _build_time_value(lw, k.value)
    return values


def _dtype_arg(lw, value, node):
    t = tr.annotation_type(value)
    if t is None or not wt.is_scalar(t):
        raise lw.error(f"dtype must be a scalar type, got {value!r}", node)
    return t


def _call_identity(lw: Lowerer, node):
    kw = _static_kwargs(lw, node, ["n", "dtype"], {"n": 3, "dtype": float})
    cls = vt.matrix((int(kw["n"]), int(kw["n"])), _dtype_arg(lw, kw["dtype"], node))
    return lw.call(intr.CONSTRUCT, [], cls, attr="identity", node=node)


def _identity_of(make, symbol):
    def handler(lw: Lowerer, node):
        kw = _static_kwargs(lw, node, ["dtype"], {"dtype": float})
        cls = make(_dtype_arg(lw, kw["dtype"], node))
        return lw.call(intr.CONSTRUCT, [], cls, attr=symbol, node=node)

    return handler


def _rows_or_cols(cols):
    def handler(lw: Lowerer, node):
        return composite.from_rows_or_cols(lw, [lw.expr(a) for a in node.args], node, cols)

    return handler


def _call_with_outputs(builtin):
    """``wp.svd3(A, U, sigma, V)``: call the tuple-returning builtin, then assign each output
    to the name passed in its place (weft values are immutable, so outputs are rebindings)."""
    n_out = builtin.outputs

    def handler(lw: Lowerer, node):
        if len(node.args) == len(builtin.overloads[0].params):
            # the tuple form: U, sigma, V = wp.svd3(A)
            return lw.call_builtin(builtin, [lw.expr(a) for a in node.args], node)
        n_in = len(node.args) - n_out
        if n_in < 1 or any(not isinstance(t, ast.Name) for t in node.args[n_in:]):
            raise lw.error(
                f"wp.{builtin.name}() takes its inputs followed by {n_out} variable names to receive the outputs",
                node,
            )
        result = lw.call_builtin(builtin, [lw.expr(a) for a in node.args[:n_in]], node)
        for k, (target, t) in enumerate(zip(node.args[n_in:], result.type.types)):
            lw.assign_to(
                ast.Name(id=target.id, ctx=ast.Store()), lw.call(intr.TUPLE_GET, [result], t, attr=k, node=node)
            )

    return handler


register_special(ctors.identity, _call_identity)
register_special(ctors.quat_identity, _identity_of(vt.quaternion, "quat_identity"))
register_special(ctors.transform_identity, _identity_of(vt.transformation, "transform_identity"))
register_special(ctors.matrix_from_rows, _rows_or_cols(False))
register_special(ctors.matrix_from_cols, _rows_or_cols(True))
for _b in (ctors.svd2, ctors.svd3, ctors.qr3, ctors.eig3, ctors.quat_to_axis_angle):
    register_special(_b, _call_with_outputs(_b))


def _generic_constructor(kind):
    """``wp.vector(x, y, z)`` / ``wp.vector(length=3, dtype=float)`` / ``wp.matrix(..., shape=(2, 2))``."""

    def handler(lw: Lowerer, node):
        args = [lw.expr(a) for a in node.args]
        runtime = ("p", "q") if kind == "transform" else ()  # wp.transformation(p=..., q=...)
        parts = {k.arg: lw.expr(k.value) for k in node.keywords if k.arg in runtime}
        if parts:
            if args or set(parts) != {"p", "q"}:
                raise lw.error("wp.transformation(p=..., q=...) takes both parts by keyword", node)
            args = [parts["p"], parts["q"]]
        kw = {k.arg: _build_time_value(lw, k.value) for k in node.keywords if k.arg not in runtime}
        dtype = kw.get("dtype")
        if dtype is not None:
            dtype = _dtype_arg(lw, dtype, node)
        elif args:
            dtype = args[0].type if wt.is_scalar(args[0].type) else getattr(args[0].type, "_scalar", None)
            if args[0].literal and dtype is not None and wt.is_float(dtype):
                dtype = wt.float32
        else:
            dtype = wt.float32
        # one composite argument converts it: wp.vector(v, dtype=wp.float16) keeps v's length
        source = args[0].type if len(args) == 1 and composite.is_composite(args[0].type) else None
        if kind == "transform":
            return composite.construct(lw, vt.transformation(dtype), args, node)
        if kind == "quaternion":
            return composite.construct(lw, vt.quaternion(dtype), args, node)
        if kind == "vector":
            default = len(args) if len(args) > 1 else (source._length if source is not None else 0)
            cls = vt.vector(int(kw.get("length", default) or 0), dtype)
        else:
            shape = kw.get("shape", source._shape if source is not None else None)
            if shape is None:
                raise lw.error("the `shape` argument must be specified when initializing a matrix by value", node)
            cls = vt.matrix(tuple(int(x) for x in shape), dtype)
        if cls._length == 0:
            raise lw.error("the `length` argument must be specified when zero-initializing a vector", node)
        return composite.construct(lw, cls, args, node)

    return handler


register_special(vt.vector, _generic_constructor("vector"))
register_special(vt.transformation, _generic_constructor("transform"))
register_special(vt.quaternion, _generic_constructor("quaternion"))


def _call_type(lw: Lowerer, node):
    """``type(x)`` names the type of a value (so generic funcs can write ``type(x)(a, b)``)."""
    if len(node.args) != 1:
        raise lw.error("type() takes one argument in kernels", node)
    return Static(lw.expr(node.args[0]).type)


def _call_set_part(part):
    """``wp.transform_set_translation(t, p)`` / ``..._rotation(t, q)`` update the variable t."""

    def handler(lw: Lowerer, node):
        if len(node.args) != 2 or not isinstance(node.args[0], ast.Name):
            raise lw.error(f"wp.transform_set_{part}(t, value) needs a transform variable first", node)
        t, v = lw.expr(node.args[0]), lw.expr(node.args[1])
        new = composite.write_attribute(lw, t, "p" if part == "translation" else "q", v, node)
        if new is None:
            raise lw.error(f"wp.transform_set_{part}() needs a transform, got {wt.type_repr(t.type)}", node)
        lw.assign_to(ast.Name(id=node.args[0].id, ctx=ast.Store()), new)

    return handler


register_special(type, _call_type)
register_special(ctors.transform_set_translation, _call_set_part("translation"))
register_special(ctors.transform_set_rotation, _call_set_part("rotation"))
register_special(vt.matrix, _generic_constructor("matrix"))


# --- random numbers: builtins that advance their state argument (builtins/random.py) --------
from ..builtins import random as rnd  # noqa: E402


def _call_advancing_state(builtin):
    """``wp.randf(rng, ...)``: the builtin returns (value, new_state); a plain variable passed as
    the state is rebound to new_state (Warp advances it in place), and the value is the result.
    Untyped literals are converted to the parameter types of the overload with that arity."""

    def handler(lw: Lowerer, node):
        names = [n for n, _ in max(builtin.overloads, key=lambda o: len(o.params)).params]
        args = lw.call_args(node, names)
        for ov in builtin.overloads:
            if len(ov.params) == len(args):
                args = [
                    lw.const(tr.convert_literal(a.const, t), t)
                    if a.literal and wt.is_scalar(t) and tr.literal_fits(a.const, t)
                    else a
                    for a, (_, t) in zip(args, ov.params)
                ]
                break
        result = lw.call_builtin(builtin, args, node)
        value_t, state_t = result.type.types
        if node.args and isinstance(node.args[0], ast.Name):
            new_state = lw.call(intr.TUPLE_GET, [result], state_t, attr=1, node=node)
            lw.assign_to(ast.Name(id=node.args[0].id, ctx=ast.Store()), new_state)
        return lw.call(intr.TUPLE_GET, [result], value_t, attr=0, node=node)

    return handler


for _b in rnd.STATE_BUILTINS:
    register_special(_b, _call_advancing_state(_b))


def _call_curlnoise(lw: Lowerer, node):
    """``wp.curlnoise(state, x, octaves=1, lacunarity=2.0, gain=0.5)``: Warp's keyword defaults."""
    args = lw.call_args(
        node, ["state", "x", "octaves", "lacunarity", "gain"], {"octaves": 1, "lacunarity": 2.0, "gain": 0.5}
    )
    return lw.call_builtin(rnd.curlnoise, args, node)


register_special(rnd.curlnoise, _call_curlnoise)


from ..builtins import geometry as geo  # noqa: E402


def _call_with_inout(builtin):
    """``wp.bvh_query_next(query, index)``: the builtin returns (result, new values of the
    arguments at ``builtin.inout``); each such argument that is a plain variable is rebound to its
    new value (Warp updates it in place), and the result is the call's value."""

    def handler(lw: Lowerer, node):
        result = lw.call_builtin(builtin, lw.builtin_args(builtin, node), node)
        return _rebind_inout(lw, builtin.inout, result, node.args, node)

    return handler


def _rebind_inout(lw: Lowerer, inout, result, arg_nodes, node):
    """``result`` is (the call's value, new values of the arguments at positions ``inout``): each
    such argument whose expression in ``arg_nodes`` is a plain variable is rebound to its new
    value; returns the call's value."""
    types = result.type.types
    for k, pos in enumerate(inout, start=1):
        arg = arg_nodes[pos] if pos < len(arg_nodes) else None
        if isinstance(arg, ast.Name):
            new = lw.call(intr.TUPLE_GET, [result], types[k], attr=k, node=node)
            lw.assign_to(ast.Name(id=arg.id, ctx=ast.Store()), new)
    return lw.call(intr.TUPLE_GET, [result], types[0], attr=0, node=node)


def _call_with_legacy_outputs(builtin, n_in, fields):
    """``wp.mesh_query_point(id, p, max_dist, sign, face, u, v)``: Warp's older form writing the
    result's fields to the names passed after the inputs (more inputs may follow them); returns
    ``result``. The struct-returning form is called as usual."""

    def handler(lw: Lowerer, node):
        if len(node.args) <= len(builtin.overloads[0].params) or node.keywords:
            return lw.call_builtin(builtin, lw.builtin_args(builtin, node), node)
        outs = node.args[n_in : n_in + len(fields)]
        if len(outs) != len(fields) or any(not isinstance(a, ast.Name) for a in outs):
            raise lw.error(
                f"wp.{builtin.name}() takes {n_in} inputs, then {len(fields)} variable names receiving "
                f"{', '.join(fields)}, or returns a struct when called with its inputs only",
                node,
            )
        inputs = lw.with_defaults(builtin, [lw.argument(a) for a in node.args[:n_in] + node.args[n_in + len(fields) :]])
        res = lw.call_builtin(builtin, inputs, node)
        for field, target in zip(fields, outs):
            lw.assign_to(ast.Name(id=target.id, ctx=ast.Store()), composite.struct_get(lw, res, field, node))
        return composite.struct_get(lw, res, "result", node)

    return handler


for _b in (geo.bvh_query_next, geo.mesh_query_next, geo.mesh_query_aabb_next, *geo.TILED_QUERIES):
    register_special(_b, _call_with_inout(_b))
for _b, (_n_in, _fields) in geo.LEGACY_OUTPUTS.items():
    register_special(_b, _call_with_legacy_outputs(_b, _n_in, _fields))

from ..builtins import hash_grid as hg  # noqa: E402

register_special(hg.hash_grid_query_next, _call_with_inout(hg.hash_grid_query_next))

from ..builtins import volume as vol  # noqa: E402


def _call_volume(builtin):
    """``wp.volume_sample(id, uvw, mode, dtype=wp.vec3)``, ``wp.volume_sample_grad(id, uvw, mode,
    grad, dtype=float)``, ``wp.volume_sample_grad_f(id, uvw, mode, grad)``...: a ``dtype`` argument
    (a type known when the kernel is built) is passed as a zero value of that type, selecting the
    overload; a ``grad`` argument that is a plain variable is rebound to the gradient the builtin
    returns (``builtin.inout``; Warp writes it in place). Returns the sampled value."""
    names = [n for n, _ in builtin.overloads[0].params]
    inout = getattr(builtin, "inout", ())

    def handler(lw: Lowerer, node):
        if len(node.args) > len(names):
            raise lw.error(f"wp.{builtin.name}() takes {len(names)} arguments ({', '.join(names)})", node)
        given = dict(zip(names, node.args))
        for k in node.keywords:
            if k.arg not in names or k.arg in given:
                raise lw.error(f"wp.{builtin.name}(): unexpected or repeated argument '{k.arg}'", node)
            given[k.arg] = k.value
        missing = [n for n in names if n not in given]
        if missing:
            raise lw.error(f"wp.{builtin.name}() is missing argument(s) {', '.join(missing)}", node)
        args = []
        for n in names:
            if n != "dtype":
                args.append(lw.argument(given[n]))
                continue
            t = tr.annotation_type(_build_time_value(lw, given[n]))
            if t is None or not any(ov.params[names.index("dtype")][1] == t for ov in builtin.overloads):
                raise lw.error(f"unsupported volume type `{wt.type_repr(t or given[n])}`", node, WarpCodegenTypeError)
            args.append(lw.call(intr.ZERO, [], t, node=node))
        result = lw.call_builtin(builtin, args, node)
        if not inout:
            return result
        return _rebind_inout(lw, inout, result, [given[n] for n in names], node)

    return handler


for _b in {*vol.DTYPE_BUILTINS, *vol.INOUT_BUILTINS}:
    register_special(_b, _call_volume(_b))
