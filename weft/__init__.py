# ruff: noqa: F401, F403
"""weft: compile Python functions into fast native kernels and differentiate them.

The public API follows NVIDIA Warp name for name: ``import weft as wp``.
"""

from . import autograd, config, optim, types, utils
from .array import (
    array,
    array1d,
    array2d,
    array3d,
    array4d,
    clone,
    copy,
    empty,
    empty_like,
    from_numpy,
    full,
    full_like,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from .indexed_array import indexedarray, indexedarray1d, indexedarray2d, indexedarray3d, indexedarray4d
from .fabric_array import fabricarray, fabricarrayarray, indexedfabricarray, indexedfabricarrayarray
from .checkpoint import checkpoint
from . import distributed  # wp.distributed: MPI; mpi4py is imported on first use, not here
from .array_annotation import fixedarray  # noqa: F401 (a func returning a wp.zeros made in a kernel)
from .builtins.search import lower_bound
from .builtins.intersect import closest_point_edge_edge, intersect_tri_tri
from .builtins.constructors import (
    eig3,
    identity,
    matrix_from_cols,
    matrix_from_rows,
    qr3,
    quat_identity,
    quat_to_axis_angle,
    svd2,
    svd3,
    transform_identity,
    transform_set_rotation,
    transform_set_translation,
)
from .builtins.library import (
    quat_from_euler,
    quat_to_euler,
    quat_to_rpy,
    quat_twist,
    quat_twist_angle,
    quat_twist_angle_signed,
    transform_compose,
    transform_decompose,
    transform_from_matrix,
    transform_to_matrix,
    transform_twist,
    transform_wrench,
    velocity_at_point,
)
from .builtins.random import (
    curlnoise,
    noise,
    pnoise,
    poisson,
    rand_init,
    randf,
    randi,
    randn,
    randu,
    sample_cdf,
    sample_triangle,
    sample_unit_cube,
    sample_unit_disk,
    sample_unit_hemisphere,
    sample_unit_hemisphere_surface,
    sample_unit_ring,
    sample_unit_sphere,
    sample_unit_sphere_surface,
    sample_unit_square,
)
from .builtins.scalar import *  # every public scalar builtin (their __all__)
from .builtins.vector import *
from .codegen.errors import (
    WarpCodegenAttributeError,
    WarpCodegenError,
    WarpCodegenIndexError,
    WarpCodegenKeyError,
    WarpCodegenTypeError,
    WarpCodegenValueError,
    WeftBuildError,
    WeftCompileError,
)
from .codegen.intrinsics import (
    address_of,
    adjoint,
    atomic_add,
    atomic_and,
    atomic_cas,
    atomic_exch,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_sub,
    atomic_xor,
    cast,
    constant,
    grad,
    printf,
    static,
    tid,
)
from .codegen.intrinsics import print_value as print  # noqa: A004 (Warp's wp.print)
from .interop import (
    device_from_jax,
    device_from_torch,
    device_to_jax,
    device_to_torch,
    dtype_from_jax,
    dtype_from_torch,
    dtype_to_jax,
    dtype_to_torch,
    from_dlpack,
    from_jax,
    from_torch,
    jax_callable,
    jax_kernel,
    stream_from_torch,
    stream_to_torch,
    to_dlpack,
    to_jax,
    to_torch,
    torch_function,
    torch_kernel,
)
from .constants import *  # noqa: F403 (wp.pi, wp.inf, ...)
from .reference import ref
from .tile.types import tile
from .tile.launch import launch_tiled
from .tile.ops import *  # noqa: F401, F403 (wp.tile_load, wp.tile_matmul...)
from .tile.ops_data import *  # noqa: F401, F403
from .tile.ops_linalg import *  # noqa: F401, F403
from .log import LOG_DEBUG, LOG_ERROR, LOG_INFO, LOG_WARNING
from .kernel import Function, Kernel, func, func_grad, func_replay, kernel, overload
from .native_func import func_native
from .runtime.aot import compile_aot_module, load_aot_module
from .determinism import DeterministicMode
from .runtime.device import (
    Device,
    ScopedDevice,
    get_cuda_device,
    get_cuda_device_count,
    get_cuda_devices,
    get_cuda_driver_version,
    get_cuda_supported_archs,
    get_cuda_toolkit_version,
    get_device,
    get_devices,
    get_mempool_release_threshold,
    get_preferred_device,
    is_cpu_available,
    is_cuda_available,
    is_device_available,
    is_mempool_access_enabled,
    is_mempool_access_supported,
    is_mempool_enabled,
    is_mempool_supported,
    is_peer_access_enabled,
    is_peer_access_supported,
    map_cuda_device,
    set_device,
    set_mempool_enabled,
    set_mempool_release_threshold,
    synchronize,
    synchronize_device,
    unmap_cuda_device,
)
from .runtime.graph import (
    Graph,
    ScopedCapture,
    capture_begin,
    capture_end,
    capture_launch,
    is_conditional_graph_supported,
)
from .runtime.launch import launch
from .runtime.launch_object import Launch
from .runtime.module import (
    Module,
    clear_kernel_cache,
    force_load,
    get_module,
    get_module_options,
    load_module,
    set_module_options,
)
from .runtime.stream import (
    Event,
    ScopedStream,
    Stream,
    get_event_elapsed_time,
    get_stream,
    record_event,
    set_stream,
    synchronize_event,
    synchronize_stream,
    wait_event,
    wait_stream,
)
from .geometry.marching_cubes import MarchingCubes
from .geometry.bvh import Bvh, BvhConstructor, is_cubql_available
from .geometry.mesh import Mesh
from .geometry.query_types import BvhQuery, BvhQueryTiled, MeshQuery, MeshQueryAABB, MeshQueryAABBTiled, MeshQueryPoint, MeshQueryRay
from .geometry.hash_grid import HashGrid
from .geometry.query_types import HashGridQuery
from .builtins.hash_grid import hash_grid_point_id, hash_grid_query, hash_grid_query_next
from .geometry.volume import Volume
from .builtins.volume import (
    volume_index_to_world,
    volume_index_to_world_dir,
    volume_lookup,
    volume_lookup_f,
    volume_lookup_i,
    volume_lookup_index,
    volume_lookup_v,
    volume_sample,
    volume_sample_f,
    volume_sample_grad,
    volume_sample_grad_f,
    volume_sample_grad_index,
    volume_sample_i,
    volume_sample_index,
    volume_sample_v,
    volume_store,
    volume_store_f,
    volume_store_i,
    volume_store_v,
    volume_voxel_count,
    volume_world_to_index,
    volume_world_to_index_dir,
)
from .builtins.geometry import (
    bvh_get_group_root,
    bvh_query_aabb,
    bvh_query_capsule,
    bvh_query_next,
    bvh_query_ray,
    bvh_query_sphere,
    mesh_eval_face_normal,
    mesh_eval_position,
    mesh_eval_velocity,
    mesh_get,
    mesh_get_bvh,
    mesh_get_group_root,
    mesh_get_index,
    mesh_get_point,
    mesh_get_velocity,
    mesh_query_aabb,
    mesh_query_aabb_next,
    mesh_query_furthest_point_no_sign,
    mesh_query_next,
    mesh_query_point,
    mesh_query_point_no_sign,
    mesh_query_point_sign_normal,
    mesh_query_point_sign_parity,
    mesh_query_point_sign_winding_number,
    mesh_query_ray,
    mesh_query_ray_anyhit,
    mesh_query_ray_count_intersections,
    mesh_query_sphere,
)
from .builtins.geometry import (  # the tiled queries
    bvh_query_aabb_tiled,
    bvh_query_next_tiled,
    bvh_query_ray_tiled,
    mesh_query_aabb_next_tiled,
    mesh_query_aabb_tiled,
    tile_bvh_query_aabb,
    tile_bvh_query_next,
    tile_bvh_query_ray,
    tile_mesh_query_aabb,
    tile_mesh_query_aabb_next,
    tile_query_valid,
)
from .struct import struct
from .tape import Tape
from .types import (
    Float,
    Int,
    Scalar,
    bfloat16,
    bool,
    dtype_from_numpy,
    dtype_to_numpy,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .utils import ScopedTimer, transform_expand
from .vector_types import *
from .vector_types import matrix, quaternion, transformation, vector

__version__ = config.version

# As in Warp, wp.float(x) and wp.int(x) convert in kernels like float(x) and int(x)
float = float  # noqa: A001, PLW0127
int = int  # noqa: A001, PLW0127


def init():
    """Initialise weft. Optional: everything initialises lazily on first use."""
    return None

from .builtins import registry as _registry  # noqa: E402
from .runtime import host_calls as _host_calls  # noqa: E402

_registry.Builtin.host_dispatch = _host_calls.call  # builtins called from Python run their native code

from .array import array as _array_class  # noqa: E402
from .runtime.array_map import array_map as map  # noqa: A001, E402 (Warp's wp.map)
from .runtime.array_map import install_operators as _install_operators  # noqa: E402

_install_operators(_array_class)  # a + b, 2.0 * a, a %= b ... element-wise, through wp.map
_install_operators(indexedarray)


# The public names: everything a Warp user reaches as ``wp.NAME`` (tests/test_docs.py checks that
# each exists, has a docstring and is in the API reference, and that no other public name is
# missing here; submodules that only hold implementation are left out).
__all__ = [
    "abs", "acos", "add", "address_of", "adjoint", "argmax", "argmin", "array", "array1d", "array2d", "array3d",
    "array4d", "asin", "atan", "atan2", "atomic_add", "atomic_and", "atomic_cas", "atomic_exch", "atomic_max",
    "atomic_min", "atomic_or", "atomic_sub", "atomic_xor", "autograd", "bfloat16", "bit_and", "bit_or", "bit_xor",
    "block_dim", "bool", "Bvh", "bvh_get_group_root", "bvh_query_aabb", "bvh_query_aabb_tiled",
    "bvh_query_capsule", "bvh_query_next", "bvh_query_next_tiled", "bvh_query_ray", "bvh_query_ray_tiled",
    "bvh_query_sphere", "BvhConstructor", "BvhQuery", "BvhQueryTiled", "capture_begin", "capture_end",
    "capture_launch", "cast", "cbrt", "ceil", "checkpoint", "clamp", "clear_kernel_cache", "clone",
    "closest_point_edge_edge", "compile_aot_module", "config", "constant", "copy", "copysign", "cos", "cosh",
    "cross", "curlnoise", "cw_div", "cw_mul", "ddot", "degrees", "determinant", "DeterministicMode", "Device",
    "device_from_jax", "device_from_torch", "device_to_jax", "device_to_torch", "diag", "distributed", "div",
    "div_approx", "dot", "dtype_from_jax", "dtype_from_numpy", "dtype_from_torch", "dtype_to_jax",
    "dtype_to_numpy", "dtype_to_torch", "E", "e", "eig3", "empty", "empty_like", "erf", "erfc", "erfcinv",
    "erfinv", "Event", "exp", "expect_eq", "expect_near", "expect_neq", "fabricarray", "fabricarrayarray",
    "fixedarray", "Float", "float", "float16", "float32", "float64", "floor", "floordiv", "force_load", "frac",
    "from_dlpack", "from_jax", "from_numpy", "from_torch", "full", "full_like", "func", "func_grad", "func_native",
    "func_replay", "Function", "get_cuda_device", "get_cuda_device_count", "get_cuda_devices",
    "get_cuda_driver_version", "get_cuda_supported_archs", "get_cuda_toolkit_version", "get_device", "get_devices",
    "get_diag", "get_event_elapsed_time", "get_mempool_release_threshold", "get_module", "get_module_options",
    "get_preferred_device", "get_stream", "grad", "Graph", "half", "HALF_PI", "half_pi", "hash_grid_point_id",
    "hash_grid_query", "hash_grid_query_next", "HashGrid", "HashGridQuery", "identity", "indexedarray",
    "indexedarray1d", "indexedarray2d", "indexedarray3d", "indexedarray4d", "indexedfabricarray",
    "indexedfabricarrayarray", "INF", "inf", "init", "Int", "int", "int16", "int32", "int64", "int8", "interop",
    "intersect_tri_tri", "inverse", "inverse_approx", "invert", "is_conditional_graph_supported",
    "is_cpu_available", "is_cubql_available", "is_cuda_available", "is_device_available",
    "is_mempool_access_enabled", "is_mempool_access_supported", "is_mempool_enabled", "is_mempool_supported",
    "is_peer_access_enabled", "is_peer_access_supported", "isfinite", "isinf", "isnan", "jax_callable",
    "jax_kernel", "Kernel", "kernel", "Launch", "launch", "launch_tiled", "length", "length_sq", "lerp", "LN10",
    "ln10", "LN2", "ln2", "load_aot_module", "load_module", "log", "log10", "LOG10E", "log10e", "log2", "LOG2E",
    "log2e", "LOG_DEBUG", "LOG_ERROR", "LOG_INFO", "LOG_WARNING", "lower_bound", "lshift", "map",
    "map_cuda_device", "MarchingCubes", "mat22", "mat22d", "mat22f", "mat22h", "mat33", "mat33d", "mat33f",
    "mat33h", "mat44", "mat44d", "mat44f", "mat44h", "matrix", "matrix_from_cols", "matrix_from_rows", "max",
    "Mesh", "mesh_eval_face_normal", "mesh_eval_position", "mesh_eval_velocity", "mesh_get", "mesh_get_bvh",
    "mesh_get_group_root", "mesh_get_index", "mesh_get_point", "mesh_get_velocity", "mesh_query_aabb",
    "mesh_query_aabb_next", "mesh_query_aabb_next_tiled", "mesh_query_aabb_tiled",
    "mesh_query_furthest_point_no_sign", "mesh_query_next", "mesh_query_point", "mesh_query_point_no_sign",
    "mesh_query_point_sign_normal", "mesh_query_point_sign_parity", "mesh_query_point_sign_winding_number",
    "mesh_query_ray", "mesh_query_ray_anyhit", "mesh_query_ray_count_intersections", "mesh_query_sphere",
    "MeshQuery", "MeshQueryAABB", "MeshQueryAABBTiled", "MeshQueryPoint", "MeshQueryRay", "min", "mod", "Module",
    "mul", "NAN", "nan", "neg", "noise", "nonzero", "norm_huber", "norm_l1", "norm_l2", "norm_pseudo_huber",
    "normalize", "ones", "ones_like", "optim", "outer", "overload", "PHI", "phi", "PI", "pi", "pnoise", "poisson",
    "pos", "pow", "print", "printf", "qr3", "quat", "quat_from_axis_angle", "quat_from_euler", "quat_from_matrix",
    "quat_identity", "quat_inverse", "quat_rotate", "quat_rotate_inv", "quat_rpy", "quat_slerp",
    "quat_to_axis_angle", "quat_to_euler", "quat_to_matrix", "quat_to_rpy", "quat_twist", "quat_twist_angle",
    "quat_twist_angle_signed", "quatd", "quaternion", "quatf", "quath", "radians", "rand_init", "randf", "randi",
    "randn", "randu", "record_event", "ref", "rint", "round", "rshift", "sample_cdf", "sample_triangle",
    "sample_unit_cube", "sample_unit_disk", "sample_unit_hemisphere", "sample_unit_hemisphere_surface",
    "sample_unit_ring", "sample_unit_sphere", "sample_unit_sphere_surface", "sample_unit_square", "Scalar",
    "ScopedCapture", "ScopedDevice", "ScopedStream", "ScopedTimer", "select", "set_device", "set_mempool_enabled",
    "set_mempool_release_threshold", "set_module_options", "set_stream", "sign", "sin", "sinh", "skew",
    "smooth_normalize", "smoothstep", "spatial_adjoint", "spatial_bottom", "spatial_cross", "spatial_cross_dual",
    "spatial_dot", "spatial_matrix", "spatial_matrixd", "spatial_matrixf", "spatial_matrixh", "spatial_top",
    "spatial_vector", "spatial_vectord", "spatial_vectorf", "spatial_vectorh", "sqrt", "static", "step", "Stream",
    "stream_from_torch", "stream_to_torch", "struct", "sub", "svd2", "svd3", "synchronize", "synchronize_device",
    "synchronize_event", "synchronize_stream", "tan", "tanh", "Tape", "TAU", "tau", "tid", "tile", "tile_arange",
    "tile_argmax", "tile_argmin", "tile_assign", "tile_astype", "tile_atomic_add", "tile_atomic_add_indexed",
    "tile_axpy", "tile_broadcast", "tile_bvh_query_aabb", "tile_bvh_query_next", "tile_bvh_query_ray",
    "tile_cholesky", "tile_cholesky_inplace", "tile_cholesky_solve", "tile_cholesky_solve_inplace", "tile_dot",
    "tile_empty", "tile_extract", "tile_fft", "tile_from_thread", "tile_full", "tile_ifft", "tile_load",
    "tile_load_indexed", "tile_lower_solve", "tile_lower_solve_inplace", "tile_map", "tile_matmul", "tile_max",
    "tile_mesh_query_aabb", "tile_mesh_query_aabb_next", "tile_min", "tile_ones", "tile_query_valid", "tile_randf",
    "tile_randi", "tile_reduce", "tile_reshape", "tile_scan_exclusive", "tile_scan_inclusive",
    "tile_scan_max_inclusive", "tile_scan_min_inclusive", "tile_scatter_add", "tile_scatter_masked", "tile_sort",
    "tile_squeeze", "tile_stack", "tile_stack_clear", "tile_stack_count", "tile_stack_pop", "tile_stack_push",
    "tile_store", "tile_store_indexed", "tile_sum", "tile_transpose", "tile_upper_solve",
    "tile_upper_solve_inplace", "tile_view", "tile_zeros", "to_dlpack", "to_jax", "to_torch", "torch_function",
    "torch_kernel", "trace", "transform", "transform_compose", "transform_decompose", "transform_expand",
    "transform_from_matrix", "transform_get_rotation", "transform_get_translation", "transform_identity",
    "transform_inverse", "transform_multiply", "transform_point", "transform_set_rotation",
    "transform_set_translation", "transform_to_matrix", "transform_twist", "transform_vector", "transform_wrench",
    "transformation", "transformd", "transformf", "transformh", "transpose", "trunc", "types", "uint16", "uint32",
    "uint64", "uint8", "unmap_cuda_device", "untile", "utils", "vec2", "vec2b", "vec2bool", "vec2d", "vec2f",
    "vec2h", "vec2i", "vec2l", "vec2s", "vec2ub", "vec2ui", "vec2ul", "vec2us", "vec3", "vec3b", "vec3bool",
    "vec3d", "vec3f", "vec3h", "vec3i", "vec3l", "vec3s", "vec3ub", "vec3ui", "vec3ul", "vec3us", "vec4", "vec4b",
    "vec4bool", "vec4d", "vec4f", "vec4h", "vec4i", "vec4l", "vec4s", "vec4ub", "vec4ui", "vec4ul", "vec4us",
    "vector", "velocity_at_point", "Volume", "volume_index_to_world", "volume_index_to_world_dir", "volume_lookup",
    "volume_lookup_f", "volume_lookup_i", "volume_lookup_index", "volume_lookup_v", "volume_sample",
    "volume_sample_f", "volume_sample_grad", "volume_sample_grad_f", "volume_sample_grad_index", "volume_sample_i",
    "volume_sample_index", "volume_sample_v", "volume_store", "volume_store_f", "volume_store_i", "volume_store_v",
    "volume_voxel_count", "volume_world_to_index", "volume_world_to_index_dir", "wait_event", "wait_stream",
    "WarpCodegenAttributeError", "WarpCodegenError", "WarpCodegenIndexError", "WarpCodegenKeyError",
    "WarpCodegenTypeError", "WarpCodegenValueError", "WeftBuildError", "WeftCompileError", "where", "zeros",
    "zeros_like",
]
