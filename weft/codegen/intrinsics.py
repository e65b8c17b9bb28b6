"""Intrinsics: kernel operations that are not ordinary builtins (array access, atomics, thread
index, casts, printing, tuples), and the public Python objects that name them (``wp.tid``...).

Contract: an intrinsic is identified by a string used as ``ir.Call.callee``. This module owns
the list of intrinsic names and, in ``OPS``, one ``OpInfo`` per intrinsic: its side effects
(skipped when the backward pass replays the forward), whether it reads or writes the array it is
given first, and its adjoint rule (when it has a reverse contribution). An intrinsic without an
entry is an error wherever its facts are asked for, never a silent default. Also the
Python-builtin -> weft mapping used by name resolution.
"""

from __future__ import annotations

import builtins as _py
import dataclasses
from collections.abc import Callable

from .. import types as wt
from ..builtins import scalar as sb

LOAD = "load"
STORE = "store"
CAST = "cast"
PHI = "phi"
TID = "tid"
SHAPE = "shape"
ZERO = "zero"
LOGICAL_AND = "logical_and"
LOGICAL_OR = "logical_or"
TUPLE_MAKE = "make_tuple"
TUPLE_GET = "tuple_get"
PRINT_VALUE = "print_value"
PRINT_STR = "print_str"
PRINT_NEWLINE = "print_newline"
PRINTF = "printf"
INDEXED_DATA = "indexed_data"  # an indexed array's data array (its loads and stores are the indexed array's)
INDEXED_INDEX = "indexed_index"  # attr d: index i of dimension d of an indexed array, as a data index
INDEXED_VIEW = "indexed_view"  # a[i] of an indexed array with more dimensions: the indexed subarray
ARRAY_SLICE = "array_slice"  # a[i, 1:n:2] in a kernel: attr ((kind, given bounds) per entry); args start, stop, step each
FABRIC_ELEMENT = "fabric_element"  # a[i] of a Fabric array: a one-element view (its loads and stores are a's)
FABRIC_ROW = "fabric_row"  # a[i] of a Fabric array of arrays: the inner array
FABRIC_SIZE = "fabric_size"  # a.size of a Fabric array (uint64, as in Warp)
ARRAY_VIEW = "array_view"  # a[i] of a 2-D+ array: the subarray (shares memory and gradient)
ARRAY_PTR = "array_ptr"  # a.ptr: the address of element 0, as a uint64
ARRAY_FROM_PTR = "array_from_ptr"  # wp.array(ptr=p, shape=(n, m), dtype=T): a contiguous array over memory at p
LOCAL_STORAGE = "local_storage"  # wp.zeros(shape, dtype) in a kernel: zeroed storage (a FixedArrayType value)
LOCAL_VIEW = "local_view"  # the array (LocalArrayType) over a local storage var
GRAD_CALL = "grad_call"  # wp.grad(f)(args): attr (callee, result type); forward-only
BIT_CAST = "bit_cast"  # wp.cast(x, dtype): the same bytes read as another type of the same size
ASSERT = "assert"  # debug builds: a false condition ends the launch with an AssertionError
CONSTRUCT = "construct"  # attr: C++ constructor name, templated on the result type
EXTRACT = "extract"
ASSIGN_COPY = "assign_copy"
GET_FIELD = "get_field"  # attr: (struct type, field name)
SET_FIELD = "set_field"
ADJ_READ = "adj_read"  # wp.adjoint[x] or wp.adjoint[x.field] in @wp.func_grad; attr: (parameter index, C++ field path)
ADJ_ACCUM = "adj_accum"
ADJ_SET = "adj_set"
# forward mode (codegen/tangent.py): the tangent of a builtin or func call from its adjoint; attr
# (callee, positions of the operands with tangents); args: the call's operands, then those tangents
JVP_ADJOINT = "jvp_adjoint"
ATOMICS = {
    "atomic_add": "atomic_add",
    "atomic_sub": "atomic_sub",
    "atomic_min": "atomic_min",
    "atomic_max": "atomic_max",
    "atomic_exch": "atomic_exch",
    "atomic_and": "atomic_and",
    "atomic_or": "atomic_or",
    "atomic_xor": "atomic_xor",
}
DIFFERENTIABLE_ATOMICS = ("atomic_add", "atomic_sub", "atomic_min", "atomic_max")
BITWISE_ATOMICS = ("atomic_and", "atomic_or", "atomic_xor")
ATOMIC_CAS = "atomic_cas"  # wp.atomic_cas(arr, i..., compare, value): args arr, indices, compare, value
COPY = "copy"  # a copy of a value with storage of its own (codegen/address.py)
ADDRESS_OF_LOCAL = "address_of_local"  # wp.address_of(x.path): args var, component indices; attr steps
ADDRESS_OF_ELEMENT = "address_of_element"  # wp.address_of(a[i].path): args array, indices, component indices
TILE_MAP = "tile_map"  # an element-wise tile operation; attr: tile_calls.ElementOp (the tiles among args, the op)
TILE_REDUCE = "tile_reduce"  # a tile folded by an element operation (attr: tile_calls.ElementOp); no gradient

@dataclasses.dataclass(frozen=True)
class OpInfo:
    """What one intrinsic does, declared once.

    Attributes:
        adjoint: ``(call) -> bool``: whether the call has a reverse contribution (its adjoint is
            rendered); a rule reads types only.
        side_effect: writes memory or prints (skipped when a backward pass replays the forward,
            unless ``replayed``).
        reads_array: reads elements of the array given as its first argument.
        writes_array: writes elements of that array.
        replayed: a side effect the backward pass's replay repeats (printing, as Warp's does).
    """

    adjoint: Callable
    side_effect: bool = False
    reads_array: bool = False
    writes_array: bool = False
    replayed: bool = False


def _never(call) -> bool:
    return False


def operands_differentiable(call) -> bool:
    """A value-level op contributes when one of its operands or its result carries a gradient."""
    return any(v is not None and wt.is_differentiable(v.type) for v in [*call.args, call.result])


def _array_dtype(call) -> bool:
    """An array access contributes when the array's elements carry gradients (a local array's
    never do: it has no gradient buffer)."""
    arr = call.args[0].type
    return wt.is_differentiable(arr.dtype) and not isinstance(arr, wt.LocalArrayType)


def _cast(call) -> bool:
    return wt.is_differentiable(call.result.type) and wt.is_differentiable(call.args[0].type)


def _second_derivative(call) -> bool:
    name = getattr(call.attr[0], "symbol", call.attr[0])
    raise NotImplementedError(
        f"second derivatives through '{name}' are not available: forward mode takes its tangent from its "
        "adjoint, which has no adjoint of its own (wp.autograd.hvp needs a forward rule in codegen/tangent_rules.py)"
    )


def _phi(call) -> bool:
    return wt.is_differentiable(call.result.type)


_PRINT = OpInfo(_never, side_effect=True, replayed=True)
OPS: dict = {
    LOAD: OpInfo(_array_dtype, reads_array=True),
    STORE: OpInfo(_array_dtype, side_effect=True, writes_array=True),
    **{
        name: OpInfo(_array_dtype if name in DIFFERENTIABLE_ATOMICS else _never, side_effect=True, reads_array=True, writes_array=True)
        for name in ATOMICS.values()
    },
    ATOMIC_CAS: OpInfo(_never, side_effect=True, reads_array=True, writes_array=True),
    COPY: OpInfo(operands_differentiable),
    ADDRESS_OF_LOCAL: OpInfo(_never),
    # a snippet may read and write the element through the address
    ADDRESS_OF_ELEMENT: OpInfo(_never, reads_array=True, writes_array=True),
    TILE_MAP: OpInfo(lambda call: call.attr.differentiable and operands_differentiable(call)),
    TILE_REDUCE: OpInfo(_never),
    CAST: OpInfo(_cast),
    PHI: OpInfo(_phi),
    TUPLE_MAKE: OpInfo(operands_differentiable),
    TUPLE_GET: OpInfo(operands_differentiable),
    CONSTRUCT: OpInfo(operands_differentiable),
    EXTRACT: OpInfo(operands_differentiable),
    ASSIGN_COPY: OpInfo(operands_differentiable),
    GET_FIELD: OpInfo(operands_differentiable),
    SET_FIELD: OpInfo(operands_differentiable),
    TID: OpInfo(_never),
    SHAPE: OpInfo(_never),
    ZERO: OpInfo(_never),
    LOGICAL_AND: OpInfo(_never),
    LOGICAL_OR: OpInfo(_never),
    ADJ_READ: OpInfo(_never),
    ADJ_ACCUM: OpInfo(_never),
    ADJ_SET: OpInfo(_never),
    JVP_ADJOINT: OpInfo(_second_derivative),
    PRINT_VALUE: OpInfo(operands_differentiable, side_effect=True, replayed=True),  # reverse prints "adj: <adjoint>"
    PRINT_STR: _PRINT,
    PRINT_NEWLINE: _PRINT,
    PRINTF: _PRINT,
    ASSERT: OpInfo(_never, side_effect=True),
    BIT_CAST: OpInfo(_never),
    GRAD_CALL: OpInfo(_never),  # as in Warp: a constant for the backward pass
    INDEXED_DATA: OpInfo(_never),
    INDEXED_INDEX: OpInfo(_never),
    INDEXED_VIEW: OpInfo(_never),
    FABRIC_ELEMENT: OpInfo(_never),
    FABRIC_ROW: OpInfo(_never),
    FABRIC_SIZE: OpInfo(_never),
    ARRAY_VIEW: OpInfo(_never),
    ARRAY_SLICE: OpInfo(_never),  # its loads and stores are the view's, attributed to the array (access.py)
    ARRAY_PTR: OpInfo(_never),
    ARRAY_FROM_PTR: OpInfo(_never),  # no gradient buffer: its loads and stores take no gradient
    LOCAL_STORAGE: OpInfo(_never),
    LOCAL_VIEW: OpInfo(_never),
}


def op_info(name: str) -> OpInfo:
    """The ``OpInfo`` of an intrinsic.

    Raises:
        NotImplementedError: the intrinsic has no entry in ``OPS`` (named in the message).
    """
    info = OPS.get(name)
    if info is None:
        raise NotImplementedError(f"intrinsic '{name}' has no OpInfo (effects, array access, adjoint rule)")
    return info


def has_side_effect(callee) -> bool:
    """Whether a call writes memory or prints (an intrinsic, a builtin or a user func)."""
    from . import ir

    if ir.is_intrinsic(callee):
        return op_info(callee).side_effect
    if ir.is_builtin(callee):
        return callee.side_effect
    ir.check_callee(callee)
    return callee.has_side_effects


def replayed(stmt) -> bool:
    """Whether the backward pass's replay of the forward runs this side-effecting call anyway:
    prints (as in Warp) and writes to a kernel's own local arrays (their values are read again)."""
    return isinstance(stmt.callee, str) and (op_info(stmt.callee).replayed or writes_local_array(stmt))


def writes_local_array(stmt) -> bool:
    """Whether a call stores into an array over a kernel's or func's own storage (``wp.zeros`` in
    a kernel): the backward pass replays those writes, as the values it recomputes read them."""
    from .. import types as wt

    return (
        isinstance(stmt.callee, str)
        and op_info(stmt.callee).writes_array
        and bool(stmt.args)
        and isinstance(stmt.args[0].type, wt.LocalArrayType)
    )


def is_atomic(callee) -> bool:
    """An atomic intrinsic: ``wp.atomic_add`` ... ``atomic_xor`` or ``atomic_cas``."""
    return callee == ATOMIC_CAS or (isinstance(callee, str) and callee in ATOMICS)


def reads_array(callee) -> bool:
    """An intrinsic (or a tile operation's overload, ``array_access``) that reads the array given
    as its first argument."""
    if isinstance(callee, str):
        return op_info(callee).reads_array
    return getattr(callee, "array_access", None) in ("read", "update")


def writes_array(callee) -> bool:
    """An intrinsic (or a tile operation's overload) that writes the array given as its first
    argument."""
    if isinstance(callee, str):
        return op_info(callee).writes_array
    return getattr(callee, "array_access", None) in ("write", "update")


# ---------------------------------------------------------------------------------------------
# Public objects. Outside kernels they either evaluate in Python or explain where they work.


def _kernel_only(name):
    def fn(*args, **kwargs):
        raise RuntimeError(f"wp.{name}() can only be called inside a @wp.kernel or @wp.func")

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = f"Kernel intrinsic ``{name}``; valid only inside kernels and funcs."
    return fn


tid = _kernel_only("tid")
tid.__doc__ = """tid()

    The index of the current thread of a launch (kernels and the funcs they call).

    Returns:
        An ``int`` for a 1-D launch; a tuple of 2 to 4 ints for a launch over a 2-D to 4-D ``dim``
        (``i, j = wp.tid()``).

    Example:
        >>> @wp.kernel
        ... def fill(a: wp.array2d(dtype=float)):
        ...     i, j = wp.tid()
        ...     a[i, j] = float(i * 10 + j)
    """
grad = _kernel_only("grad")
grad.__doc__ = """grad(f)

    The gradient of a func or builtin with a scalar result, callable in kernels and funcs:
    ``wp.grad(f)(x, y)`` evaluates ``f``'s adjoint at ``(x, y)`` with an output gradient of 1.

    Args:
        f: a ``@wp.func`` or builtin with a scalar result.

    Returns:
        A callable taking ``f``'s arguments and returning the gradient with respect to each (one
        value, or a tuple for several); the backward pass treats it as a constant.
    """


class GradOf:
    """What ``wp.grad(f)`` names in a kernel: a call of it evaluates ``f``'s adjoint."""

    __slots__ = ("target",)

    def __init__(self, target):
        self.target = target


cast = _kernel_only("cast")
cast.__doc__ = """cast(value, dtype)

    Reinterpret a value's bytes as another type of the same size (kernels only; no gradient passes).

    Args:
        value: a scalar, vector or matrix value.
        dtype: the type to read its bytes as (``wp.float32`` for an ``int32`` value, ...).

    Returns:
        A value of type ``dtype`` with the same bits.

    Example:
        ``bits = wp.cast(x, wp.uint32)`` in a kernel.
    """
print_value = _kernel_only("print")
print_value.__doc__ = """print(value)

    Print one value and a newline from a kernel, as Python's ``print(value)`` does (``print(x)``
    in a kernel works too). On a GPU the output appears when the device synchronises.

    Args:
        value: a scalar, vector, matrix, quaternion, transform or struct value.
    """
printf = _kernel_only("printf")
printf.__doc__ = """printf(fmt, *args)

    Formatted printing from a kernel, as C's ``printf``: ``wp.printf("%d %f\\n", i, x)``.

    Args:
        fmt: a string literal with C conversions (``%d``, ``%f``, ``%g``...).
        *args: scalar values, one per conversion.
    """
atomic_add = _kernel_only("atomic_add")
atomic_add.__doc__ = """atomic_add(arr, i, value)
atomic_add(arr, i, j, value)
atomic_add(arr, i, j, k, value)
atomic_add(arr, i, j, k, l, value)

    Atomically add ``value`` to ``arr[i, ...]``; differentiable.

    Threads that update the same element at once all take effect, in some order.

    Args:
        arr: an array (any kind: array, indexed or Fabric array) of a scalar, vector or matrix type.
        i: the index along each of the array's dimensions (one to four indices).
        value: a value of the array's element type.

    Returns:
        The element's value before the operation.

    Example:
        ``old = wp.atomic_add(counts, bucket, 1)`` in a kernel.
    """
atomic_sub = _kernel_only("atomic_sub")
atomic_sub.__doc__ = """atomic_sub(arr, i, value)
atomic_sub(arr, i, j, value)
atomic_sub(arr, i, j, k, value)
atomic_sub(arr, i, j, k, l, value)

    Atomically subtract ``value`` from ``arr[i, ...]``; differentiable.

    Threads that update the same element at once all take effect, in some order.

    Args:
        arr: an array (any kind: array, indexed or Fabric array) of a scalar, vector or matrix type.
        i: the index along each of the array's dimensions (one to four indices).
        value: a value of the array's element type.

    Returns:
        The element's value before the operation.

    Example:
        ``old = wp.atomic_sub(counts, bucket, 1)`` in a kernel.
    """
atomic_min = _kernel_only("atomic_min")
atomic_min.__doc__ = """atomic_min(arr, i, value)
atomic_min(arr, i, j, value)
atomic_min(arr, i, j, k, value)
atomic_min(arr, i, j, k, l, value)

    Atomically store ``min(arr[i, ...], value)`` (component-wise for vectors).

    Threads that update the same element at once all take effect, in some order.

    Args:
        arr: an array (any kind: array, indexed or Fabric array) of a scalar, vector or matrix type.
        i: the index along each of the array's dimensions (one to four indices).
        value: a value of the array's element type.

    Returns:
        The element's value before the operation.

    Example:
        ``old = wp.atomic_min(counts, bucket, 1)`` in a kernel.
    """
atomic_max = _kernel_only("atomic_max")
atomic_max.__doc__ = """atomic_max(arr, i, value)
atomic_max(arr, i, j, value)
atomic_max(arr, i, j, k, value)
atomic_max(arr, i, j, k, l, value)

    Atomically store ``max(arr[i, ...], value)`` (component-wise for vectors).

    Threads that update the same element at once all take effect, in some order.

    Args:
        arr: an array (any kind: array, indexed or Fabric array) of a scalar, vector or matrix type.
        i: the index along each of the array's dimensions (one to four indices).
        value: a value of the array's element type.

    Returns:
        The element's value before the operation.

    Example:
        ``old = wp.atomic_max(counts, bucket, 1)`` in a kernel.
    """
atomic_exch = _kernel_only("atomic_exch")
atomic_exch.__doc__ = """atomic_exch(arr, i, value)
atomic_exch(arr, i, j, value)
atomic_exch(arr, i, j, k, value)
atomic_exch(arr, i, j, k, l, value)

    Atomically store ``value`` in ``arr[i, ...]`` (no gradient).

    Threads that update the same element at once all take effect, in some order.

    Args:
        arr: an array (any kind: array, indexed or Fabric array) of a scalar, vector or matrix type.
        i: the index along each of the array's dimensions (one to four indices).
        value: a value of the array's element type.

    Returns:
        The element's value before the operation.

    Example:
        ``old = wp.atomic_exch(counts, bucket, 1)`` in a kernel.
    """
atomic_cas = _kernel_only("atomic_cas")
atomic_cas.__doc__ = """atomic_cas(arr, i, compare, value)
atomic_cas(arr, i, j, compare, value)
atomic_cas(arr, i, j, k, compare, value)
atomic_cas(arr, i, j, k, l, compare, value)

    Atomic compare-and-swap: store ``value`` in ``arr[i, ...]`` if the element holds ``compare``
    (compared bit for bit); no gradient.

    Args:
        arr: an array of a scalar type.
        i: the index along each of the array's dimensions (one to four indices).
        compare: the value the element must hold for the store to happen.
        value: the value to store.

    Returns:
        The element's value before the operation (equal to ``compare`` when the store happened).
    """
atomic_and = _kernel_only("atomic_and")
atomic_and.__doc__ = """atomic_and(arr, i, value)
atomic_and(arr, i, j, value)
atomic_and(arr, i, j, k, value)
atomic_and(arr, i, j, k, l, value)

    Atomically store ``arr[i, ...] & value`` (integer types; no gradient).

    Threads that update the same element at once all take effect, in some order.

    Args:
        arr: an array (any kind: array, indexed or Fabric array) of a scalar, vector or matrix type.
        i: the index along each of the array's dimensions (one to four indices).
        value: a value of the array's element type.

    Returns:
        The element's value before the operation.

    Example:
        ``old = wp.atomic_and(counts, bucket, 1)`` in a kernel.
    """
atomic_or = _kernel_only("atomic_or")
atomic_or.__doc__ = """atomic_or(arr, i, value)
atomic_or(arr, i, j, value)
atomic_or(arr, i, j, k, value)
atomic_or(arr, i, j, k, l, value)

    Atomically store ``arr[i, ...] | value`` (integer types; no gradient).

    Threads that update the same element at once all take effect, in some order.

    Args:
        arr: an array (any kind: array, indexed or Fabric array) of a scalar, vector or matrix type.
        i: the index along each of the array's dimensions (one to four indices).
        value: a value of the array's element type.

    Returns:
        The element's value before the operation.

    Example:
        ``old = wp.atomic_or(counts, bucket, 1)`` in a kernel.
    """
atomic_xor = _kernel_only("atomic_xor")
atomic_xor.__doc__ = """atomic_xor(arr, i, value)
atomic_xor(arr, i, j, value)
atomic_xor(arr, i, j, k, value)
atomic_xor(arr, i, j, k, l, value)

    Atomically store ``arr[i, ...] ^ value`` (integer types; no gradient).

    Threads that update the same element at once all take effect, in some order.

    Args:
        arr: an array (any kind: array, indexed or Fabric array) of a scalar, vector or matrix type.
        i: the index along each of the array's dimensions (one to four indices).
        value: a value of the array's element type.

    Returns:
        The element's value before the operation.

    Example:
        ``old = wp.atomic_xor(counts, bucket, 1)`` in a kernel.
    """
address_of = _kernel_only("address_of")
address_of.__doc__ = (
    "The address of a local variable, array element, struct field or vector/matrix component as a "
    "``uint64``, for ``@wp.func_native`` snippets that read or write through it: "
    "``set_value(wp.address_of(a[i]))``. Writes through it are seen by later reads of the "
    "variable (kernels only; no gradient)."
)


class _Adjoint:
    """``wp.adjoint[x]``: inside a ``@wp.func_grad`` body, the adjoint (gradient) of forward parameter
    ``x``, to accumulate into (``wp.adjoint[x] += ...``); ``wp.adjoint[s.field]`` for a struct field,
    ``wp.adjoint[a]`` the gradient array of an array parameter ``a``."""

    def __getitem__(self, key):
        raise RuntimeError("wp.adjoint[...] can only be used inside a @wp.func_grad function")

    def __repr__(self):
        return "wp.adjoint"


adjoint = _Adjoint()


def static(expr):
    """Evaluate ``expr`` when the kernel is built, not when it runs.

    In a kernel, ``wp.static(expr)`` evaluates the Python expression with the kernel's globals and
    closure and uses the result as a constant: a number, a func to call, a loop bound to unroll.

    Args:
        expr: any Python expression whose value kernels can use.

    Returns:
        ``expr`` itself, when called from Python.

    Example:
        ``for i in range(wp.static(n)):`` unrolls a loop over a captured ``n``.
    """
    return expr


def constant(x):
    """Mark a global as a compile-time constant captured by kernels; returns ``x``.

    Raises:
        TypeError: ``x`` is not a value kernels can hold (a bool, int or float, a weft scalar,
            vector, matrix, quaternion or transform, or a struct instance).
    """
    from .. import vector_types as vt

    if not (
        isinstance(x, (_py.bool, _py.int, _py.float, wt.scalar_base))
        or vt.is_composite(type(x))
        or getattr(type(x), "_weft_struct_instance", False)
    ):
        raise TypeError(f"Invalid constant type: {type(x)}")
    return x


# Python builtins that mean a weft builtin inside kernels (resolved by value).
python_builtin_map = {
    id(obj): (obj, target)
    for obj, target in (
        (_py.min, sb.min),
        (_py.max, sb.max),
        (_py.abs, sb.abs),
        (_py.round, sb.round),
        (_py.pow, sb.pow),
        (_py.float, wt.float32),
        (_py.int, wt.int32),
        (_py.bool, wt.bool),
    )
}
