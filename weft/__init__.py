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
