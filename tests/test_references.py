"""``wp.ref[T]`` parameters (pass by reference) and ``@wp.func_native`` snippets.

weft compiles references as copy-in / copy-out: the func returns the final values of its
reference parameters and the call stores them back where the arguments live, so they work in
dynamic loops and carry gradients (Warp refuses a backward pass through them).
"""

import numpy as np
import pytest

import weft as wp
from tests import fd_check
from weft.codegen.errors import WeftBuildError

F64 = wp.float64


def test_reference_type_is_compared_by_its_value_type():
    r = wp.ref[wp.int32]
    assert isinstance(r, wp.types.Reference)
    assert r.dtype is wp.int32 and r.value_type is wp.int32
    assert repr(r) == "wp.ref[int32]" and repr(wp.ref[wp.vec3]) == "wp.ref[vec3f]"
    assert r == wp.ref[wp.int32] and hash(r) == hash(wp.ref[wp.int32]) and r != wp.ref[wp.float32]
    with pytest.raises(TypeError, match="annotation"):
        wp.ref(3)


@wp.func
def _bump(x: wp.ref[wp.int32]):
    x += 1


@wp.func
def _bump_twice(x: wp.ref[wp.int32]):
    _bump(x)  # a reference forwarded to another reference
    _bump(x)


@wp.func
def _add_then_double(x: wp.ref[wp.float32], delta: wp.float32) -> wp.float32:
    old = x
    x = x + delta
    if delta > 100.0:
        return old  # an early return keeps the value x had then
    x = x * 2.0
    return old


@wp.struct
class _Counter:
    count: wp.int32
    offset: wp.vec3


@wp.func
def _count(c: wp.ref[_Counter]):
    c.count += 1
    c.offset[1] += 0.5


@wp.func
def _swap(x: wp.ref[wp.float32], y: wp.ref[wp.float32]):
    x, y = y, x  # both right-hand values are read before either reference is written


@wp.kernel
def _reference_targets(arr: wp.array(dtype=wp.float32), out: wp.array2d(dtype=wp.float32), ints: wp.array(dtype=wp.int32)):
    i = wp.tid()
    old = _add_then_double(arr[i], 10.0)  # an array element
    big = _add_then_double(out[i, 0], 1000.0)  # an element of a 2-d array, early return
    n = 0
    _bump_twice(n)  # a local
    c = _Counter()
    _count(c)  # a struct
    _bump(c.count)  # a struct field
    v = wp.vec3(1.0, 2.0, 3.0)
    _swap(v[0], v.z)  # vector components
    a = old
    b = big
    _swap(a, b)
    out[i, 1] = a
    out[i, 2] = b
    out[i, 3] = v[0] + 10.0 * c.offset[1]
    ints[i] = n * 10 + c.count


def test_references_write_back_to_every_kind_of_target():
    arr = wp.array([1.0, 2.0], dtype=wp.float32)
    out = wp.zeros((2, 4), dtype=wp.float32)
    ints = wp.zeros(2, dtype=wp.int32)
    wp.launch(_reference_targets, 2, [arr, out, ints])
    np.testing.assert_allclose(arr.numpy(), [22.0, 24.0])  # (x + 10) * 2
    np.testing.assert_allclose(out.numpy()[:, 0], [1000.0, 1000.0])  # returned early after x + 1000
    np.testing.assert_allclose(out.numpy()[:, 1], [0.0, 0.0])  # swapped: big (old out value 0)
    np.testing.assert_allclose(out.numpy()[:, 2], [1.0, 2.0])  # swapped: the old arr value
    np.testing.assert_allclose(out.numpy()[:, 3], [8.0, 8.0])  # v[0] = 3 after the swap, offset.y = 0.5
    np.testing.assert_array_equal(ints.numpy(), [22, 22])


@wp.kernel
def _reference_in_loop(n: wp.array(dtype=wp.int32), out: wp.array(dtype=wp.float32)):
    i = wp.tid()
    s = wp.float32(1.0)
    v = wp.vec2(0.0, 0.0)
    for _ in range(n[i]):  # a dynamic loop carries what the references write
        _add_then_double(s, 1.0)
        _add_then_double(v[1], 1.0)
    out[i] = s + 1000.0 * v[1]


def test_references_written_in_a_dynamic_loop_are_carried():
    n = wp.array([0, 1, 3], dtype=wp.int32)
    out = wp.zeros(3, dtype=wp.float32)
    wp.launch(_reference_in_loop, 3, [n, out])
    s, v = [1.0], [0.0]
    for _ in range(3):
        s.append((s[-1] + 1.0) * 2.0)
        v.append((v[-1] + 1.0) * 2.0)
    np.testing.assert_allclose(out.numpy(), [s[k] + 1000.0 * v[k] for k in (0, 1, 3)])


@wp.func
def _scale_into(acc: wp.ref[F64], x: F64, c: F64):
    acc = acc + c * wp.sin(x) * x


@wp.kernel
def _reference_gradient(x: wp.array(dtype=F64), y: wp.array(dtype=F64)):
    i = wp.tid()
    acc = x[i] * x[i]
    for k in range(3):
        _scale_into(acc, x[i], F64(k + 1))
    _scale_into(y[i], acc, F64(2.0))


def test_gradients_flow_through_references():
    rng = np.random.default_rng(3)
    fd_check.tape_vs_fd(_reference_gradient, rng.uniform(-1.0, 1.0, 5), (5,), rng)


def test_non_addressable_reference_arguments_are_refused():
    @wp.func
    def one() -> wp.int32:
        return wp.int32(1)

    @wp.kernel(module="unique")
    def literal_argument():
        _bump(wp.int32(5))

    @wp.kernel(module="unique")
    def call_result_argument():
        _bump(one() + 1)

    for k in (literal_argument, call_result_argument):
        with pytest.raises(wp.codegen.WarpCodegenError, match="assign the value to a variable first"):
            wp.launch(k, 1)


def test_reference_argument_of_another_type_is_refused():
    @wp.kernel(module="unique")
    def wrong_type(out: wp.array(dtype=wp.float32)):
        x = float(1.0)
        _bump(x)
        out[0] = x

    with pytest.raises(wp.codegen.WarpCodegenTypeError, match="parameter .x. expects int32, got float32"):
        wp.launch(wrong_type, 1, [wp.zeros(1, dtype=wp.float32)])


def test_assignments_to_a_reference_keep_its_type():
    @wp.func
    def set_to_vector(x: wp.ref[wp.float32]):
        x = wp.vec2(1.0, 2.0)

    @wp.kernel(module="unique")
    def assign_vector(out: wp.array(dtype=wp.float32)):
        x = float(0.0)
        set_to_vector(x)
        out[0] = x

    with pytest.raises(wp.codegen.WarpCodegenTypeError, match="assignment to ref parameter 'x' gives vec2f"):
        wp.launch(assign_vector, 1, [wp.zeros(1, dtype=wp.float32)])


@wp.func
def _refness(x: wp.int32) -> wp.int32:
    return x


def test_overloads_differing_only_by_reference_are_refused():
    with pytest.raises(RuntimeError, match="differ only"):
        wp.func(_refness_by_reference)

    @wp.func
    def local_refness(x: wp.int32) -> wp.int32:
        return x

    with pytest.raises(RuntimeError, match="differ only"):  # funcs defined inside a function too

        @wp.func
        def local_refness(x: wp.ref[wp.int32]):  # noqa: F811
            x += 1


def _refness_by_reference(x: wp.ref[wp.int32]):
    x += 1


_refness_by_reference.__qualname__ = "_refness"  # the same name as the func above: an overload


# ---------------------------------------------------------------------------- func_native


@wp.func_native("return a * a + b;", adj_snippet="adj_a += 2.0 * a * adj_ret;\nadj_b += adj_ret;")
def _square_plus(a: F64, b: F64) -> F64: ...


@wp.func_native("x = x + 5;")
def _add_five(x: wp.ref[wp.int32]): ...


@wp.func_native(
    "x = y * y;\nreturn y + 1.0;",
    adj_snippet="adj_y += 2.0 * y * adj_x + adj_ret;\nadj_x = 0.0;",
)
def _store_square(x: wp.ref[F64], y: F64) -> F64: ...


@wp.kernel
def _native_values(x: wp.array(dtype=F64), y: wp.array(dtype=F64)):
    i = wp.tid()
    tmp = F64(0.0)
    plus_one = _store_square(tmp, x[i])  # a local written by the snippet
    _store_square(y[i], _square_plus(x[i], plus_one) + tmp)  # an array element written by it


def test_native_snippet_values_and_gradients():
    xs = np.array([0.5, -1.0, 2.0])
    inner = xs * xs + (xs + 1.0) + xs * xs
    rng = np.random.default_rng(4)
    fd_check.tape_vs_fd(_native_values, xs, (3,), rng, expected=inner * inner)


@wp.kernel(enable_backward=False)
def _native_integers(out: wp.array(dtype=wp.int32)):
    local = wp.int32(10)
    _add_five(local)
    out[0] = local
    _add_five(out[1])


def test_native_snippet_writes_through_references():
    out = wp.array([0, 7], dtype=wp.int32)
    wp.launch(_native_integers, 1, [out])
    np.testing.assert_array_equal(out.numpy(), [15, 12])


def test_native_reference_without_adjoint_needs_a_forward_only_kernel():
    @wp.kernel(module="unique")
    def with_backward(out: wp.array(dtype=wp.int32)):
        _add_five(out[0])

    with pytest.raises(wp.codegen.WarpCodegenError, match="no adj_snippet"):
        wp.launch(with_backward, 1, [wp.zeros(1, dtype=wp.int32)])


@pytest.mark.fixed_device("the snippet writes host memory through its address")
def test_native_snippet_replay_body_runs_in_the_backward_pass():
    @wp.func_native(
        "((double*)counter)[0] += 1.0; return x * 3.0;",
        adj_snippet="adj_x += 3.0 * adj_ret;",
        replay_snippet="return x * 3.0;",
    )
    def triple_counting(x: F64, counter: wp.uint64) -> F64: ...

    @wp.kernel(module="unique")
    def triple(x: wp.array(dtype=F64), y: wp.array(dtype=F64), counter: wp.uint64):
        i = wp.tid()
        y[i] = triple_counting(x[i], counter)

    count = np.zeros(1)  # the snippet bumps it through its address; the replay must not
    x = wp.array([1.0, 2.0], dtype=F64, requires_grad=True)
    y = wp.zeros(2, dtype=F64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(triple, 1, [x[:1], y[:1], wp.uint64(count.ctypes.data)])
    tape.backward(grads={y: wp.ones(2, dtype=F64)})
    np.testing.assert_allclose(y.numpy(), [3.0, 0.0])
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 0.0])
    assert count[0] == 1.0  # once in the forward pass, not again in the replay


@wp.func_native(
    """
    out[tid] = x[tid] + offset;
    sums[0] += x.shape[0] * (tid == 0);
    """
)
def add_offset_snippet(x: wp.array(dtype=wp.int32), out: wp.array(dtype=wp.int32), sums: wp.array(dtype=wp.int32), offset: int, tid: int): ...


@wp.kernel
def k_add_offset(x: wp.array(dtype=wp.int32), out: wp.array(dtype=wp.int32), sums: wp.array(dtype=wp.int32)):
    tid = wp.tid()
    add_offset_snippet(x, out, sums, 5, tid)


def test_native_snippets_take_arrays():
    x = wp.array(np.arange(8), dtype=wp.int32)
    out, sums = wp.zeros(8, dtype=wp.int32), wp.zeros(1, dtype=wp.int32)
    wp.launch(k_add_offset, 8, [x, out, sums])
    np.testing.assert_array_equal(out.numpy(), np.arange(8) + 5)
    assert sums.numpy()[0] == 8  # a.shape[d] in the snippet
    strided = wp.array(np.arange(16), dtype=wp.int32)[::2]  # a[i] follows the byte stride
    wp.launch(k_add_offset, 8, [strided, out, sums])
    np.testing.assert_array_equal(out.numpy(), np.arange(0, 16, 2) + 5)


def test_native_snippets_are_opaque_to_the_overwrite_check():
    """A snippet may write any array it is given: the tape's array-overwrite detection counts it."""
    from weft.codegen.access import array_access

    inst = k_add_offset.default_instance()
    assert array_access(inst.ir)[("x",)] == {"read", "write"}


def test_native_snippet_refuses_indexed_array_parameters():
    @wp.func_native("a[0] = 1.0f;")
    def write_array(a: wp.indexedarray(dtype=float)): ...

    @wp.kernel(module="unique")
    def k(a: wp.indexedarray(dtype=float)):
        write_array(a)

    data = wp.zeros(2, dtype=float)
    with pytest.raises(wp.codegen.WarpCodegenError, match="is an indexed array"):
        wp.launch(k, 1, [wp.indexedarray(data, [wp.array([0], dtype=wp.int32)])])


@wp.kernel(module="unique")
def _square_each(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


def test_a_backward_pass_that_fails_to_build_reports_its_error_every_time(monkeypatch):
    """The forward pass runs; while the backward library fails to build (the C++ compiler made to
    fail here), each backward launch reports that error (the second one too: the failed build is
    not taken for a kernel without a backward pass); once the compiler works, the gradient comes."""
    from weft.runtime import module as wmod

    x = wp.array(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    wp.launch(_square_each, dim=2, inputs=[x, y])  # built without a tape: forward only
    tape = wp.Tape()
    with tape:
        wp.launch(_square_each, dim=2, inputs=[x, y])
    np.testing.assert_allclose(y.numpy(), [1.0, 4.0])
    real = wmod.cached_library

    def failing(stem, *args, **kwargs):
        if stem.endswith("_adj"):
            raise WeftBuildError("the C++ compiler failed on generated code (simulated)")
        return real(stem, *args, **kwargs)

    monkeypatch.setattr(wmod, "cached_library", failing)
    for _ in range(2):
        with pytest.raises(WeftBuildError, match="C\\+\\+ compiler failed"):
            tape.backward(grads={y: wp.ones_like(y)})
    monkeypatch.setattr(wmod, "cached_library", real)
    tape.backward(grads={y: wp.ones_like(y)})
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
