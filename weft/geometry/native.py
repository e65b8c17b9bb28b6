"""The host-side geometry library (``native/geometry/build.cpp``): BVH construction and refits,
triangle bounds and winding-number node data, compiled into the kernel cache on first use and
loaded with ctypes. ``library()`` returns it with its prototypes set."""

from __future__ import annotations

import ctypes
import os
import threading

from ..runtime import cpu

_lib: list = []
_lock = threading.Lock()

_P = ctypes.c_void_p
_I = ctypes.c_int

_PROTOTYPES = {
    "weft_bvh_build": (_I, [_P, _P, _I, _P, _I, _I, _P, _P, _P, _P, _P, _P, _P, _P]),
    "weft_bvh_refit": (None, [_P, _I, _I, _P, _P, _P, _P, _P]),
    "weft_mesh_refit": (None, [_P, _I, _I, _P, _P, _P, _P, _P]),
    "weft_bvh_widen": (_I, [_P, _I, _P, _P]),
    "weft_mesh_leaf_triangles": (None, [_P, _I, _P, _P]),
    "weft_mesh_bounds": (ctypes.c_double, [_P, _P, _I, _P, _P, _I]),
    "weft_mesh_winding_data": (None, [_P, _P, _I, _P, _P, _P, _P, _P, _P, _P]),
}


def library() -> ctypes.CDLL:
    """The geometry build library, compiled once per source into the kernel cache."""
    if not _lib:
        with _lock:
            if not _lib:
                from ..runtime.module import cached_library

                with open(os.path.join(cpu.NATIVE_DIR, "geometry", "build.cpp")) as f:
                    source = f.read()
                lib = cached_library("weft_geometry", source, ())
                for name, (restype, argtypes) in _PROTOTYPES.items():
                    fn = getattr(lib, name)
                    fn.restype = restype
                    fn.argtypes = argtypes
                _lib.append(lib)
    return _lib[0]
