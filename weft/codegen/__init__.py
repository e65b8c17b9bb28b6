"""The compiler: Python source of kernels and funcs -> typed IR -> C++/CUDA (see pipeline.py).

Re-exports the compile-error classes, importable from ``weft.codegen`` as from ``warp.codegen``.
"""

from .errors import (
    WarpCodegenAttributeError,
    WarpCodegenError,
    WarpCodegenIndexError,
    WarpCodegenKeyError,
    WarpCodegenTypeError,
    WarpCodegenValueError,
)

__all__ = [
    "WarpCodegenAttributeError",
    "WarpCodegenError",
    "WarpCodegenIndexError",
    "WarpCodegenKeyError",
    "WarpCodegenTypeError",
    "WarpCodegenValueError",
]
