"""wp.atomic_cas, wp.atomic_exch and the bitwise atomics (atomic_and / atomic_or / atomic_xor):
previous values returned, results checked against NumPy, a spin lock built from them under
contention on all cores, and the types they refuse."""

import numpy as np
import pytest

import weft as wp


def make_counter_kernel(T):
    @wp.func
    def acquire(lock: wp.array(dtype=T)):
        while wp.atomic_cas(lock, 0, T(0), T(1)) == T(1):
            pass

    @wp.func
    def release(lock: wp.array(dtype=T)):
        wp.atomic_exch(lock, 0, T(0))

    @wp.func
    def fenced_read(a: wp.array(dtype=T), i: int):
        v = wp.atomic_exch(a, i, T(0))
        wp.atomic_exch(a, i, v)
        return v

    @wp.kernel(module="unique")
    def locked_increment(counter: wp.array(dtype=T), lock: wp.array(dtype=T)):
        acquire(lock)
        counter[0] = fenced_read(counter, 0) + T(1)  # a plain read-modify-write, made safe by the lock
        release(lock)

    return locked_increment


@pytest.mark.parametrize("T", [wp.int32, wp.uint32, wp.int64, wp.float32, wp.float64, wp.int16])
def test_a_spin_lock_from_cas_and_exch_counts_every_thread(T):
    kernel = make_counter_kernel(T)
    counter, lock = wp.zeros(1, dtype=T), wp.zeros(1, dtype=T)
    wp.launch(kernel, 2000, [counter, lock])
    assert counter.numpy()[0] == 2000 and lock.numpy()[0] == 0


@wp.kernel
def k_cas_results(a: wp.array2d(dtype=wp.float32), old: wp.array(dtype=wp.float32)):
    old[0] = wp.atomic_cas(a, 0, 1, 2.0, 5.0)  # holds 2.0: swapped
    old[1] = wp.atomic_cas(a, 1, 0, 9.0, 7.0)  # holds 3.0: kept
    old[2] = wp.atomic_exch(a, 1, 1, -1.0)


def test_cas_and_exch_return_the_previous_value():
    a = wp.array(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    old = wp.zeros(3, dtype=wp.float32)
    wp.launch(k_cas_results, 1, [a, old])
    np.testing.assert_array_equal(old.numpy(), [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(a.numpy(), [[1.0, 5.0], [3.0, -1.0]])


@wp.kernel
def k_bitwise(a: wp.array(dtype=wp.int64), masks: wp.array(dtype=wp.int64), old: wp.array2d(dtype=wp.int64)):
    i = wp.tid()
    old[0, i] = wp.atomic_or(a, 0, masks[i])
    old[1, i] = wp.atomic_and(a, 1, ~masks[i])
    old[2, i] = wp.atomic_xor(a, 2, masks[i])


def test_bitwise_atomics_combine_every_thread_and_return_a_previous_value():
    rng = np.random.default_rng(9)
    masks = rng.integers(0, 2**62, 64, dtype=np.int64)
    start = np.array([0, -1, 12345], np.int64)
    a = wp.array(start)
    old = wp.zeros((3, 64), dtype=wp.int64)
    wp.launch(k_bitwise, 64, [a, wp.array(masks), old])
    np.testing.assert_array_equal(
        a.numpy(),
        [np.bitwise_or.reduce(masks), -1 & np.bitwise_and.reduce(~masks), 12345 ^ np.bitwise_xor.reduce(masks)],
    )
    # each returned value is the element before that thread's update: a subset of the other masks
    assert all((int(o) | int(m)) <= int(a.numpy()[0]) for o, m in zip(old.numpy()[0], masks))


@wp.kernel
def k_indexed_exch(a: wp.indexedarray(dtype=int), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = wp.atomic_exch(a, i, 100 + i)


def test_exchange_through_an_indexed_array():
    data = wp.array(np.arange(5, dtype=np.int32))
    out = wp.zeros(2, dtype=int)
    wp.launch(k_indexed_exch, 2, [wp.indexedarray(data, wp.array([4, 1], dtype=wp.int32)), out])
    np.testing.assert_array_equal(out.numpy(), [4, 1])
    np.testing.assert_array_equal(data.numpy(), [0, 101, 2, 3, 100])


def test_bitwise_atomics_refuse_floats_and_cas_refuses_vectors():
    @wp.kernel(module="unique")
    def float_or(a: wp.array(dtype=float)):
        wp.atomic_or(a, 0, 1.0)

    with pytest.raises(wp.codegen.WarpCodegenTypeError, match="arrays of integers"):
        wp.launch(float_or, 1, [wp.zeros(1, dtype=float)])

    @wp.kernel(module="unique")
    def vec_cas(a: wp.array(dtype=wp.vec3)):
        wp.atomic_cas(a, 0, wp.vec3(), wp.vec3(1.0, 1.0, 1.0))

    with pytest.raises(wp.codegen.WarpCodegenTypeError, match="arrays of scalars"):
        wp.launch(vec_cas, 1, [wp.zeros(1, dtype=wp.vec3)])


@wp.kernel
def k_vector_bits(a: wp.array(dtype=wp.vec3ui), b: wp.array(dtype=wp.vec3ui), out: wp.array(dtype=wp.vec3ui)):
    i = wp.tid()
    mask = wp.vec3ui(wp.uint32(1)) << wp.vec3ui(wp.uint32(i), wp.uint32(i + 1), wp.uint32(i + 2))
    out[i] = (a[i] & mask) | (~mask & b[i])
    wp.atomic_or(a, i, mask)
    wp.atomic_xor(b, i, a[i] >> wp.vec3ui(wp.uint32(1)))


M22I = wp.types.matrix((2, 2), wp.int32)


@wp.kernel
def k_matrix_bits(m: wp.array(dtype=M22I), out: wp.array(dtype=M22I)):
    i = wp.tid()
    out[i] = m[i] ^ ~m[i]
    wp.atomic_and(m, i, M22I(6, 6, 6, 6))


def test_bitwise_operators_and_atomics_on_integer_vectors_and_matrices():
    rng = np.random.default_rng(5)
    a0 = rng.integers(0, 2**32, size=(4, 3), dtype=np.uint32)
    b0 = rng.integers(0, 2**32, size=(4, 3), dtype=np.uint32)
    a, b = wp.array(a0, dtype=wp.vec3ui), wp.array(b0, dtype=wp.vec3ui)
    out = wp.zeros(4, dtype=wp.vec3ui)
    wp.launch(k_vector_bits, 4, [a, b, out])
    shifts = np.arange(4)[:, None] + np.arange(3)[None, :]
    mask = (np.uint32(1) << shifts.astype(np.uint32)).astype(np.uint32)
    np.testing.assert_array_equal(out.numpy(), (a0 & mask) | (~mask & b0))
    np.testing.assert_array_equal(a.numpy(), a0 | mask)
    np.testing.assert_array_equal(b.numpy(), b0 ^ ((a0 | mask) >> np.uint32(1)))
    m0 = rng.integers(-100, 100, size=(3, 2, 2), dtype=np.int32)
    m = wp.array(m0, dtype=M22I)
    mout = wp.zeros_like(m)
    wp.launch(k_matrix_bits, 3, [m, mout])
    np.testing.assert_array_equal(mout.numpy(), np.full((3, 2, 2), -1))
    np.testing.assert_array_equal(m.numpy(), m0 & 6)


def _explicit_atomic(name, dtype):
    scalar = getattr(dtype, "_scalar", dtype)
    op = getattr(wp, name)

    @wp.kernel(module="unique")
    def k(arr: wp.array(dtype=dtype)):
        op(arr, 0, dtype(scalar(0)))

    return k


@pytest.mark.parametrize(
    "name, dtype, allowed",
    [
        ("atomic_add", wp.int8, "float16, bfloat16"),
        ("atomic_sub", wp.uint16, "float16, bfloat16"),
        ("atomic_add", wp.vec3s, "float16, bfloat16"),
        ("atomic_min", wp.float16, "[u]int64, bfloat16"),
        ("atomic_max", wp.vec3h, "[u]int64, bfloat16"),
        ("atomic_max", wp.uint8, "[u]int64, bfloat16"),
    ],
)
def test_explicit_arithmetic_atomics_take_warps_scalar_types(name, dtype, allowed):
    scalar = getattr(dtype, "_scalar", dtype)
    import re

    words = (
        rf"^{name}\(\) operations only work on arrays with \[u\]int32, .*{re.escape(allowed)}.* "
        rf"as the underlying scalar types, but got {re.escape(wp.types.type_repr(dtype))} "
        rf"\(with scalar type {wp.types.type_repr(scalar)}\)"
    )
    with pytest.raises(RuntimeError, match=words) as info:
        wp.launch(_explicit_atomic(name, dtype), dim=1, outputs=(wp.zeros(1, dtype=dtype),))
    assert str(info.value).endswith(f"(with scalar type {wp.types.type_repr(scalar)})")  # the message alone, as Warp's


@wp.kernel
def k_small_int_accumulate(a: wp.array(dtype=wp.int8), v: wp.array(dtype=wp.vec3us)):
    a[0] += wp.int8(1)  # `+=` on any array stays atomic (here a compare-and-swap loop)
    v[0] -= wp.vec3us(wp.uint16(1), wp.uint16(2), wp.uint16(3))


def test_augmented_assignment_stays_atomic_on_narrow_types():
    a = wp.zeros(1, dtype=wp.int8)
    v = wp.full(1, wp.vec3us(wp.uint16(1000), wp.uint16(2000), wp.uint16(3000)), dtype=wp.vec3us)
    wp.launch(k_small_int_accumulate, dim=100, inputs=[a, v])
    assert a.numpy()[0] == 100
    np.testing.assert_array_equal(v.numpy()[0], [900, 1800, 2700])
    wp.launch(k_small_int_accumulate, dim=100, inputs=[a, v])
    assert a.numpy()[0] == -56  # int8 wraps around
