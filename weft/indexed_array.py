"""``wp.indexedarray``: an array seen through per-dimension index arrays, as in Warp.

``indexedarray(data, [I, None, J])`` views ``data`` so that element ``(i, j, k)`` is
``data[I[i], j, J[k]]``: a dimension with an index array (1-D int32, on the data's device) takes
its length, one without keeps the data's. Nothing is copied; kernels read and write ``data``
through the indices (``codegen/frontend.py`` lowers ``a[i, j]`` to the mapped element, with both
the indexed and the data bounds checked), and gradients land in ``data.grad``. ``array[I]`` with an
index array makes one too.

Without ``data`` it is a kernel parameter annotation: ``wp.indexedarray(dtype=float, ndim=2)``,
``wp.indexedarray[float]``, ``wp.indexedarray[wp.vec3, Literal[2]]``, ``wp.indexedarray2d(...)``.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from . import types
from .array import array
from .array_annotation import _IndexedArrayAnnotation, parse_subscript
from .array_layout import MAX_DIMS

_NULL = ctypes.c_uint64(0).value


def _check_index_array(indices, device):
    if not isinstance(indices, array) or indices.is_annotation:
        raise ValueError(f"Indices must be a Warp array, got {type(indices)}")
    if indices.ndim != 1:
        raise ValueError(f"Index array must be one-dimensional, got {indices.ndim}")
    if indices.dtype is not types.int32:
        raise ValueError(f"Index array must use int32, got dtype {indices.dtype}")
    if indices.device is not device:
        raise ValueError(f"Index array device ({indices.device}) does not match data array device ({device})")


class indexedarray:
    """An array whose dimensions are remapped through index arrays (see the module docstring).

    Args:
        data: The ``wp.array`` seen through the indices (None: an annotation).
        indices: One index array for the first dimension, or a list with an index array or None
            per leading dimension.
        dtype: Element type (annotations; with ``data``, a check).
        ndim: Number of dimensions (annotations; with ``data``, a check).

    Raises:
        ValueError: ``data`` is not an array, an index array is not a 1-D int32 array on the
            data's device, more index arrays than dimensions, or a ``dtype`` / ``ndim`` that
            contradicts ``data``.
    """

    _weft_array_class = True  # what wp.types.type_is_array looks for

    def __init__(self, data=None, indices=None, dtype=Any, ndim=None):
        if dtype is int:
            dtype = types.int32
        elif dtype is float:
            dtype = types.float32
        self.data = data
        self.indices = [None] * MAX_DIMS
        if data is None:
            self.dtype = dtype if dtype is Any or dtype is None else array(dtype=dtype).dtype
            if self.dtype is None:
                self.dtype = Any
            self.ndim = 1 if ndim is None else int(ndim)
            if not 1 <= self.ndim <= MAX_DIMS:
                raise ValueError(f"Indexed array annotations take ndim between 1 and {MAX_DIMS}, got {ndim}")
            self.device = None
            self.pinned = False
            self.shape = (0,) * self.ndim
            self.size = 0
            return
        if not isinstance(data, array) or data.is_annotation:
            raise ValueError("Indexed array data must be a Warp array")
        if dtype is not Any and dtype is not None and array(dtype=dtype).dtype != data.dtype:
            raise ValueError(f"Requested dtype ({dtype}) does not match dtype of data array ({data.dtype})")
        if ndim is not None and ndim != data.ndim:
            raise ValueError(
                f"Requested dimensionality ({ndim}) does not match dimensionality of data array ({data.ndim})"
            )
        self.dtype = data.dtype
        self.ndim = data.ndim
        self.device = data.device
        self.pinned = data.pinned
        shape = list(data.shape)
        if isinstance(indices, array):
            indices = [indices]
        elif indices is not None and not isinstance(indices, (list, tuple)):
            raise ValueError("Indices must be a single Warp array or a list of Warp arrays")
        if indices is not None:
            if len(indices) > self.ndim:
                raise ValueError(
                    f"Number of indices provided ({len(indices)}) exceeds number of dimensions ({self.ndim})"
                )
            for d, idx in enumerate(indices):
                if idx is not None:
                    _check_index_array(idx, data.device)
                    self.indices[d] = idx
                    shape[d] = idx.shape[0]
        self.shape = tuple(shape)
        self.size = int(np.prod(self.shape)) if self.shape else 0

    @classmethod
    def __class_getitem__(cls, params):
        """``wp.indexedarray[dtype]`` and ``wp.indexedarray[dtype, Literal[ndim]]`` annotations."""
        dtype, ndim = parse_subscript(params)
        return _IndexedArrayAnnotation(dtype, ndim)

    # -- what kernels see ------------------------------------------------------------------------

    @property
    def is_annotation(self) -> bool:
        """True if this object is a type annotation without data."""
        return self.data is None

    def __eq__(self, other):
        """Annotations are equal when they describe the same kernel type; indexed arrays with
        data are equal only to themselves."""
        if self.data is None and isinstance(other, indexedarray) and other.data is None:
            return self.kernel_type() == other.kernel_type()
        if self.data is None and isinstance(other, _IndexedArrayAnnotation):
            return other == self
        return self is other

    def __hash__(self):
        return hash(self.kernel_type()) if self.data is None else object.__hash__(self)

    def kernel_type(self) -> types.IndexedArrayType:
        """The kernel-side type: ``IndexedArrayType(dtype, ndim)``."""
        return types.IndexedArrayType(self.dtype, self.ndim)

    def __ctype__(self):
        """The ``indexedarray_t`` a kernel receives (the data's gradient buffer included)."""
        ct = types.indexedarray_t()
        if self.data is None:
            return ct
        ct.data = self.data.__ctype__()
        for d in range(MAX_DIMS):
            idx = self.indices[d]
            ct.indices[d] = (idx.ptr or 0) if idx is not None else _NULL
            ct.shape[d] = self.shape[d] if d < self.ndim else 0
        return ct

    @property
    def is_contiguous(self) -> bool:
        """Always False: the elements are gathered through the indices (``contiguous()`` copies)."""
        return False

    def arrays(self):
        """The arrays this one reads and writes (the tape zeroes their gradients)."""
        return [] if self.data is None else [self.data]

    # -- the tape's overwrite bookkeeping goes to the data array ----------------------------------

    @property
    def _ref(self):
        return self.data

    def mark_read(self):
        self.data.mark_read()

    def mark_write(self, **kwargs):
        return self.data.mark_write(**kwargs)

    def mark_init(self):
        self.data.mark_init()

    # -- gradients -------------------------------------------------------------------------------

    @property
    def requires_grad(self) -> bool:
        """Whether the data array carries a gradient."""
        return self.data is not None and self.data.requires_grad

    @property
    def grad(self):
        """The data's gradient seen through the same indices (None without one)."""
        if self.data is None or self.data.grad is None:
            return None
        return indexedarray(self.data.grad, self.indices[: self.ndim])

    # -- host access -----------------------------------------------------------------------------

    def __len__(self):
        return self.shape[0]

    def _require_data(self, what):
        if self.data is None:
            raise TypeError(f"{self!r} is a type annotation without data; cannot {what} it")

    def numpy(self) -> np.ndarray:
        """A NumPy copy of the indexed elements (shape ``shape`` plus the element's own)."""
        self._require_data("read")
        out = self.data.numpy()
        for d in range(self.ndim):
            if self.indices[d] is not None:
                out = np.take(out, self.indices[d].numpy().astype(np.int64), axis=d)
        return np.array(out, copy=True)

    def contiguous(self) -> array:
        """A new contiguous ``wp.array`` holding the indexed elements, on the same device (with a
        gradient when the data has one: a recording tape differentiates the copy)."""
        self._require_data("copy")
        out = array(dtype=self.dtype, shape=self.shape, device=self.device, requires_grad=self.requires_grad)
        if self.size:
            _kernels.launch_copy(out, self, record=self.requires_grad)
        return out

    def to(self, device):
        """The indexed elements as a contiguous ``wp.array`` on ``device``."""
        return self.contiguous().to(device)

    def list(self) -> list:
        """The elements as Python values (numbers, vector / matrix values, struct instances)."""
        return self.contiguous().list()

    def assign(self, src):
        """Write ``src`` (an array, indexed array, NumPy array or nested list of this shape) into
        the indexed elements of the data array (recorded on an active tape, like ``wp.copy``)."""
        self._require_data("assign to")
        if isinstance(src, indexedarray):
            src = src.contiguous()
        if not isinstance(src, array):
            src = array(src, dtype=self.dtype, device=self.device)
        if tuple(src.shape) != tuple(self.shape):
            raise ValueError(f"Cannot assign data of shape {src.shape} to an indexed array of shape {self.shape}")
        if src.device is not self.device:
            src = src.to(self.device)
        if self.size:
            _kernels.launch_copy(self, src, record=True)

    def fill_(self, value):
        """Set every indexed element to ``value`` (converted as ``array.fill_`` converts it)."""
        self._require_data("fill")
        if self.size:
            tmp = array(dtype=self.dtype, shape=self.shape, device=self.device)
            tmp.fill_(value)
            _kernels.launch_copy(self, tmp)

    def zero_(self):
        """Set every indexed element to zero."""
        self._require_data("fill")
        if self.size:
            _kernels.launch_copy(self, array(dtype=self.dtype, shape=self.shape, device=self.device))

    def __repr__(self):
        if self.data is None:
            prefix = "indexedarray" if self.ndim == 1 else f"indexedarray{self.ndim}d"
            return f"{prefix}(dtype={types.type_repr(self.dtype)})"
        return f"indexedarray({self.numpy()!r}, dtype={types.type_repr(self.dtype)})"

    def __str__(self):
        return repr(self) if self.data is None else str(self.numpy())


def _fixed_ndim(ndim: int):
    def make(*args, **kwargs):
        kwargs["ndim"] = ndim
        return indexedarray(*args, **kwargs)

    make.__name__ = make.__qualname__ = f"indexedarray{ndim}d"
    make.__doc__ = f"A {ndim}-D ``wp.indexedarray`` (or its annotation): ``indexedarray(..., ndim={ndim})``."
    return make


indexedarray1d, indexedarray2d, indexedarray3d, indexedarray4d = (_fixed_ndim(n) for n in range(1, 5))


def index_with_arrays(a: array, key):
    """``a[key]`` where ``key`` holds index arrays: the view the other entries (slices, integers)
    select, seen through the index arrays at the dimensions they stand in."""
    key = key if isinstance(key, tuple) else (key,)
    plain, indices, out_dim = [], [], 0
    for k in key:
        if isinstance(k, array):
            plain.append(slice(None))
            indices.append((out_dim, k))
            out_dim += 1
        else:
            plain.append(k)
            if not isinstance(k, (int, np.integer)):
                out_dim += 1
    view = a[tuple(plain)]
    dims = [None] * view.ndim
    for d, k in indices:
        dims[d] = k
    return indexedarray(view, dims)


_IndexedArrayAnnotation.concrete = indexedarray  # what wp.indexedarray[...] annotations stand for

from .runtime import _indexed_kernels as _kernels  # noqa: E402 (the kernels use this module's class)
