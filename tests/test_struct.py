"""``@wp.struct``: Python instances, structs as kernel arguments, structs made and modified in
kernels and funcs, arrays of structs, and gradients through struct array fields (CPU only).

Covered:
- Python instances: field defaults, assignment with conversion, type errors;
- kernels taking structs by value (scalar, vec3, mat33, array and nested-struct fields), funcs
  taking, modifying and returning structs (by value: the caller's copy is unchanged);
- arrays of structs: kernel writes of records and of fields of records, the NumPy record view;
- gradients: array fields created with ``requires_grad=True`` carry gradients (also in nested
  structs and for vector fields), ``tape.backward(grads={params.output: seed})``, local struct
  values in the backward pass (finite differences), and the Issue-3 Jacobian: a kernel whose
  inputs and outputs live in a struct, differentiated row by row with one-hot seeds on the
  output field and ``tape.zero()`` between rows, equals the Jacobian of the same kernel with
  plain array arguments and the analytic one;
- output array fields without ``requires_grad``: seeding one works (its gradient buffer is
  made on demand); an intermediate one makes ``tape.backward`` warn that gradients stop there.

All kernels are defined at module level so one C++ build covers them.
"""

import math
import warnings

import numpy as np
import pytest

import weft as wp
from weft.struct import StructInstance
from fd_check import tape_vs_fd

RNG = np.random.default_rng(42)
FD_STEP = 1e-6


@wp.struct
class Inner:
    a: float
    b: wp.vec3


@wp.struct
class State:
    x: float
    i: int
    d: wp.float64
    v: wp.vec3
    m: wp.mat33
    arr: wp.array(dtype=float)
    inner: Inner


@wp.struct
class Deep:
    inner: Inner
    weights: wp.array(dtype=wp.float64)
    state: State


# ---------------------------------------------------------------------------------------------
# 1. Python instances


def test_field_defaults():
    s = State()
    assert s.x == 0.0 and s.i == 0 and s.d == 0.0
    assert s.v == wp.vec3(0.0, 0.0, 0.0) and isinstance(s.v, wp.vec3)
    assert isinstance(s.m, wp.mat33) and np.array_equal(np.array(s.m).reshape(3, 3), np.zeros((3, 3)))
    assert s.arr is None
    assert s.inner.a == 0.0 and s.inner.b == wp.vec3()
    assert Deep().state.inner.b == wp.vec3()
    assert State().inner is not State().inner  # every instance gets its own nested default


def test_field_assignment_converts_values():
    s = State()
    s.x = 2
    assert s.x == 2.0 and isinstance(s.x, float)
    s.i = 7
    assert s.i == 7
    s.d = wp.float64(0.1)
    assert s.d == 0.1
    s.v = (1, 2, 3)
    assert isinstance(s.v, wp.vec3) and s.v == wp.vec3(1.0, 2.0, 3.0)
    s.v = wp.vec3d(4.0, 5.0, 6.0)  # converted to the field's type
    assert isinstance(s.v, wp.vec3) and s.v == (4.0, 5.0, 6.0)
    s.m = np.eye(3)
    assert isinstance(s.m, wp.mat33) and np.array_equal(np.array(s.m).reshape(3, 3), np.eye(3))
    a = wp.zeros(3, dtype=float)
    s.arr = a
    assert s.arr is a  # arrays are held by reference
    s.arr = None
    assert s.arr is None
    inner = Inner()
    inner.a = 1.5
    s.inner = inner
    assert s.inner.a == 1.5
    s.inner.b = wp.vec3(1.0, 1.0, 1.0)  # nested field assignment
    assert s.inner.b == (1.0, 1.0, 1.0)


@pytest.mark.parametrize(
    "field, value, error",
    [
        ("arr", wp.zeros(3, dtype=wp.float64), TypeError),  # wrong array dtype
        ("arr", wp.zeros((2, 2), dtype=float), TypeError),  # wrong ndim
        ("arr", [1.0, 2.0], TypeError),  # not an array
        ("inner", 5, TypeError),
        ("inner", State(), TypeError),  # another struct type
        ("x", "abc", TypeError),
        ("i", 2.7, TypeError),  # Warp: 'float' object cannot be interpreted as an integer
        ("nope", 1.0, AttributeError),
    ],
    ids=["arr-dtype", "arr-ndim", "arr-list", "inner-int", "inner-other-struct", "float-str", "int-float", "unknown"],
)
def test_field_assignment_type_errors(field, value, error):
    s = State()
    with pytest.raises(error):
        setattr(s, field, value)


def test_repr_names_the_fields():
    s = State()
    s.x = 1.5
    text = repr(s)
    assert text.startswith("State(") and "x=1.5" in text and "inner=Inner(" in text


# ---------------------------------------------------------------------------------------------
# 2. Structs by value in kernels; structs made and modified in kernels and funcs


@wp.func
def make_inner(a: float) -> Inner:
    r = Inner()
    r.a = a
    r.b = wp.vec3(a, 2.0 * a, 3.0 * a)
    return r


@wp.func
def scaled(s: State, k: float):
    s.x = s.x * k  # modifies the func's copy only
    s.inner.a = s.inner.a + k
    s.v[2] = k
    return s


@wp.kernel
def struct_values_kernel(
    s: State, out: wp.array(dtype=float), recs: wp.array(dtype=Inner), vout: wp.array(dtype=wp.vec3)
):
    i = wp.tid()
    t = scaled(s, 2.0)
    local = State()
    local.x = 3.0
    local.inner = make_inner(1.5)
    local.inner.b.y = 7.0  # nested component write
    local.inner.b[2] += 1.0
    if i == 0:
        out[0] = s.x
        out[1] = t.x
        out[2] = t.inner.a
        out[3] = s.v[1] + s.m[2, 2] + s.arr[1] + float(s.i) + float(s.d)
        out[4] = local.inner.b[1] + local.inner.a + local.x
        out[5] = s.inner.b.z
        out[6] = local.inner.b.z
        out[7] = float(s.arr.shape[0])
        vout[0] = t.v
        vout[1] = s.v
        vout[2] = s.m * s.inner.b
    recs[i] = make_inner(float(i))
    recs[i].a = 9.0  # field write through an array element
    r = recs[i]
    r.b.x = 11.0
    recs[i] = r


def filled_state():
    s = State()
    s.x = 1.5
    s.i = 2
    s.d = 0.25
    s.v = wp.vec3(1.0, 2.0, 3.0)
    s.m = wp.mat33(*range(9))
    s.arr = wp.array([5.0, 6.0, 7.0], dtype=float)
    s.inner.a = 0.25
    s.inner.b = wp.vec3(4.0, 5.0, 6.0)
    return s


def test_structs_by_value_and_in_funcs():
    s = filled_state()
    out = wp.zeros(8, dtype=float)
    recs = wp.zeros(2, dtype=Inner)
    vout = wp.zeros(3, dtype=wp.vec3)
    wp.launch(struct_values_kernel, 2, inputs=[s, out, recs, vout])
    np.testing.assert_allclose(
        out.numpy(), [1.5, 3.0, 2.25, 2.0 + 8.0 + 6.0 + 2.0 + 0.25, 7.0 + 1.5 + 3.0, 6.0, 5.5, 3.0]
    )
    np.testing.assert_array_equal(vout.numpy(), [[1, 2, 2], [1, 2, 3], np.arange(9.0).reshape(3, 3) @ [4, 5, 6]])
    assert s.x == 1.5 and s.inner.a == 0.25  # the caller's instance is untouched
    rec = recs.numpy().view(Inner.np_dtype)
    np.testing.assert_array_equal(rec["a"], [9.0, 9.0])
    np.testing.assert_array_equal(rec["b"], [[11.0, 0.0, 0.0], [11.0, 2.0, 3.0]])


def test_struct_instances_are_repacked_at_each_launch():
    s = filled_state()
    out = wp.zeros(8, dtype=float)
    recs = wp.zeros(2, dtype=Inner)
    vout = wp.zeros(3, dtype=wp.vec3)
    wp.launch(struct_values_kernel, 1, inputs=[s, out, recs, vout])
    s.x = -4.0
    s.arr = wp.array([0.0, 100.0], dtype=float)
    wp.launch(struct_values_kernel, 1, inputs=[s, out, recs, vout])
    got = out.numpy()
    assert got[0] == -4.0 and got[7] == 2.0 and got[3] == 2.0 + 8.0 + 100.0 + 2.0 + 0.25


def test_wrong_struct_type_is_rejected():
    with pytest.raises((TypeError, RuntimeError, ValueError)):
        wp.launch(
            struct_values_kernel,
            1,
            inputs=[Inner(), wp.zeros(8, dtype=float), wp.zeros(1, dtype=Inner), wp.zeros(3, dtype=wp.vec3)],
        )


# ---------------------------------------------------------------------------------------------
# 3. Arrays of structs


@wp.kernel
def fill_records_kernel(recs: wp.array(dtype=Inner)):
    i = wp.tid()
    r = Inner()
    r.a = float(i) * 0.5
    r.b = wp.vec3(float(i), 1.0, -float(i))
    recs[i] = r


@pytest.mark.fixed_device("writes through .numpy(), a zero-copy view only on the CPU")
def test_array_of_structs_record_view():
    recs = wp.zeros(4, dtype=Inner)
    assert recs.shape == (4,) and recs.dtype is Inner
    wp.launch(fill_records_kernel, 4, inputs=[recs])
    view = recs.numpy().view(Inner.np_dtype)  # weft: the ctypes layout as a NumPy record dtype
    assert Inner.np_dtype.names == ("a", "b")
    np.testing.assert_array_equal(view["a"], [0.0, 0.5, 1.0, 1.5])
    np.testing.assert_array_equal(view["b"][:, 0], [0.0, 1.0, 2.0, 3.0])
    view["a"][2] = 42.0  # a zero-copy view on the CPU
    np.testing.assert_array_equal(recs.numpy().view(Inner.np_dtype)["a"], [0.0, 0.5, 42.0, 1.5])


def test_array_of_structs_numpy_has_field_names():
    recs = wp.zeros(2, dtype=Inner)
    got = recs.numpy()
    assert got.dtype.names == ("a", "b")
    assert got["b"].shape == (2, 3)


def test_array_of_structs_list_gives_instances():
    recs = wp.zeros(3, dtype=Inner)
    wp.launch(fill_records_kernel, 3, inputs=[recs])
    items = recs.list()
    assert all(isinstance(r, StructInstance) and isinstance(r, Inner.cls) for r in items)
    assert [r.a for r in items] == [0.0, 0.5, 1.0] and items[2].b == wp.vec3(2.0, recs.numpy()["b"][2, 1], recs.numpy()["b"][2, 2])


def test_array_of_structs_from_instances():
    r = Inner()
    r.a = 1.5
    r.b = wp.vec3(1.0, 2.0, 3.0)
    recs = wp.array([r, r], dtype=Inner)
    view = recs.numpy().view(Inner.np_dtype)
    np.testing.assert_array_equal(view["a"], [1.5, 1.5])


# ---------------------------------------------------------------------------------------------
# 4. Gradients through struct array fields


@wp.struct
class Params:
    x: wp.array(dtype=wp.float64)
    y: wp.array(dtype=wp.float64)
    scale: wp.float64


@wp.func
def model(x: wp.array(dtype=wp.float64), i: int, scale: wp.float64):
    n = x.shape[0]
    return scale * x[i] * x[(i + 1) % n] + wp.sin(x[i])


@wp.kernel
def struct_model_kernel(p: Params):
    i = wp.tid()
    p.y[i] = model(p.x, i, p.scale)


@wp.kernel
def plain_model_kernel(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), scale: wp.float64):
    i = wp.tid()
    y[i] = model(x, i, scale)


def analytic_jacobian(x, scale):
    n = len(x)
    J = np.zeros((n, n))
    for i in range(n):
        J[i, i] += scale * x[(i + 1) % n] + math.cos(x[i])
        J[i, (i + 1) % n] += scale * x[i]
    return J


def jacobian_rows(tape, output, inputs_grad, n):
    """Row by row: one-hot seed on ``output``, read ``inputs_grad``, then tape.zero()."""
    rows = []
    for r in range(n):
        seed = np.zeros(n)
        seed[r] = 1.0
        tape.backward(grads={output: seed})
        rows.append(inputs_grad().copy())
        tape.zero()
    return np.array(rows)


def test_struct_jacobian_matches_plain_arrays_and_analytic():
    """Issue 3, Done when: Jacobian of a kernel whose inputs and outputs live in a struct."""
    n = 5
    x_np = RNG.uniform(-1.0, 1.0, n)
    scale = 1.75

    p = Params()
    p.x = wp.array(x_np, dtype=wp.float64, requires_grad=True)
    p.y = wp.zeros(n, dtype=wp.float64, requires_grad=True)
    p.scale = scale
    tape = wp.Tape()
    with tape:
        wp.launch(struct_model_kernel, n, inputs=[p])
    J_struct = jacobian_rows(tape, p.y, lambda: p.x.grad.numpy(), n)
    assert not np.any(p.x.grad.numpy()) and not np.any(p.y.grad.numpy())  # tape.zero() reached the fields

    x = wp.array(x_np, dtype=wp.float64, requires_grad=True)
    y = wp.zeros(n, dtype=wp.float64, requires_grad=True)
    tape2 = wp.Tape()
    with tape2:
        wp.launch(plain_model_kernel, n, inputs=[x, y, wp.float64(scale)])
    J_plain = jacobian_rows(tape2, y, lambda: x.grad.numpy(), n)

    np.testing.assert_array_equal(p.y.numpy(), y.numpy())
    np.testing.assert_array_equal(J_struct, J_plain)
    np.testing.assert_allclose(J_struct, analytic_jacobian(x_np, scale), rtol=1e-14, atol=1e-14)


def test_backward_without_zero_accumulates_struct_field_gradients():
    n = 3
    p = Params()
    p.x = wp.array([0.5, -0.25, 1.0], dtype=wp.float64, requires_grad=True)
    p.y = wp.zeros(n, dtype=wp.float64, requires_grad=True)
    p.scale = 2.0
    tape = wp.Tape()
    with tape:
        wp.launch(struct_model_kernel, n, inputs=[p])
    tape.backward(grads={p.y: np.ones(n)})
    once = p.x.grad.numpy().copy()
    tape.backward(grads={p.y: np.ones(n)})
    np.testing.assert_allclose(p.x.grad.numpy(), 2 * once, rtol=1e-15)
    np.testing.assert_allclose(once, analytic_jacobian(p.x.numpy(), 2.0).sum(0), rtol=1e-14)


@wp.struct
class Bodies:
    pos: wp.array(dtype=wp.vec3d)
    rot: wp.array(dtype=wp.mat33d)
    out: wp.array(dtype=wp.vec3d)


@wp.struct
class World:
    bodies: Bodies
    gain: wp.array(dtype=wp.float64)
    offset: wp.vec3d


@wp.kernel
def world_kernel(w: World):
    i = wp.tid()
    b = w.bodies
    w.bodies.out[i] = w.gain[0] * (b.rot[i] * b.pos[i]) + wp.cross(b.pos[i], w.offset)


def test_nested_struct_vector_and_matrix_fields_carry_gradients():
    n = 4
    pos_np = RNG.uniform(-1, 1, (n, 3))
    rot_np = RNG.uniform(-1, 1, (n, 3, 3))
    offset = np.array([0.5, -1.0, 2.0])
    b = Bodies()
    b.pos = wp.array(pos_np, dtype=wp.vec3d, requires_grad=True)
    b.rot = wp.array(rot_np, dtype=wp.mat33d, requires_grad=True)
    b.out = wp.zeros(n, dtype=wp.vec3d, requires_grad=True)
    w = World()
    w.bodies = b
    w.gain = wp.array([1.5], dtype=wp.float64, requires_grad=True)
    w.offset = wp.vec3d(*offset)
    tape = wp.Tape()
    with tape:
        wp.launch(world_kernel, n, inputs=[w])
    expected = 1.5 * np.einsum("nij,nj->ni", rot_np, pos_np) + np.cross(pos_np, offset)
    np.testing.assert_allclose(w.bodies.out.numpy(), expected, rtol=1e-14)
    seed = RNG.uniform(0.5, 1.5, (n, 3))
    tape.backward(grads={w.bodies.out: seed})
    # d/dpos: 1.5 R^T g + offset x g ; d/dR: 1.5 g pos^T ; d/dgain: sum g . (R pos)
    np.testing.assert_allclose(
        b.pos.grad.numpy(), 1.5 * np.einsum("nji,nj->ni", rot_np, seed) + np.cross(offset, seed), rtol=1e-13
    )
    np.testing.assert_allclose(b.rot.grad.numpy(), 1.5 * np.einsum("ni,nj->nij", seed, pos_np), rtol=1e-13)
    np.testing.assert_allclose(
        w.gain.grad.numpy(), [np.sum(seed * np.einsum("nij,nj->ni", rot_np, pos_np))], rtol=1e-13
    )


@wp.struct
class Particle:
    p: wp.vec3d
    m: wp.float64


@wp.func
def energy(a: Particle, b: Particle) -> wp.float64:
    d = a.p - b.p
    return a.m * b.m * wp.dot(d, d)


@wp.kernel
def local_struct_kernel(x: wp.array(dtype=wp.vec3d), m: wp.array(dtype=wp.float64), e: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a = Particle()
    a.p = x[i]
    a.m = m[i]
    b = Particle()
    b.p = x[(i + 1) % x.shape[0]] * m[i]
    b.m = wp.float64(2.0)
    b.p.y += a.m
    e[i] = energy(a, b)


def test_gradients_through_local_struct_values():
    n = 4
    x_np = RNG.uniform(-1, 1, (n, 3))
    m_np = RNG.uniform(0.5, 1.5, n)
    w = RNG.uniform(0.5, 1.5, n)

    def run(xv, mv, requires_grad=False):
        x = wp.array(xv, dtype=wp.vec3d, requires_grad=requires_grad)
        m = wp.array(mv, dtype=wp.float64, requires_grad=requires_grad)
        e = wp.zeros(n, dtype=wp.float64, requires_grad=requires_grad)
        return x, m, e

    x, m, e = run(x_np, m_np, True)
    tape = wp.Tape()
    with tape:
        wp.launch(local_struct_kernel, n, inputs=[x, m, e])
    tape.backward(grads={e: w})

    def loss(xv, mv):
        x2, m2, e2 = run(xv, mv)
        wp.launch(local_struct_kernel, n, inputs=[x2, m2, e2])
        return np.sum(w * e2.numpy())

    for value, grad, other_first in ((x_np, x.grad.numpy(), True), (m_np, m.grad.numpy(), False)):
        fd = np.zeros_like(value)
        for c in range(value.size):
            hi, lo = value.copy(), value.copy()
            hi.flat[c] += FD_STEP
            lo.flat[c] -= FD_STEP
            args = ((hi, m_np), (lo, m_np)) if other_first else ((x_np, hi), (x_np, lo))
            fd.flat[c] = (loss(*args[0]) - loss(*args[1])) / (2 * FD_STEP)
        np.testing.assert_allclose(grad, fd, rtol=1e-7, atol=1e-8)


# ---------------------------------------------------------------------------------------------
# 5. Output array fields without requires_grad


@wp.kernel
def seeded_output_kernel(p: Params):
    i = wp.tid()
    p.y[i] = p.scale * p.x[i] * p.x[i]


def test_seeding_an_output_field_without_requires_grad_works():
    """tape.backward(grads={p.y: seed}) on a field made without requires_grad: the gradient
    buffer is made on demand and the result is right (not silently zero)."""
    p = Params()
    p.x = wp.array([1.0, 2.0, -3.0], dtype=wp.float64, requires_grad=True)
    p.y = wp.zeros(3, dtype=wp.float64)
    p.scale = 0.5
    tape = wp.Tape()
    with tape:
        wp.launch(seeded_output_kernel, 3, inputs=[p])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no warning either
        tape.backward(grads={p.y: np.array([1.0, 10.0, 100.0])})
    np.testing.assert_allclose(p.x.grad.numpy(), [1.0, 20.0, -300.0])


@wp.struct
class Chain:
    x: wp.array(dtype=wp.float64)
    tmp: wp.array(dtype=wp.float64)
    loss: wp.array(dtype=wp.float64)


@wp.kernel
def chain_stage1_kernel(c: Chain):
    i = wp.tid()
    c.tmp[i] = c.x[i] * c.x[i]


@wp.kernel
def chain_stage2_kernel(c: Chain):
    i = wp.tid()
    wp.atomic_add(c.loss, 0, c.tmp[i])


def test_intermediate_field_without_requires_grad_warns():
    """An intermediate output field without requires_grad stops the gradient; tape.backward says so."""
    c = Chain()
    c.x = wp.array([1.0, 2.0, 3.0], dtype=wp.float64, requires_grad=True)
    c.tmp = wp.zeros(3, dtype=wp.float64)  # forgot requires_grad
    c.loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(chain_stage1_kernel, 3, inputs=[c])
        wp.launch(chain_stage2_kernel, 3, inputs=[c])
    assert c.loss.numpy()[0] == 14.0
    with pytest.warns(UserWarning, match=r"tmp.*requires_grad"):
        tape.backward(c.loss)
    np.testing.assert_array_equal(c.x.grad.numpy(), [0.0, 0.0, 0.0])

    # with requires_grad the same chain differentiates
    c.tmp = wp.zeros(3, dtype=wp.float64, requires_grad=True)
    c.loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    c.x.grad.zero_()
    tape = wp.Tape()
    with tape:
        wp.launch(chain_stage1_kernel, 3, inputs=[c])
        wp.launch(chain_stage2_kernel, 3, inputs=[c])
    tape.backward(c.loss)
    np.testing.assert_array_equal(c.x.grad.numpy(), [2.0, 4.0, 6.0])


# ---------------------------------------------------------------------------------------------
# a struct variable changed on one branch only: the branches join as a where() of structs, whose
# adjoint is the struct's own (found by the gradient fuzzer: the C++ did not compile)
# ---------------------------------------------------------------------------------------------


@wp.struct
class Branchy:
    a: wp.float64
    v: wp.vec3d


@wp.func
def branchy_value(p: wp.float64):
    st = Branchy()
    st.a = p
    st.v = wp.vec3d(p, p * p, wp.float64(1.0))
    if p > wp.float64(0.0):
        st.a = p * wp.float64(3.0)
    else:
        st.v = st.v * p
    return st.a + wp.dot(st.v, st.v)


@wp.kernel
def k_struct_on_one_branch_in_func(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = branchy_value(x[i])


@wp.kernel
def k_struct_on_one_branch(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    st = Branchy()
    st.a = x[i]
    if x[i] > wp.float64(0.0):
        st.a = wp.sin(x[i]) * wp.float64(3.0)
    y[i] = st.a * st.a


@pytest.mark.parametrize("kernel", [k_struct_on_one_branch, k_struct_on_one_branch_in_func], ids=["kernel", "func"])
def test_struct_assigned_on_one_branch_has_gradients(kernel):
    x = np.array([-1.3, -0.4, 0.5, 1.7])
    tape_vs_fd(kernel, x, (4,), np.random.default_rng(5))


@wp.struct
class SharedInner:
    w: wp.vec2


@wp.struct
class SharedRecord:
    value: float
    n: int
    inner: SharedInner


@wp.kernel
def shared_struct_reads(idx: wp.array(dtype=int), data: wp.array(dtype=SharedRecord), out: wp.array(dtype=float)):
    i = wp.tid()
    s = data[idx[i]]  # several threads read the same element: its gradient is added atomically
    out[i] = s.value * s.value + s.inner.w[1] * 3.0


def test_gradient_of_struct_elements_read_by_several_threads():
    records = wp.zeros(2, dtype=SharedRecord)
    view = records.numpy()
    view["value"] = [2.0, 5.0]
    data = wp.array(view, dtype=SharedRecord, requires_grad=True)
    out = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(shared_struct_reads, 3, [wp.array([0, 0, 1], dtype=int), data, out])
    tape.backward(grads={out: wp.ones(3, dtype=float)})
    g = data.grad.numpy()
    np.testing.assert_allclose(g["value"], [8.0, 10.0])
    np.testing.assert_allclose(g["inner"]["w"], [[0.0, 6.0], [0.0, 3.0]])


@wp.struct
class ConstInner:
    mat: wp.mat33
    vec: wp.vec3
    i: int


@wp.struct
class ConstOuter:
    s: ConstInner
    x: float


def make_const_outer():
    o = ConstOuter()
    o.s.mat = wp.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
    o.s.vec = wp.vec3(1.0, 2.0, 3.0)
    o.s.i = 7
    o.x = 2.5
    return o


CONST_OUTER = make_const_outer()


@wp.kernel
def struct_constants(out: wp.array(dtype=float)):
    s = wp.static(make_const_outer())  # a struct built at build time
    out[0] = s.s.mat[1, 1] + s.s.vec[2] + float(s.s.i) + s.x
    out[1] = CONST_OUTER.x * 2.0  # a global struct


def test_struct_instances_known_at_build_time_are_kernel_constants():
    out = wp.zeros(2, dtype=float)
    wp.launch(struct_constants, 1, [out])
    assert out.numpy().tolist() == [17.5, 5.0]


def test_numpy_records_shape_matrix_fields_and_type_half_fields():
    @wp.struct
    class Shaped:
        m: wp.mat33
        h: wp.float16
        v: wp.vec2

    recs = wp.zeros(2, dtype=Shaped)
    view = recs.numpy()
    assert view["m"].shape == (2, 3, 3) and view["v"].shape == (2, 2) and view["h"].dtype == np.float16
    s = Shaped()
    s.m = wp.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
    s.h = 1.5
    one = wp.array([s], dtype=Shaped).numpy()[0]
    assert one["m"][1, 2] == 6.0 and one["h"] == 1.5


@wp.struct
class Factors:
    x: wp.array(dtype=float)
    y: wp.array(dtype=float)


@wp.kernel
def k_multiply_factors(f: Factors, z: wp.array(dtype=float)):
    i = wp.tid()
    z[i] = f.x[i] * f.y[i]


def test_tape_gradients_of_a_struct_argument_are_a_struct_of_gradients():
    f = Factors()
    f.x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    f.y = wp.array([4.0, 5.0, 6.0], dtype=float, requires_grad=True)
    z = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_multiply_factors, dim=3, inputs=[f], outputs=[z])
    tape.backward(grads={z: wp.ones(3, dtype=float)})
    g = tape.gradients[f]
    np.testing.assert_array_equal(g.x.numpy(), f.y.numpy())
    np.testing.assert_array_equal(g.y.numpy(), f.x.numpy())
    assert g.x is f.x.grad
    tape.zero()  # struct entries are zeroed through their arrays
    np.testing.assert_array_equal(f.x.grad.numpy(), np.zeros(3))
    tape.backward(grads={z: wp.ones(3, dtype=float)})
    tape.reset()  # forgets the launches; the gradients stay tracked, zeroed (as in Warp)
    assert not tape.launches and tape.gradients[f].y is f.y.grad
    np.testing.assert_array_equal(tape.gradients[f].y.numpy(), np.zeros(3))
