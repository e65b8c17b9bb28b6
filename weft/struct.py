"""``@wp.struct``: user-defined records of scalars, composites, arrays and nested structs.

Contract: ``struct(cls)`` returns a ``Struct`` type object. It is the kernel-side type (used as
an annotation and in the IR), it builds Python instances (``Params()``), it owns the ctypes
mirror used to pass instances to kernels by value, a NumPy structured dtype for arrays of
structs, and the C++ definition (``cname`` + ``cpp_definition()``). Field order is the class's
annotation order. Array fields carry their gradient pointers inside the C++ struct, so the
backward pass of a kernel taking a struct reaches ``field.grad`` without an adjoint struct.
"""

from __future__ import annotations

import ctypes
import hashlib
import inspect
from typing import Any

import numpy as np

from . import types as wt
from . import vector_types as vt


def _field_type(t):
    from .codegen import typing_rules as tr

    kt = tr.annotation_type(t)
    if kt is None and isinstance(t, Struct):
        kt = t
    if kt is None:
        raise TypeError(f"unsupported struct field type {t!r}")
    return kt


def _field_ctype(t):
    return wt.descriptor_ctype(t) or t.ctype


def _cpp_type(t):
    from .codegen.cnames import ctype_name

    return ctype_name(t)


def _field_np_dtype(t):
    if isinstance(t, Struct):
        return t.np_dtype
    if vt.is_composite(t):
        return np.dtype((t._scalar.np_dtype, t._shape))
    if wt.is_array_like(t):
        return np.dtype((np.void, ctypes.sizeof(_field_ctype(t))))
    return t.np_dtype


class StructInstance:
    """A Python-side struct value. Fields are attributes; arrays are held by reference."""

    __slots__ = ("_struct", "_values")
    _weft_struct_instance = True  # what wp.constant and other codegen-side checks look for

    def __init__(self, struct, **fields):
        object.__setattr__(self, "_struct", struct)
        object.__setattr__(self, "_values", {n: struct._default(t) for n, t in struct.vars.items()})
        for k, v in fields.items():
            setattr(self, k, v)

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"struct {self._struct.key} has no field '{name}'")

    def __setattr__(self, name, value):
        struct = self._struct
        if name not in struct.vars:
            raise AttributeError(f"struct {struct.key} has no field '{name}' (fields: {', '.join(struct.vars)})")
        self._values[name] = struct._convert(name, struct.vars[name], value)

    def _ctype(self):
        """The ctypes mirror filled from the current field values."""
        c = self._struct.ctype()
        for name, t in self._struct.vars.items():
            v = self._values[name]
            if wt.is_array_like(t):
                if v is not None:
                    setattr(c, name, v.__ctype__())
            elif isinstance(t, Struct):
                setattr(c, name, v._ctype())
            elif vt.is_composite(t):
                setattr(c, name, v)
            elif wt.is_bit_stored(t):
                setattr(c, name, t.to_bits(v))
            else:
                setattr(c, name, v)
        return c

    def __ctype__(self):
        """The ctypes mirror filled from the current field values (Warp's name for ``_ctype``)."""
        return self._ctype()

    def numpy_value(self) -> tuple:
        """This instance as a NumPy record value (a tuple in field order, arrays as their
        descriptor bytes): ``np.array([s.numpy_value()], dtype=S.numpy_dtype())``."""
        return np.frombuffer(bytes(self._ctype()), dtype=self._struct.np_dtype)[0].item()

    def arrays(self):
        """Every array reachable through this struct's fields (nested structs included)."""
        out = []
        for name, t in self._struct.vars.items():
            v = self._values[name]
            if wt.is_array_like(t) and v is not None:
                out.append(v)
            elif isinstance(t, Struct):
                out.extend(v.arrays())
        return out

    def gradients(self):
        """A new instance of this struct whose array fields are those arrays' gradients (None where
        an array has none), nested structs alike; other fields keep their defaults. It is what
        ``tape.gradients[instance]`` holds after a launch took this instance."""
        g = StructInstance(self._struct)
        for name, t in self._struct.vars.items():
            v = self._values[name]
            if wt.is_array_like(t) and v is not None:
                g._values[name] = v.grad
            elif isinstance(t, Struct):
                g._values[name] = v.gradients()
        return g

    def to(self, device) -> StructInstance:
        """This struct with its arrays on ``device``: the same instance's values when they are
        all there already (array fields keep the very same arrays), else a new instance whose
        ``wp.array`` fields are copies on ``device`` (nested structs alike).

        Raises:
            ValueError: an indexed or Fabric array field would have to move: such views cannot
                be copied to another device (copy their elements with ``contiguous()``).
        """
        from .runtime.device import get_device

        device = get_device(device)
        out = StructInstance.__new__(type(self))
        object.__setattr__(out, "_struct", self._struct)
        values = {}
        for name, t in self._struct.vars.items():
            v = self._values[name]
            if isinstance(t, Struct):
                v = v.to(device)
            elif wt.is_array_like(t) and v is not None and v.device != device:
                if not isinstance(t, wt.ArrayType):
                    raise ValueError(
                        f"Cannot move struct field '{name}' containing a Warp {_KIND_WORDS[type(t)]} from "
                        f"{v.device} to {device} (struct {self._struct.key}); copy its elements with contiguous()"
                    )
                v = v.to(device)
            values[name] = v
        object.__setattr__(out, "_values", values)
        return out

    def __repr__(self):
        parts = ", ".join(f"{n}={self._values[n]!r}" for n in self._struct.vars)
        return f"{self._struct.key}({parts})"


_KIND_WORDS = {
    wt.ArrayType: "array",
    wt.IndexedArrayType: "indexed array",
    wt.FabricArrayType: "Fabric array",
    wt.IndexedFabricArrayType: "indexed Fabric array",
}


def _fabric_from_descriptor(raw: bytes, t, device):
    """The Fabric array (or indexed Fabric array) a descriptor in a struct record describes, over
    the same buckets and indices (nothing copied), or None for a null one."""
    from .array import array
    from .fabric_array import fabricarray, indexedfabricarray

    if isinstance(t, wt.FabricArrayType):
        d = wt.fabricarray_t.from_buffer_copy(raw)
        return fabricarray._from_descriptor(d, t.dtype, t.ndim, device) if d.buckets or d.size else None
    d = wt.indexedfabricarray_t.from_buffer_copy(raw)
    if not d.indices:
        return None
    fa = fabricarray._from_descriptor(d.fa, t.dtype, t.ndim, device)
    return indexedfabricarray(fa, array(ptr=d.indices, dtype=wt.int32, shape=(int(d.size),), device=device))


def _array_from_descriptor(raw: bytes, t, device):
    """The array an ``array_t`` descriptor (its bytes in a struct record) describes, or None."""
    from .array import array

    d = wt.array_t.from_buffer_copy(raw)
    if not d.data or d.ndim != t.ndim:
        return None
    shape = tuple(d.shape[k] for k in range(d.ndim))
    strides = tuple(d.strides[k] for k in range(d.ndim))
    return array(ptr=d.data, dtype=t.dtype, shape=shape, strides=strides, device=device)


class Struct:
    """The type made by ``@wp.struct``; call it to create instances."""

    _kind = "struct"

    def __init__(self, cls):
        self.cls = cls
        self.key = cls.__qualname__
        self.__name__ = cls.__name__
        self.__doc__ = cls.__doc__
        self.__module__ = cls.__module__
        annotations = inspect.get_annotations(cls, eval_str=True)
        self.vars = {name: _field_type(t) for name, t in annotations.items()}
        digest = hashlib.sha256(repr([(n, repr(t), getattr(t, "cname", "")) for n, t in self.vars.items()]).encode())
        self.cname = f"{''.join(ch if ch.isalnum() else '_' for ch in cls.__name__)}_{digest.hexdigest()[:7]}"
        self._cname = self.cname
        fields = [(n, _field_ctype(t)) for n, t in self.vars.items()]
        # an empty C++ struct takes one byte (and so does each empty field of another struct)
        self.ctype = type(self.cname, (ctypes.Structure,), {"_fields_": fields or [("_empty", ctypes.c_uint8)]})
        self.size = ctypes.sizeof(self.ctype)
        self._differentiable = any(
            getattr(t, "_differentiable", False) or wt.is_float(t) or isinstance(t, Struct) and t._differentiable
            for t in self.vars.values()
        )
        self._shape = ()
        self._scalar = self
        self.instance_type = self._make_instance_type(cls)

    # arrays of structs read these (see array._np_layout)
    @property
    def np_dtype(self):
        """The NumPy record dtype of one instance: the C layout, with scalar fields of their NumPy
        type, vector / matrix fields as sub-arrays of their shape (``m33`` is (3, 3)), nested
        structs as records, and array fields as opaque bytes."""
        names, formats, offsets = [], [], []
        for name, t in self.vars.items():
            names.append(name)
            offsets.append(getattr(self.ctype, name).offset)
            formats.append(_field_np_dtype(t))
        return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": ctypes.sizeof(self.ctype)})

    def __call__(self, **fields):
        return self.instance_type(self, **fields)

    def _make_instance_type(self, cls):
        """The class of this struct's instances: a ``StructInstance`` that is also an instance of
        the decorated class (``isinstance(s, S.cls)``, its Python methods callable), with a
        property per field so that class-level defaults never shadow the instance's values."""

        def field(name):
            return property(lambda inst: inst._values[name], lambda inst, v: StructInstance.__setattr__(inst, name, v))

        namespace = {n: field(n) for n in self.vars}
        namespace.update(__slots__=(), __module__=cls.__module__, __qualname__=cls.__qualname__, __doc__=cls.__doc__)
        try:
            return type(cls.__name__, (StructInstance, cls), namespace)
        except TypeError:  # a class whose layout cannot be combined (its own __slots__): plain instances
            return type(cls.__name__, (StructInstance,), namespace)

    def __mro_entries__(self, bases):
        """``class Child(SomeStruct)`` is refused: structs do not inherit (as in Warp)."""
        raise RuntimeError(
            f"struct {self.key} cannot be inherited from; declare every field in one class: "
            "Warp structs must be defined as base classes"
        )

    def numpy_dtype(self) -> dict:
        """The layout of ``np_dtype`` as the dict NumPy builds it from (``names``, ``formats``,
        ``offsets``, ``itemsize``), as Warp returns it: ``np.dtype(S.numpy_dtype())``."""
        d = self.np_dtype
        return {
            "names": list(d.names),
            "formats": [d.fields[n][0] for n in d.names],
            "offsets": [d.fields[n][1] for n in d.names],
            "itemsize": d.itemsize,
        }

    def from_record(self, record, device=None) -> StructInstance:
        """An instance holding the values of one element of a NumPy array of this struct
        (``a.numpy()[i]``). A plain array field becomes an array over the memory its descriptor
        points to, on ``device`` (the struct array's; nothing is copied and its owner must stay
        alive, as in Warp); a null one, or an indexed array field, is None."""
        inst = self.instance_type(self)
        for name, t in self.vars.items():
            v = record[name]
            if wt.is_array_like(t):
                if isinstance(t, wt.ArrayType):
                    setattr(inst, name, _array_from_descriptor(bytes(np.asarray(v)), t, device))
                elif wt.is_fabric(t):
                    setattr(inst, name, _fabric_from_descriptor(bytes(np.asarray(v)), t, device))
                continue
            if isinstance(t, Struct):
                value = t.from_record(v, device)
            elif vt.is_composite(t):
                value = t(*np.asarray(v).reshape(-1).tolist())
            elif wt.is_bit_stored(t):
                value = t.from_bits(int(np.asarray(v).view(np.uint16)))
            else:
                value = np.asarray(v).item()
            setattr(inst, name, value)
        return inst

    def _default(self, t):
        if wt.is_array_like(t):
            return None
        if isinstance(t, Struct):
            return t()
        if vt.is_composite(t):
            return t()
        return t.np_dtype.type(0).item()

    def _convert(self, name, t, value):
        if wt.is_array_like(t):
            return self._convert_array(name, t, value)
        if isinstance(t, Struct):
            if not isinstance(value, StructInstance) or value._struct is not t:
                raise TypeError(f"struct {self.key} field '{name}' expects a {t.key} instance")
            return value
        if vt.is_composite(t):
            if value is None:
                return t()  # zeros, as in Warp
            if isinstance(value, (int, float, bool, np.number, np.bool_, wt.scalar_base)):  # no silent fill
                raise TypeError(
                    f"Struct field '{name}' expects {t.__name__} but got a single value ({value!r}); "
                    f"pass {t.__name__}(...) or a sequence of {t._length_} values (struct {self.key})"
                )
            return value if isinstance(value, t) else t(value)
        if isinstance(value, wt.scalar_base):
            value = value.value
        # Like Warp: a number is required, and an int field does not silently truncate a float.
        if not isinstance(value, (int, float, bool, np.number, np.bool_)):
            raise TypeError(f"struct {self.key} field '{name}' expects a number, got {type(value).__name__}")
        if wt.is_int(t) and isinstance(value, (float, np.floating)):
            raise TypeError(f"struct {self.key} field '{name}' is {t.cname}, cannot assign the float {value!r}")
        return t._convert(value)  # the scalar type's own conversion (bfloat16 rounds, whatever its NumPy dtype)

    def _convert_array(self, name, t, value):
        """Check an array assigned to an array field: kind, dtype and dimensions, as Warp words it."""
        if value is None:
            return None
        kind = _KIND_WORDS[type(t)]
        kt = value.kernel_type() if callable(getattr(value, "kernel_type", None)) else None
        if type(kt) is not type(t):
            got = type(value).__name__
            raise TypeError(f"Struct field '{name}' expects a Warp {kind}, got {got} (struct {self.key})")
        if t.dtype is not Any and kt.dtype != t.dtype:
            raise TypeError(
                f"Struct field '{name}' expects dtype {wt.type_repr(t.dtype)}, got {wt.type_repr(kt.dtype)} "
                f"(struct {self.key})"
            )
        if t.ndim is not Any and kt.ndim != t.ndim:
            raise TypeError(
                f"Struct field '{name}' expects an array with {t.ndim} dimension(s), got {kt.ndim} dimension(s) "
                f"(struct {self.key})"
            )
        return value

    def cpp_definition(self) -> str:
        # Fields are prefixed so that names like `do` or `new` cannot clash with C++.
        fields = "\n".join(f"    {_cpp_type(t)} f_{n};" for n, t in self.vars.items())
        acc = "\n".join(f"    weft::accumulate_field(a.f_{n}, b.f_{n});" for n in self.vars)
        # the gradient of a read of an element other threads may read too: field by field
        atomic = "\n".join(
            f"    atomic_add_raw(&p->f_{n}, v.f_{n});"
            for n, t in self.vars.items()
            if not wt.is_array_like(t) and t is not wt.bool
        )
        return (
            f"struct {self.cname} {{\n{fields}\n}};\n"
            f"WEFT_FN {self.cname}& operator+=({self.cname}& a, const {self.cname}& b) {{\n{acc}\n    return a;\n}}\n"
            f"WEFT_FN {self.cname} atomic_add_raw({self.cname}* p, {self.cname} v) {{\n"
            f"    using weft::atomic_add_raw;\n{atomic}\n    return {self.cname}{{}};\n}}\n"
            + _SELECT_ADJOINTS.replace("STRUCT", self.cname)
            + self._fieldwise_cpp()
        )

    def _fieldwise_cpp(self) -> str:
        """``weft::add`` / ``weft::sub`` of two structs, field by field, with their adjoints (the
        element operations of ``+`` and ``-`` on tiles of structs)."""
        c = self.cname
        out = ["", "namespace weft {"]
        for op in ("add", "sub"):
            # a nested struct's own add/sub (declared before this one), found by ordinary lookup
            fn = {n: op if isinstance(t, Struct) else f"field_{op}" for n, t in self.vars.items()}
            sets = "".join(f" r.f_{n} = {fn[n]}(a.f_{n}, b.f_{n});" for n in self.vars)
            adjs = "".join(f" adj_{fn[n]}(a.f_{n}, b.f_{n}, adj_a.f_{n}, adj_b.f_{n}, adj_ret.f_{n});" for n in self.vars)
            out.append(f"WEFT_FN {c} {op}(const {c}& a, const {c}& b) {{ {c} r = a;{sets} return r; }}")
            out.append(
                f"WEFT_FN void adj_{op}(const {c}& a, const {c}& b, {c}& adj_a, {c}& adj_b, const {c}& adj_ret) {{{adjs} }}"
            )
        out.append("}  // namespace weft")
        return "\n".join(out) + "\n"

    def dependencies(self) -> list:
        """The struct types this one's C++ definition needs first (nested structs, element types
        of array fields), innermost first."""
        out = []
        for t in self.vars.values():
            if wt.is_array_like(t):
                t = t.dtype
            if isinstance(t, Struct):
                out.extend(t.dependencies())
                out.append(t)
        return out

    def __repr__(self):
        return f"<weft struct {self.key}>"


# The adjoints of where/select (a struct variable assigned on one branch joins as a where) for one
# struct type: weft::adj_where's generic form converts its adjoint to a scalar compute type, which a
# struct has not; this more specialised overload accumulates with the struct's operator+=.
_SELECT_ADJOINTS = """namespace weft {
template <typename C>
WEFT_FN void adj_where(C cond, const STRUCT& a, const STRUCT& b, C& adj_cond, STRUCT& adj_a, STRUCT& adj_b,
                       const STRUCT& adj_ret) {
    if (truth(cond))
        adj_a += adj_ret;
    else
        adj_b += adj_ret;
}
template <typename C>
WEFT_FN void adj_select(C cond, const STRUCT& a, const STRUCT& b, C& adj_cond, STRUCT& adj_a, STRUCT& adj_b,
                        const STRUCT& adj_ret) {
    if (truth(cond))
        adj_b += adj_ret;
    else
        adj_a += adj_ret;
}
}  // namespace weft"""


def struct(cls):
    """Decorator: turn an annotated class into a weft struct type usable in kernels and arrays.

    Each annotated attribute becomes a field (scalars, vectors, matrices, arrays, other structs).
    Instances are made in Python (``s = MyStruct(); s.mass = 1.0``) and passed to kernels, read and
    written field by field in kernels, and used as array element types. Gradients flow through
    float fields. The struct is listed in ``structs`` of its Python module's weft module (by name:
    a struct defined again replaces the earlier one there).

    Args:
        cls: a class whose fields are given by annotations.

    Returns:
        The struct type (callable: ``cls()`` makes a zeroed instance).

    Example:
        >>> @wp.struct
        ... class Particle:
        ...     pos: wp.vec3
        ...     mass: float
        >>> p = Particle()
        >>> p.mass = 2.0
    """
    from .runtime.module import get_module

    s = Struct(cls)
    get_module(cls.__module__).structs[s.key] = s
    return s


def is_struct(t) -> bool:
    return isinstance(t, Struct)
