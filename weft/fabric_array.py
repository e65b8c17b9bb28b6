"""``wp.fabricarray`` / ``wp.indexedfabricarray``: arrays over Omniverse Fabric attribute storage.

Fabric keeps an attribute (a prim's positions, say) in *buckets*: separately allocated runs of
elements, listed by a Fabric interface dict (``__fabric_arrays_interface__``)::

    {"version": 1, "device": "cpu" | "cuda:0",
     "attribs": {name: {"type": (usable, base, count, array_depth, role), "access": ...,
                        "pointers": [...], "counts": [...],
                        "array_lengths": [...]}}}      # array_depth 1 only

``fabricarray(data=iface, attrib=name)`` views the buckets as one 1-D array (global index ``i`` is
element ``i - start`` of the bucket holding it) without copying. The element type comes from the
``type`` entry: the base type (``"f4"``, ``"i8"`` ...), the component count and the role (a
vector, a ``"quat"``, a square ``"matrix"`` / ``"transform"`` / ``"frame"``). ``array_depth`` 1
gives an array of arrays (``ndim`` 2, ``wp.fabricarrayarray``): ``a[i]`` in a kernel is then an
ordinary 1-D array whose bucket entry is a pointer, with its length in ``array_lengths``.

In kernels ``a[i]`` reads and writes the element, atomics work on it, ``a.size`` is the number of
elements (``uint64``) and ``a.shape[0]`` / ``len(a)`` the same as an int. ``fa[indices]`` (an int32
``wp.array``) gives an ``indexedfabricarray``. On the host the class offers what Warp's does:
``numpy``, ``list``, ``fill_``, ``zero_``, ``assign``, ``contiguous``, ``wp.copy``,
``wp.empty_like`` and friends, struct fields. Fabric data takes no gradients. Nothing here owns
the storage: keep the interface's owner alive while the array, its indexed views or a struct
holding them are in use.

Without ``data`` a class is a kernel annotation: ``wp.fabricarray(dtype=float)``,
``wp.fabricarray[wp.vec3]``, ``wp.fabricarray[float, Literal[2]]``, ``wp.fabricarrayarray(dtype=float)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import types
from .array import array
from .array_annotation import _FabricArrayAnnotation, _IndexedFabricArrayAnnotation, parse_subscript
from .indexed_array import _check_index_array
from .runtime.device import get_device

_BASE_TYPES = {
    "b": types.bool,
    "i1": types.int8,
    "i2": types.int16,
    "i4": types.int32,
    "i8": types.int64,
    "u1": types.uint8,
    "u2": types.uint16,
    "u4": types.uint32,
    "u8": types.uint64,
    "f2": types.float16,
    "f4": types.float32,
    "f8": types.float64,
}


def fabric_dtype(type_info, attrib: str):
    """The element type a Fabric ``type`` entry ``(usable, base, count, array_depth, role)`` names.

    Raises:
        RuntimeError: the attribute is not usable in kernels, or its base type or role (text,
            paths) has no element type.
    """
    from .vector_types import matrix, quaternion, vector

    usable, base, count, _depth, role = type_info
    if not usable:
        raise RuntimeError(f"Fabric attribute '{attrib}' cannot be used in kernels")
    scalar = _BASE_TYPES.get(base)
    if scalar is None:
        raise RuntimeError(f"Fabric attribute '{attrib}' has base type '{base}', which kernels do not support")
    if role in ("text", "path"):
        raise RuntimeError(f"Fabric attribute '{attrib}' has role '{role}', which kernels do not support")
    if count <= 1:
        return scalar
    if role == "quat" and count == 4:
        return quaternion(dtype=scalar)
    if role in ("matrix", "transform", "frame"):
        n = math.isqrt(count)
        if n * n != count:
            raise RuntimeError(f"Fabric attribute '{attrib}' is a {role} of {count} values; only square matrices are supported")
        return matrix(shape=(n, n), dtype=scalar)
    return vector(length=count, dtype=scalar)


def _same_layout(a, b) -> bool:
    """Whether element types ``a`` and ``b`` have the same scalar and the same number of them."""
    return types.type_scalar_type(a) is types.type_scalar_type(b) and types.type_size(a) == types.type_size(b)


def _host_values(src, dtype, ndim) -> np.ndarray:
    """``src`` (an array of any kind, NumPy data or a nested list) as NumPy values of ``dtype``."""
    if hasattr(src, "numpy") and callable(src.numpy) and not isinstance(src, np.ndarray):
        return src.numpy()
    return array(src, dtype=dtype, device="cpu").numpy()


class _FabricBase:
    """What plain and indexed Fabric arrays share: annotation identity and host access, written
    over ``_positions()`` (the global indices of this array's elements, None for all of them)."""

    _weft_array_class = True  # what wp.types.type_is_array looks for
    _annotation_class = None
    _kernel_kind = None

    # -- annotations -----------------------------------------------------------------------------

    @classmethod
    def __class_getitem__(cls, params):
        """``wp.fabricarray[dtype]`` and ``wp.fabricarray[dtype, Literal[2]]`` annotations."""
        dtype, ndim = parse_subscript(params)
        return cls._annotation_class(dtype, ndim)

    def kernel_type(self):
        """The kernel-side type (element type and dimensions of this kind)."""
        dtype = self.dtype if self.dtype is Any else array(dtype=self.dtype).dtype
        return self._kernel_kind(dtype, self.ndim)

    def __eq__(self, other):
        """Annotations are equal when they describe the same kernel type; arrays with data are
        equal only to themselves."""
        if self.is_annotation and getattr(other, "is_annotation", False) is True and hasattr(other, "kernel_type"):
            return self.kernel_type() == other.kernel_type()
        return self is other

    def __hash__(self):
        return hash(self.kernel_type()) if self.is_annotation else object.__hash__(self)

    # -- what the rest of weft asks of an array ----------------------------------------------------

    requires_grad = False
    grad = None
    pinned = False
    is_contiguous = False  # elements are spread over buckets: contiguous() copies

    def arrays(self):
        """The gradient-carrying arrays behind this one: none (Fabric data takes no gradients)."""
        return []

    def __len__(self):
        return self.size

    def _require_data(self, what):
        if self.is_annotation:
            raise TypeError(f"{self!r} is a type annotation without data; cannot {what} it")

    def _require_flat(self, what):
        if self.ndim != 1:
            raise RuntimeError(f"Cannot {what} a Fabric array of arrays: its inner arrays have their own lengths")

    # -- host access -----------------------------------------------------------------------------

    def numpy(self) -> np.ndarray:
        """A NumPy copy of the elements (shape ``(size,)`` plus the element's own). For an array
        of arrays: a 1-D object array holding one NumPy array per inner array."""
        self._require_data("read")
        fa, pos = self._base_and_positions()
        if fa.ndim == 2:
            rows = fa._inner_arrays()
            out = np.empty(len(rows) if pos is None else len(pos), dtype=object)
            for k, i in enumerate(range(len(rows)) if pos is None else pos):
                out[k] = rows[i]
            return out
        parts = [view.numpy() for _, view in fa._bucket_views()]
        if not parts:
            return array(dtype=self.dtype, shape=(0,), device="cpu").numpy()
        whole = np.concatenate(parts)  # a copy, also of a single bucket
        return whole if pos is None else whole[pos]

    def list(self) -> list:
        """The elements as Python values (numbers, vector / matrix values); for an array of arrays,
        one NumPy array per inner array."""
        if self.ndim == 2:
            return list(self.numpy())
        return self.contiguous().list()

    def contiguous(self) -> array:
        """A new contiguous ``wp.array`` holding the elements, on the same device."""
        self._require_data("copy")
        self._require_flat("copy")
        return array(self.numpy(), dtype=self.dtype, device=self.device)

    def to(self, device) -> array:
        """The elements as a contiguous ``wp.array`` on ``device``."""
        return self.contiguous().to(device)

    def assign(self, src):
        """Write ``src`` (an array of any kind, NumPy data or a nested list of ``size`` elements)
        into the elements."""
        self._require_data("assign to")
        self._require_flat("assign to")
        values = _host_values(src, self.dtype, self.ndim)
        if len(values) != self.size:
            raise ValueError(f"Cannot assign {len(values)} elements to a Fabric array of {self.size} elements")
        self._scatter(values)

    def fill_(self, value):
        """Set every element to ``value`` (converted as ``wp.array.fill_`` converts it)."""
        self._require_data("fill")
        self._require_flat("fill")
        if self.size:
            tmp = array(dtype=self.dtype, shape=(self.size,), device="cpu")
            tmp.fill_(value)
            self._scatter(tmp.numpy())

    def zero_(self):
        """Set every element to zero."""
        self._require_data("fill")
        self._require_flat("fill")
        if self.size:
            self._scatter(array(dtype=self.dtype, shape=(self.size,), device="cpu").numpy())

    def _scatter(self, values):
        """Write ``values[k]`` to this array's k-th element, bucket by bucket (on the CPU straight
        into the buckets, from a GPU through a host copy of each bucket that is touched)."""
        fa, pos = self._base_and_positions()
        for start, view in fa._bucket_views():
            end = start + view.shape[0]
            if pos is None:
                sel, local = slice(start, end), slice(None)
            else:
                mask = (pos >= start) & (pos < end)
                if not mask.any():
                    continue
                sel, local = mask, pos[mask] - start
            if view.device.is_cpu:
                view.numpy()[local] = values[sel]
            else:
                host = view.numpy()
                host[local] = values[sel]
                view.assign(host)

    def __str__(self):
        return repr(self) if self.is_annotation else str(self.numpy())


class fabricarray(_FabricBase):  # noqa: N801 (Warp's spelling)
    """A 1-D array over the buckets of a Fabric attribute (see the module docstring).

    Args:
        data: A Fabric interface dict, or an object with ``__fabric_arrays_interface__`` (None:
            an annotation).
        attrib: The attribute's name in the interface.
        dtype: Element type (annotations; with ``data``, a view of the attribute as this type,
            which must have the same scalar and component count, e.g. a quaternion for 4 floats).
        ndim: 1, or 2 for an array of arrays (annotations; with ``data``, a check).

    Raises:
        ValueError: a malformed interface, an unknown attribute, or a ``dtype`` / ``ndim`` that
            contradicts the attribute.
        RuntimeError: pointer, count and length lists of different sizes; an element type
            kernels cannot use.
    """

    _annotation_class = _FabricArrayAnnotation
    _kernel_kind = types.FabricArrayType

    def __init__(self, data=None, attrib=None, dtype=Any, ndim=None):
        self._table = None  # the bucket table kernels read (a wp.array on the device)
        self._buckets = []  # (start, count, data pointer, lengths pointer) per bucket
        self.access = None
        if dtype is int:
            dtype = types.int32
        elif dtype is float:
            dtype = types.float32
        if data is None:
            self.dtype = dtype if dtype is Any or dtype is None else array(dtype=dtype).dtype
            if self.dtype is None:
                self.dtype = Any
            self.ndim = 1 if ndim is None else int(ndim)
            if self.ndim not in (1, 2):
                raise ValueError(f"Fabric arrays have 1 dimension, or 2 for arrays of arrays; got ndim={ndim}")
            self.device = None
            self.size = 0
            self.shape = (0,)
            self._ctype = types.fabricarray_t()
            self._annotation = True
            return
        self._annotation = False
        info = _attribute(data, attrib)
        type_info = tuple(info["type"])
        if len(type_info) != 5:
            raise ValueError(f"Fabric attribute '{attrib}' has a malformed type entry {type_info!r}")
        own = fabric_dtype(type_info, attrib)
        if dtype is not Any and dtype is not None:
            dtype = array(dtype=dtype).dtype
            if not _same_layout(dtype, own):
                raise ValueError(
                    f"Requested dtype ({types.type_repr(dtype)}) does not match Fabric attribute '{attrib}' "
                    f"({types.type_repr(own)})"
                )
            own = dtype
        self.dtype = own
        depth = type_info[3]
        if depth not in (0, 1):
            raise ValueError(f"Fabric attribute '{attrib}' has array depth {depth}; only 0 and 1 are supported")
        self.ndim = 1 + depth
        if ndim is not None and ndim != self.ndim:
            raise ValueError(f"Requested ndim ({ndim}) does not match Fabric attribute '{attrib}' (ndim {self.ndim})")
        self.access = info.get("access")
        pointers, counts = info.get("pointers"), info.get("counts")
        if not (hasattr(pointers, "__len__") and hasattr(counts, "__len__") and len(pointers) == len(counts)):
            raise RuntimeError(f"Fabric attribute '{attrib}': 'pointers' and 'counts' must be lists of the same size")
        lengths = [0] * len(pointers)
        if depth == 1:
            lengths = info.get("array_lengths")
            if not hasattr(lengths, "__len__") or len(lengths) != len(pointers):
                raise RuntimeError(
                    f"Fabric attribute '{attrib}': 'array_lengths' must be a list of the same size as 'pointers'"
                )
        start = 0
        for ptr, count, length in zip(pointers, counts, lengths):
            count = int(count)
            if count < 0:
                raise ValueError(f"Fabric attribute '{attrib}' has a bucket of {count} elements")
            self._buckets.append((start, count, int(ptr or 0), int(length or 0)))
            start += count
        self.size = start
        self.shape = (start,)
        self.device = get_device(data.get("device") if isinstance(data, dict) else _interface(data).get("device"))
        self._ctype = self._make_descriptor()

    def _make_descriptor(self):
        """The bucket table on the device (empty buckets left out: the search needs none) and the
        descriptor kernels receive."""
        rows = [(s, s + n, p, l) for s, n, p, l in self._buckets if n > 0]
        if not rows:
            return types.fabricarray_t(0, 0, self.size)
        self._table = array(np.array(rows, dtype=np.uint64), dtype=types.uint64, device=self.device)
        return types.fabricarray_t(self._table.ptr, len(rows), self.size)

    @classmethod
    def _from_descriptor(cls, ct, dtype, ndim, device):
        """A Fabric array over an existing descriptor (a struct field read back from device or
        host memory): it owns nothing, and the bucket table must stay alive (its owner's job)."""
        fa = cls(dtype=dtype, ndim=ndim)
        fa._annotation = False
        fa.device = get_device(device)
        fa._ctype = types.fabricarray_t(ct.buckets, ct.nbuckets, ct.size)
        fa.size = int(ct.size)
        fa.shape = (fa.size,)
        if ct.nbuckets:
            table = array(ptr=ct.buckets, dtype=types.uint64, shape=(int(ct.nbuckets), 4), device=fa.device).numpy()
            fa._buckets = [(int(s), int(e - s), int(p), int(l)) for s, e, p, l in table]
        return fa

    @property
    def is_annotation(self) -> bool:
        """True if this object is a type annotation without data."""
        return getattr(self, "_annotation", True)

    def __ctype__(self):
        """The ``fabricarray_t`` a kernel receives."""
        return self._ctype

    def __del__(self):
        """Release the bucket table now (it lives in device memory)."""
        self.__dict__.pop("_table", None)

    def __getitem__(self, key):
        """``fa[indices]``: the elements at ``indices`` (an int32 ``wp.array``), as an
        ``indexedfabricarray`` (nothing is copied)."""
        if isinstance(key, array):
            return indexedfabricarray(fa=self, indices=key)
        raise ValueError(f"Fabric arrays can only be indexed by an index array (wp.array of int32), got {type(key).__name__}")

    def _base_and_positions(self):
        return self, None

    def _bucket_views(self):
        """``(start, wp.array over the bucket's data)`` for each non-empty bucket (for arrays of
        arrays, the bucket's inner-array pointers as uint64)."""
        dtype = self.dtype if self.ndim == 1 else types.uint64
        return [
            (s, array(ptr=p, dtype=dtype, shape=(n,), device=self.device))
            for s, n, p, _ in self._buckets
            if n > 0
        ]

    def _inner_arrays(self) -> list:
        """The inner arrays of an array of arrays, as NumPy copies."""
        out = []
        for s, n, p, lengths in self._buckets:
            if n == 0:
                continue
            ptrs = array(ptr=p, dtype=types.uint64, shape=(n,), device=self.device).numpy()
            lens = array(ptr=lengths, dtype=types.uint64, shape=(n,), device=self.device).numpy()
            for q, m in zip(ptrs, lens):
                inner = array(ptr=int(q), dtype=self.dtype, shape=(int(m),), device=self.device) if m else None
                out.append(inner.numpy().copy() if inner is not None else array(dtype=self.dtype, shape=(0,), device="cpu").numpy())
        return out

    def __repr__(self):
        kind = "fabricarray" if self.ndim == 1 else "fabricarrayarray"
        if self.is_annotation:
            return f"{kind}(dtype={types.type_repr(self.dtype)})"
        return f"{kind}(size={self.size}, buckets={len(self._buckets)}, dtype={types.type_repr(self.dtype)}, device='{self.device}')"


class indexedfabricarray(_FabricBase):  # noqa: N801 (Warp's spelling)
    """A Fabric array seen through an int32 index array: element ``k`` is ``fa[indices[k]]``.

    Args:
        fa: The ``fabricarray`` (None: an annotation).
        indices: A 1-D int32 ``wp.array`` on the Fabric array's device.
        dtype: Element type (annotations).
        ndim: 1, or 2 for an array of arrays (annotations).

    Raises:
        ValueError: ``indices`` is not a 1-D int32 array on ``fa``'s device.
    """

    _annotation_class = _IndexedFabricArrayAnnotation
    _kernel_kind = types.IndexedFabricArrayType

    def __init__(self, fa=None, indices=None, dtype=None, ndim=None):
        self.fa = fa
        self.indices = indices
        if fa is None:
            if dtype is int:
                dtype = types.int32
            elif dtype is float:
                dtype = types.float32
            self.dtype = Any if dtype is None or dtype is Any else array(dtype=dtype).dtype
            self.ndim = 1 if ndim is None else int(ndim)
            self.device = None
            self.size = 0
            self.shape = (0,)
            return
        if not isinstance(fa, fabricarray) or fa.is_annotation:
            raise ValueError(f"indexedfabricarray needs a fabricarray with data, got {type(fa).__name__}")
        _check_index_array(indices, fa.device)
        self.dtype = fa.dtype
        self.ndim = fa.ndim
        self.device = fa.device
        self.size = indices.size
        self.shape = (indices.size,)

    @property
    def is_annotation(self) -> bool:
        """True if this object is a type annotation without data."""
        return self.fa is None

    def __ctype__(self):
        """The ``indexedfabricarray_t`` a kernel receives."""
        if self.fa is None:
            return types.indexedfabricarray_t()
        return types.indexedfabricarray_t(self.fa.__ctype__(), self.indices.ptr or 0, self.size)

    def _base_and_positions(self):
        return self.fa, self.indices.numpy().astype(np.int64)

    def __repr__(self):
        kind = "indexedfabricarray" if self.ndim == 1 else "indexedfabricarrayarray"
        if self.is_annotation:
            return f"{kind}(dtype={types.type_repr(self.dtype)})"
        return f"{kind}(size={self.size}, dtype={types.type_repr(self.dtype)}, device='{self.device}')"


def fabricarrayarray(**kwargs):
    """A Fabric array of arrays (or its annotation): ``fabricarray(..., ndim=2)``."""
    kwargs["ndim"] = 2
    return fabricarray(**kwargs)


def indexedfabricarrayarray(**kwargs):
    """An indexed Fabric array of arrays (or its annotation): ``indexedfabricarray(..., ndim=2)``."""
    kwargs["ndim"] = 2
    return indexedfabricarray(**kwargs)


def _interface(data) -> dict:
    if isinstance(data, dict):
        return data
    iface = getattr(data, "__fabric_arrays_interface__", None)
    if not isinstance(iface, dict):
        raise ValueError("fabricarray data must be a Fabric interface dict or an object with __fabric_arrays_interface__")
    return iface


def _attribute(data, attrib) -> dict:
    """The interface entry of attribute ``attrib`` (version and layout checked)."""
    if not isinstance(attrib, str):
        raise ValueError(f"Invalid Fabric attribute name: {attrib!r}")
    iface = _interface(data)
    if iface.get("version") != 1:
        raise ValueError(f"Unsupported Fabric interface version: {iface.get('version')!r}")
    if not isinstance(iface.get("device"), str):
        raise ValueError(f"Invalid Fabric interface device: {iface.get('device')!r}")
    attribs = iface.get("attribs")
    if not isinstance(attribs, dict):
        raise ValueError("The Fabric interface has no 'attribs' dict")
    info = attribs.get(attrib)
    if not isinstance(info, dict):
        raise ValueError(f"The Fabric interface has no attribute '{attrib}'")
    return info


_FabricArrayAnnotation.concrete = fabricarray  # what wp.fabricarray[...] annotations stand for
_IndexedFabricArrayAnnotation.concrete = indexedfabricarray
