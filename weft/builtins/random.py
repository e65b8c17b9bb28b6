"""Random numbers in kernels: ``wp.rand_init``, ``wp.randi/randu/randf/randn``, ``wp.sample_*``
and ``wp.poisson``, with Warp's signatures (checked against warp-lang 1.19).

A random state is a ``uint32``. In Warp the draws take the state by reference and advance it
in place. weft values are immutable, so each state-advancing builtin is declared here returning
a tuple ``(value, new_state)`` (C++ in native/random.h); the frontend lowers ``wp.randf(rng)``
to that call, rebinds the name ``rng`` to the new state and yields the value
(codegen/special_calls.py, ``_call_advancing_state``). A state that is not a plain variable
(``wp.randf(wp.rand_init(1))``) is simply not advanced.

Called from Python (outside kernels) rand_init, randi, randu and randf compute the same values
as kernels and, like Warp, do not modify the state passed in.

None of these is differentiable.
"""

from __future__ import annotations

from .. import types as wt
from .. import vector_types as vt
from .registry import builtin, p

_U32 = 0xFFFFFFFF


def _hash(x: int) -> int:
    """The generator's 32-bit hash (same as rand_hash in native/random.h)."""
    s = (x * 747796405 + 2891336453) & _U32
    w = (((s >> ((s >> 28) + 4)) ^ s) * 277803737) & _U32
    return ((w >> 22) ^ w) & _U32


def _py_rand_init(seed, offset=None):
    x = int(seed) & _U32
    if offset is not None:
        x = (x + _hash(int(offset) & _U32)) & _U32
    return _hash(x)


def _py_randu(state, low=None, high=None):
    h = _hash(int(state) & _U32)
    if low is None:
        return h
    r = (int(high) - int(low)) & _U32
    return (int(low) + h % r) & _U32 if r else int(low)


def _py_randi(state, low=None, high=None):
    h = _hash(int(state) & _U32)
    if low is None:
        return h - (1 << 32) if h >= (1 << 31) else h
    r = (int(high) - int(low)) & _U32
    v = (int(low) + h % r) & _U32 if r else int(low) & _U32
    return v - (1 << 32) if v >= (1 << 31) else v


def _py_randf(state, low=None, high=None):
    import numpy as np

    u = np.float32(_hash(int(state) & _U32) >> 8) * np.float32(1.0 / 16777216.0)
    if low is None:
        return float(u)
    lo, hi = np.float32(low), np.float32(high)
    return float(lo + (hi - lo) * u)


u32, i32, f32 = wt.uint32, wt.int32, wt.float32
_vec2 = vt.vector(2, wt.float32)
_vec3 = vt.vector(3, wt.float32)


def _advancing(value_type):
    """Result type of a state-advancing builtin: (value, new_state)."""
    return wt.TupleType([value_type, u32])


rand_init = builtin("rand_init", "Initialize a random number generator state from a seed (and an offset, e.g. the thread index)", "random", python_impl=_py_rand_init)
rand_init.add(p("seed", i32), u32, differentiable=False)
rand_init.add(p("seed", i32, "offset", i32), u32, differentiable=False)


def _state_builtin(name, doc, signatures, python_impl=None):
    b = builtin(name, doc, "random", python_impl=python_impl)
    for params, value_type in signatures:
        b.add(p("state", u32, *params), _advancing(value_type), differentiable=False)
    b.advances_state = True
    return b


randi = _state_builtin(
    "randi",
    "A uniform random int32 in [-2^31, 2^31), or in [low, high); advances state",
    [((), i32), (("low", i32, "high", i32), i32)],
    _py_randi,
)
randu = _state_builtin(
    "randu",
    "A uniform random uint32 in [0, 2^32), or in [low, high); advances state",
    [((), u32), (("low", u32, "high", u32), u32)],
    _py_randu,
)
randf = _state_builtin(
    "randf",
    "A uniform random float in [0, 1) (multiples of 2^-24), or in [low, high); advances state",
    [((), f32), (("low", f32, "high", f32), f32)],
    _py_randf,
)
randn = _state_builtin("randn", "A standard normal random float; advances state", [((), f32)])
sample_cdf = _state_builtin(
    "sample_cdf",
    "An index drawn from the distribution whose CDF is the 1-d float array cdf; advances state",
    [(("cdf", wt.ArrayType(f32, 1)), i32)],
)
sample_triangle = _state_builtin(
    "sample_triangle", "Uniform barycentric coordinates (u, v) on a triangle; advances state", [((), _vec2)]
)
sample_unit_ring = _state_builtin("sample_unit_ring", "A uniform point on the unit circle; advances state", [((), _vec2)])
sample_unit_disk = _state_builtin("sample_unit_disk", "A uniform point in the unit disk; advances state", [((), _vec2)])
sample_unit_sphere_surface = _state_builtin(
    "sample_unit_sphere_surface", "A uniform point on the unit sphere; advances state", [((), _vec3)]
)
sample_unit_sphere = _state_builtin("sample_unit_sphere", "A uniform point in the unit ball; advances state", [((), _vec3)])
sample_unit_hemisphere_surface = _state_builtin(
    "sample_unit_hemisphere_surface", "A uniform point on the unit hemisphere z >= 0; advances state", [((), _vec3)]
)
sample_unit_hemisphere = _state_builtin(
    "sample_unit_hemisphere", "A uniform point in the unit half-ball z >= 0; advances state", [((), _vec3)]
)
sample_unit_square = _state_builtin(
    "sample_unit_square", "A uniform point in the square [-0.5, 0.5)^2; advances state", [((), _vec2)]
)
sample_unit_cube = _state_builtin("sample_unit_cube", "A uniform point in the cube [-0.5, 0.5)^3; advances state", [((), _vec3)])
poisson = _state_builtin("poisson", "A Poisson-distributed uint32 with mean lam; advances state", [(("lam", f32), u32)])

STATE_BUILTINS = [
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
]


# --- gradient noise (native/noise.h): the state is a seed, not advanced; differentiable in x --
_vec4 = vt.vector(4, wt.float32)

noise = builtin("noise", "Perlin gradient noise at x (float, vec2, vec3 or vec4), seeded by state: Warp's field for the same state", "random")
noise.add(p("state", u32, "x", f32), f32)
noise.add(p("state", u32, "xy", _vec2), f32)
noise.add(p("state", u32, "xyz", _vec3), f32)
noise.add(p("state", u32, "xyzt", _vec4), f32)

pnoise = builtin("pnoise", "Periodic Perlin gradient noise: pnoise(state, x + px, px) == pnoise(state, x, px); a period <= 0 does not wrap", "random")
pnoise.add(p("state", u32, "x", f32, "px", i32), f32)
pnoise.add(p("state", u32, "xy", _vec2, "px", i32, "py", i32), f32)
pnoise.add(p("state", u32, "xyz", _vec3, "px", i32, "py", i32, "pz", i32), f32)
pnoise.add(p("state", u32, "xyzt", _vec4, "px", i32, "py", i32, "pz", i32, "pt", i32), f32)

curlnoise = builtin(
    "curlnoise",
    "Divergence-free noise (Warp's field): curl-like sums of Perlin gradients over octaves (lacunarity, gain) at xy, xyz or xyzt",
    "random",
)
for _name, _x, _r in (("xy", _vec2, _vec2), ("xyz", _vec3, _vec3), ("xyzt", _vec4, _vec3)):
    _full = ("state", u32, _name, _x, "octaves", u32, "lacunarity", f32, "gain", f32)
    for _n in (2, 3, 4, 5):
        curlnoise.add(p(*_full[: 2 * _n]), _r)
