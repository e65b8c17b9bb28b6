"""Interop with other array libraries: PyTorch, DLPack (NumPy, CuPy...), JAX.

Every bridge shares memory instead of copying it. torch and jax are optional and imported only
when a function that needs them is called; importing this package imports neither.
"""

from .dlpack import from_dlpack, to_dlpack
from .jax import (
    device_from_jax,
    device_to_jax,
    dtype_from_jax,
    dtype_to_jax,
    from_jax,
    jax_callable,
    jax_kernel,
    to_jax,
)
from .torch import (
    device_from_torch,
    device_to_torch,
    dtype_from_torch,
    dtype_to_torch,
    from_torch,
    stream_from_torch,
    stream_to_torch,
    to_torch,
)
from .torch_autograd import torch_function, torch_kernel

__all__ = [
    "device_from_jax",
    "device_from_torch",
    "device_to_jax",
    "device_to_torch",
    "dtype_from_jax",
    "dtype_from_torch",
    "dtype_to_jax",
    "dtype_to_torch",
    "from_dlpack",
    "from_jax",
    "from_torch",
    "jax_callable",
    "jax_kernel",
    "stream_from_torch",
    "stream_to_torch",
    "to_dlpack",
    "to_jax",
    "to_torch",
    "torch_function",
    "torch_kernel",
]
