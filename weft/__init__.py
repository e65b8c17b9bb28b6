# ruff: noqa: F401, F403
"""weft: compile Python functions into fast native kernels and differentiate them.

The public API follows NVIDIA Warp name for name: ``import weft as wp``.
"""

from . import config
from .types import (
    bool,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
    float16,
    float32,
    float64,
    half,
)
from .vector_types import *
from .vector_types import vector, matrix, quaternion, transformation
from . import types
from .array import (
    array,
    array1d,
    array2d,
    array3d,
    array4d,
    zeros,
    zeros_like,
    ones,
    ones_like,
    full,
    full_like,
    empty,
    empty_like,
    clone,
    copy,
    from_numpy,
)
from .builtins.scalar import (
    add,
    sub,
    mul,
    div,
    floordiv,
    mod,
    pow,
    neg,
    pos,
    bit_and,
    bit_or,
    bit_xor,
    lshift,
    rshift,
    invert,
    min,
    max,
    abs,
    sign,
    clamp,
    sqrt,
    cbrt,
    exp,
    log,
    log2,
    log10,
    sin,
    cos,
    tan,
    asin,
    acos,
    atan,
    atan2,
    sinh,
    cosh,
    tanh,
    floor,
    ceil,
    round,
    rint,
    trunc,
    frac,
    degrees,
    radians,
    isnan,
    isinf,
    isfinite,
    select,
    where,
    lerp,
    smoothstep,
    step,
)
from .builtins.vector import *
from .builtins.constructors import (
    identity,
    quat_identity,
    transform_identity,
    matrix_from_rows,
    matrix_from_cols,
    svd3,
    qr3,
    eig3,
    quat_to_axis_angle,
    transform_set_translation,
    transform_set_rotation,
)
from .builtins.library import (
    velocity_at_point,
    transform_twist,
    transform_wrench,
    quat_to_rpy,
    transform_to_matrix,
    transform_from_matrix,
    quat_twist,
    transform_compose,
    transform_decompose,
    quat_from_euler,
    quat_to_euler,
)
from .builtins.random import (
    rand_init,
    randi,
    randu,
    randf,
    randn,
    sample_cdf,
    sample_triangle,
    sample_unit_ring,
    sample_unit_disk,
    sample_unit_sphere_surface,
    sample_unit_sphere,
    sample_unit_hemisphere_surface,
    sample_unit_hemisphere,
    sample_unit_square,
    sample_unit_cube,
    poisson,
    noise,
    pnoise,
    curlnoise,
)
from .codegen.intrinsics import adjoint, tid, printf, atomic_add, atomic_sub, atomic_min, atomic_max, static, constant
from .codegen.errors import WarpCodegenError, WeftCompileError, WeftBuildError
from .kernel import kernel, func, func_grad, func_replay, Kernel, Function
from .struct import struct
from .interop import (
    from_torch,
    to_torch,
    device_from_torch,
    device_to_torch,
    dtype_from_torch,
    dtype_to_torch,
    from_dlpack,
    to_dlpack,
    from_jax,
    to_jax,
    device_from_jax,
    device_to_jax,
    dtype_from_jax,
    dtype_to_jax,
    jax_kernel,
    jax_callable,
    torch_function,
    torch_kernel,
    stream_from_torch,
    stream_to_torch,
)
from .runtime.launch import launch
from .runtime.launch_object import Launch
from .runtime.module import set_module_options, get_module_options, clear_kernel_cache
from .runtime.aot import compile_aot_module, load_aot_module
from .runtime.device import (
    Device,
    get_device,
    set_device,
    get_devices,
    get_cuda_devices,
    get_cuda_device_count,
    get_cuda_device,
    is_cuda_available,
    is_mempool_supported,
    is_mempool_enabled,
    set_mempool_enabled,
    set_mempool_release_threshold,
    get_mempool_release_threshold,
    is_cpu_available,
    get_preferred_device,
    synchronize,
    synchronize_device,
    ScopedDevice,
)
from .runtime.stream import (
    Stream,
    Event,
    get_stream,
    set_stream,
    ScopedStream,
    wait_event,
    record_event,
    wait_stream,
    synchronize_stream,
    synchronize_event,
    get_event_elapsed_time,
)
from .runtime.graph import Graph, ScopedCapture, capture_begin, capture_end, capture_launch
from .tape import Tape
from . import autograd
from . import optim
from .utils import ScopedTimer
from . import utils

__version__ = config.version


def init():
    """Initialise weft. Optional: everything initialises lazily on first use."""
    return None
