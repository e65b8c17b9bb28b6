"""weft.utils array utilities against NumPy: array_sum, array_inner, array_scan, radix_sort_pairs,
runlength_encode, array_cast."""

import re

import numpy as np
import pytest

import weft as wp
from weft.utils import array_cast, array_inner, array_scan, array_sum, radix_sort_pairs, runlength_encode

rng = np.random.default_rng(0)


def padded(values, dtype):
    """An array holding ``values`` then as many scratch elements: Warp's sorts take ``2 * count``."""
    return wp.array(np.concatenate([values, values]), dtype=dtype)


@pytest.mark.parametrize("dtype,np_dtype", [(wp.float32, np.float32), (wp.float64, np.float64)])
@pytest.mark.parametrize("shape", [(0,), (1,), (1000,), (70001,), (3, 4), (5, 6, 7)])
def test_array_sum(dtype, np_dtype, shape):
    x = (rng.standard_normal(shape) * 10).astype(np_dtype)
    a = wp.array(x, dtype=dtype)
    tol = 1e-4 if np_dtype == np.float32 else 1e-10
    s = array_sum(a)
    assert np.asarray(s).dtype == np_dtype
    np.testing.assert_allclose(s, x.astype(np.float64).sum(), rtol=tol, atol=tol * 10)
    for axis in range(-len(shape), len(shape)):
        r = array_sum(a, axis=axis)
        assert r.dtype == dtype
        np.testing.assert_allclose(r.numpy(), x.astype(np.float64).sum(axis=axis, keepdims=True), rtol=tol, atol=tol * 10)


def test_array_sum_out_value_count_vectors():
    x = rng.standard_normal(100).astype(np.float32)
    a = wp.array(x)
    np.testing.assert_allclose(array_sum(a, value_count=37), x[:37].sum(), rtol=1e-5)
    out = wp.zeros(1, dtype=float)
    assert array_sum(a, out=out) is out
    np.testing.assert_allclose(out.numpy()[0], x.sum(), rtol=1e-5)
    v = rng.standard_normal((50, 3)).astype(np.float32)
    va = wp.array(v, dtype=wp.vec3)
    np.testing.assert_allclose(array_sum(va), v.sum(axis=0), rtol=1e-5, atol=1e-5)
    m = rng.standard_normal((4, 5, 3)).astype(np.float64)
    ma = wp.array(m, dtype=wp.vec3d)  # 2-d array of vec3d
    r = array_sum(ma, axis=1)
    assert r.shape == (4, 1) and r.dtype == wp.vec3d
    np.testing.assert_allclose(r.numpy(), m.sum(axis=1, keepdims=True), rtol=1e-12)
    out = wp.zeros((1, 5), dtype=wp.vec3d)
    assert array_sum(ma, axis=0, out=out) is out
    np.testing.assert_allclose(out.numpy(), m.sum(axis=0, keepdims=True), rtol=1e-12)
    # a non-contiguous view
    t = wp.array(rng.standard_normal((6, 8)).astype(np.float32))[:, ::2]
    np.testing.assert_allclose(array_sum(t), t.numpy().sum(), rtol=1e-5)


def test_array_inner():
    x = rng.standard_normal((30, 40)).astype(np.float64)
    y = rng.standard_normal((30, 40)).astype(np.float64)
    a, b = wp.array(x), wp.array(y)
    np.testing.assert_allclose(array_inner(a, b), (x * y).sum(), rtol=1e-12)
    for axis in (0, 1, -1):
        r = array_inner(a, b, axis=axis)
        np.testing.assert_allclose(r.numpy(), (x * y).sum(axis=axis, keepdims=True), rtol=1e-12)
    f = wp.array(x.ravel())
    np.testing.assert_allclose(array_inner(f, f, count=100), (x.ravel()[:100] ** 2).sum(), rtol=1e-12)
    out = wp.zeros(1, dtype=wp.float64)
    assert array_inner(f, f, out=out) is out
    np.testing.assert_allclose(out.numpy()[0], (x**2).sum(), rtol=1e-12)
    v = rng.standard_normal((20, 7, 3)).astype(np.float32)
    w = rng.standard_normal((20, 7, 3)).astype(np.float32)
    va, wa = wp.array(v, dtype=wp.vec3), wp.array(w, dtype=wp.vec3)
    np.testing.assert_allclose(array_inner(va, wa), (v * w).sum(), rtol=1e-4)
    r = array_inner(va, wa, axis=1)
    assert r.shape == (20, 1) and r.dtype == wp.float32
    np.testing.assert_allclose(r.numpy(), (v * w).sum(axis=(1, 2))[:, None], rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError):
        array_inner(a, wp.zeros((3, 3), dtype=wp.float64))


@pytest.mark.parametrize("dtype,np_dtype", [(wp.int32, np.int32), (wp.float32, np.float32), (wp.int64, np.int64)])
@pytest.mark.parametrize("inclusive", [True, False])
def test_array_scan(dtype, np_dtype, inclusive):
    x = rng.integers(-5, 10, 1001).astype(np_dtype)
    a = wp.array(x, dtype=dtype)
    out = wp.zeros(len(x), dtype=dtype)
    array_scan(a, out, inclusive=inclusive)
    ref = np.cumsum(x.astype(np.float64))
    if not inclusive:
        ref = np.concatenate(([0], ref[:-1]))
    np.testing.assert_allclose(out.numpy(), ref)
    array_scan(a, a, inclusive=inclusive)  # in place
    np.testing.assert_allclose(a.numpy(), ref)


@pytest.mark.parametrize("dtype,np_dtype", [(wp.int32, np.int32), (wp.float32, np.float32), (wp.int64, np.int64)])
def test_radix_sort_pairs(dtype, np_dtype):
    n = 500
    k = rng.integers(-50, 50, n).astype(np_dtype)
    v = np.arange(n, dtype=np.int32)
    keys = wp.array(np.concatenate([k, k]), dtype=dtype)  # Warp's 2 * count layout
    vals = wp.array(np.concatenate([v, v]), dtype=wp.int32)
    radix_sort_pairs(keys, vals, n)
    order = np.argsort(k, kind="stable")
    np.testing.assert_array_equal(keys.numpy()[:n], k[order])
    np.testing.assert_array_equal(vals.numpy()[:n], v[order])  # stable: equal keys keep their order
    # count smaller than the arrays: the rest is untouched
    keys2 = wp.array(k, dtype=dtype)
    vals2 = wp.array(v)
    radix_sort_pairs(keys2, vals2, 100)
    np.testing.assert_array_equal(keys2.numpy()[:100], np.sort(k[:100], kind="stable"))
    np.testing.assert_array_equal(keys2.numpy()[100:], k[100:])


def test_radix_sort_pairs_bits():
    k = np.array([0x13, 0x21, 0x02, 0x31, 0x10], np.int32)
    keys, vals = padded(k, wp.int32), padded(np.arange(5, dtype=np.int32), wp.int32)
    radix_sort_pairs(keys, vals, 5, begin_bit=0, end_bit=4)  # low nibble only
    np.testing.assert_array_equal(vals.numpy()[:5], [4, 1, 3, 2, 0])


def test_runlength_encode():
    x = np.array([1, 1, 2, 2, 2, 3, 1, 1, 5], np.int32)
    values = wp.array(x)
    rv = wp.zeros(len(x), dtype=wp.int32)
    rl = wp.zeros(len(x), dtype=wp.int32)
    assert runlength_encode(values, rv, rl) == 5
    np.testing.assert_array_equal(rv.numpy()[:5], [1, 2, 3, 1, 5])
    np.testing.assert_array_equal(rl.numpy()[:5], [2, 3, 1, 2, 1])
    rc = wp.zeros(1, dtype=wp.int32)
    assert runlength_encode(values, rv, rl, run_count=rc, value_count=4) is rc
    assert rc.numpy()[0] == 2
    np.testing.assert_array_equal(rl.numpy()[:2], [2, 2])
    y = rng.integers(0, 3, 10000).astype(np.int32)
    rv, rl = wp.zeros(len(y), dtype=wp.int32), wp.zeros(len(y), dtype=wp.int32)
    n = runlength_encode(wp.array(y), rv, rl)
    np.testing.assert_array_equal(np.repeat(rv.numpy()[:n], rl.numpy()[:n]), y)
    assert runlength_encode(wp.array(y), rv, rl, value_count=0) == 0


def test_runlength_encode_checks_its_arguments():
    values = wp.zeros(12, dtype=wp.int32)
    rv, rl, rc = wp.zeros(12, dtype=wp.int32), wp.zeros(12, dtype=wp.int32), wp.zeros(1, dtype=wp.int32)
    cases = [
        ((values, wp.zeros(1, dtype=wp.int32), rl), {}, r"storage sizes must be at least equal to value_count \(12\)$"),
        ((values, wp.zeros(12, dtype=float), rl), {}, r"data types do not match \(int32 vs float32\)$"),
        ((values, rv, wp.zeros(12, dtype=wp.int64)), {}, "run_lengths array must be of type int32$"),
        ((values, rv, rl), {"run_count": wp.zeros(1, dtype=wp.int64)}, "run_count array must be of type int32$"),
        ((values, rv, rl), {"run_count": rc, "value_count": -1}, "value_count must be non-negative, got -1$"),
    ]
    for args, kwargs, message in cases:
        with pytest.raises(RuntimeError, match=message):
            runlength_encode(*args, **kwargs)
    floats = wp.array([0.5, 0.5, 2.0], dtype=float)  # weft encodes float runs too
    assert runlength_encode(floats, wp.zeros(3, dtype=float), wp.zeros(3, dtype=wp.int32)) == 2


def test_array_cast():
    x = np.array([1.7, -2.5, 3.0, 4.9], np.float32)
    out = wp.zeros(4, dtype=wp.int32)
    array_cast(wp.array(x), out)
    np.testing.assert_array_equal(out.numpy(), [1, -2, 3, 4])  # truncation toward zero
    out = wp.zeros(4, dtype=wp.float64)
    array_cast(wp.array(x), out, count=2)
    np.testing.assert_array_equal(out.numpy(), [x[0], x[1], 0, 0])
    v = rng.standard_normal((5, 3)).astype(np.float32)
    outv = wp.zeros(5, dtype=wp.vec3d)
    array_cast(wp.array(v, dtype=wp.vec3), outv)
    np.testing.assert_allclose(outv.numpy(), v.astype(np.float64))
    m = wp.zeros((2, 3), dtype=wp.float16)
    array_cast(wp.array(np.arange(6, dtype=np.int32).reshape(2, 3)), m)
    np.testing.assert_array_equal(m.numpy(), np.arange(6).reshape(2, 3))
    with pytest.raises(TypeError):
        array_cast(wp.array(v, dtype=wp.vec3), wp.zeros(5, dtype=wp.vec2))


@pytest.mark.parametrize("np_dtype", [np.int32, np.uint32, np.float32, np.int16])
def test_stable_order_matches_numpy(np_dtype):
    from weft.utils import _stable_order

    if np_dtype == np.float32:
        k = rng.standard_normal(2000).astype(np.float32)
        k[::7] = k[0]  # duplicates
        k[:3] = [np.inf, -np.inf, 0.0]
    else:
        info = np.iinfo(np_dtype)
        k = rng.integers(info.min, info.max, 2000, endpoint=True).astype(np_dtype)
        k[::5] = k[0]
    np.testing.assert_array_equal(_stable_order(k), np.argsort(k, kind="stable"))


def _ordered_bits(k):
    """The order radix_sort_pairs sorts 32-bit keys by: signed, unsigned, or IEEE float order."""
    u = k.view(np.uint32).astype(np.uint64)
    if k.dtype.kind == "i":
        return u ^ 0x80000000
    if k.dtype.kind == "f":
        return np.where(u & 0x80000000, 0xFFFFFFFF ^ u, u | 0x80000000)
    return u


@pytest.mark.parametrize(
    "dtype,keys",
    [
        (wp.int32, lambda r, n: r.integers(-(2**31), 2**31, n).astype(np.int32)),
        (wp.uint32, lambda r, n: r.integers(0, 2**32, n).astype(np.uint32)),
        (wp.int32, lambda r, n: r.integers(0, 200, n).astype(np.int32)),  # one digit: one pass
        (wp.int32, lambda r, n: np.full(n, 7, np.int32)),  # no pass at all
        (
            wp.float32,
            lambda r, n: np.concatenate(
                [r.normal(0, 1e3, n - 6), [0.0, -0.0, np.inf, -np.inf, 1e-42, -1e-42]]
            ).astype(np.float32),
        ),
    ],
)
def test_native_radix_sort_pairs_against_numpy(dtype, keys, monkeypatch):
    import weft.runtime.module as mod

    calls = []
    native = mod.runtime_sort_pairs32
    monkeypatch.setattr(mod, "runtime_sort_pairs32", lambda *a: calls.append(a) or native(*a))
    r = np.random.default_rng(12)
    n = 100_000
    k = keys(r, n)
    r.shuffle(k)
    v = r.integers(-(2**31), 2**31, n).astype(np.int32)
    wk, wv = padded(k, dtype), padded(v, wp.int32)
    radix_sort_pairs(wk, wv, n)
    order = np.argsort(_ordered_bits(k), kind="stable")
    np.testing.assert_array_equal(wk.numpy()[:n].view(np.uint32), k[order].view(np.uint32))  # -0.0 before +0.0
    np.testing.assert_array_equal(wv.numpy()[:n], v[order])
    assert len(calls) == 1


@pytest.mark.parametrize("dtype", [wp.int32, wp.uint32])
def test_native_radix_sort_pairs_bit_ranges(dtype):
    r = np.random.default_rng(13)
    n = 50_000
    k = r.integers(0, 2**32, n).astype(np.uint32).view(np.int32 if dtype == wp.int32 else np.uint32)
    v = np.arange(n, dtype=np.float32)  # any 32-bit values move along
    for begin, end in ((0, 32), (4, 20), (13, 14), (24, 32), (5, 5)):
        wk, wv = padded(k, dtype), padded(v, wp.float32)
        radix_sort_pairs(wk, wv, n, begin_bit=begin, end_bit=end)
        if (begin, end) == (0, 32):
            sort_key = _ordered_bits(k)
        else:
            sort_key = (k.view(np.uint32) >> np.uint32(begin)) & np.uint32((1 << (end - begin)) - 1)
        order = np.argsort(sort_key, kind="stable")
        np.testing.assert_array_equal(wk.numpy()[:n], k[order], err_msg=f"bits [{begin}, {end})")
        np.testing.assert_array_equal(wv.numpy()[:n], v[order], err_msg=f"bits [{begin}, {end})")


def test_radix_sort_pairs_small_strided_and_overlapping():
    for n in (0, 1, 2, 3):
        k = np.array([5, -1, 3][:n], np.int32)
        wk, wv = padded(k, wp.int32), padded(np.arange(n, dtype=np.int32), wp.int32)
        radix_sort_pairs(wk, wv, n)
        np.testing.assert_array_equal(wk.numpy()[:n], np.sort(k))
        np.testing.assert_array_equal(wk.numpy()[n:], k)  # the scratch half is left alone
    k = np.random.default_rng(14).integers(-1000, 1000, 2000).astype(np.int32)
    with pytest.raises(RuntimeError, match=r"requires a contiguous keys array, got non-contiguous keys with data types: int32, int32$"):
        radix_sort_pairs(wp.array(k)[::2], wp.array(np.arange(2000, dtype=np.int32)), 500)
    with pytest.raises(RuntimeError, match=r"requires a contiguous values array"):
        radix_sort_pairs(wp.array(k), wp.array(np.arange(4000, dtype=np.int32))[::2], 500)
    same = wp.array(k)
    with pytest.raises(ValueError, match="overlap"):
        radix_sort_pairs(same, same, 100)


def test_radix_sort_pairs_through_the_ctypes_runtime(monkeypatch):
    # without the extension module (no Python headers) the same sort runs through ctypes
    import weft.runtime.module as mod

    monkeypatch.setattr(mod, "_runtime_ext", [None])
    r = np.random.default_rng(15)
    k = r.normal(size=30_000).astype(np.float32)
    v = np.arange(len(k), dtype=np.int32)
    wk, wv = padded(k, wp.float32), padded(v, wp.int32)
    radix_sort_pairs(wk, wv, len(k))
    order = np.argsort(k, kind="stable")
    np.testing.assert_array_equal(wk.numpy()[: len(k)], k[order])
    np.testing.assert_array_equal(wv.numpy()[: len(k)], v[order])


def test_argument_errors_are_runtime_errors_in_warps_words():
    from weft.utils import ArrayUtilsError

    a32, a64 = wp.zeros(2, dtype=float), wp.zeros(2, dtype=wp.float64)
    cases = [
        (lambda: array_scan(wp.zeros(3, dtype=int), wp.zeros(4, dtype=int)), r"In and out array storage sizes do not match \(3 vs 4\)"),
        (lambda: array_scan(wp.zeros(3, dtype=int), wp.zeros(3, dtype=float)), r"In and out array data types do not match \(int32 vs float32\)"),
        (lambda: array_inner(a32, wp.zeros(3, dtype=float)), r"A and b array storage sizes do not match \(2 vs 3\)"),
        (lambda: array_inner(a32, a64), r"A and b array data types do not match \(float32 vs float64\)"),
        (lambda: array_sum(a32, out=wp.zeros(1, dtype=wp.float64)), "out array should have type float32"),
        (lambda: array_sum(a32, out=wp.zeros(2, dtype=float)), r"out array should have shape \(1,\)"),
        (lambda: array_inner(a32, a32, out=wp.zeros(1, dtype=wp.float64)), "out array should have type float32"),
        (lambda: array_cast(wp.zeros((2, 2), dtype=int), wp.zeros((2, 2), dtype=float), count=1), "Partial cast is not supported"),
        (lambda: radix_sort_pairs(wp.zeros(6, dtype=int), wp.zeros(6, dtype=int), 3, begin_bit=4, end_bit=2), r"Invalid radix sort bit range \[4, 2\) for 32-bit keys"),
        (lambda: radix_sort_pairs(wp.zeros(6, dtype=int), wp.zeros(6, dtype=int), 3, end_bit=33), r"Invalid radix sort bit range \[0, 33\)"),
        # Warp's contract for types and sizes, so that what runs here runs on Warp
        (lambda: array_sum(wp.zeros(3, dtype=int)), r"^Unsupported data type: int32$"),
        (lambda: array_inner(wp.zeros(3, dtype=int), wp.zeros(3, dtype=int)), r"^Unsupported data type: int32$"),
        (lambda: array_scan(wp.zeros(3, dtype=wp.vec3h), wp.zeros(3, dtype=wp.vec3h)), r"^Unsupported data type: vec3h$"),
        (lambda: array_scan(wp.zeros(3, dtype=wp.mat22), wp.zeros(3, dtype=wp.mat22)), r"^Unsupported data type: mat22f$"),
        (lambda: radix_sort_pairs(wp.zeros(3, dtype=int), wp.zeros(6, dtype=int), 3), r"^Keys and values array storage must be large enough to contain 2\*count elements$"),
        (lambda: radix_sort_pairs(wp.zeros(6, dtype=wp.int8), wp.zeros(6, dtype=int), 3), r"^Unsupported keys and values data types: int8, int32$"),
        (lambda: radix_sort_pairs(wp.zeros(6, dtype=int), wp.zeros(6, dtype=wp.float16), 3), r"^Unsupported keys and values data types: int32, float16$"),
    ]
    for call, words in cases:
        with pytest.raises(RuntimeError, match=words) as info:
            call()
        assert isinstance(info.value, ArrayUtilsError) and isinstance(info.value, (TypeError, ValueError))


def test_scans_of_vectors_run_per_component_and_write_through_strided_views():
    v = np.arange(12, dtype=np.int32).reshape(4, 3)
    out = wp.zeros(4, dtype=wp.vec3i)
    array_scan(wp.array(v, dtype=wp.vec3i), out, inclusive=False)
    np.testing.assert_array_equal(out.numpy(), np.vstack((np.zeros((1, 3)), np.cumsum(v, axis=0)[:-1])))
    base = wp.full(12, -7, dtype=wp.int64)
    array_scan(wp.array(np.arange(12), dtype=wp.int64)[::2], base[::2])
    np.testing.assert_array_equal(base.numpy()[::2], np.cumsum(np.arange(0, 12, 2)))
    np.testing.assert_array_equal(base.numpy()[1::2], -7)


def test_casts_take_scalars_in_order_across_shapes():
    out = wp.empty((2, 2), dtype=float)
    array_cast(wp.array((1, 2, 3, 4), dtype=int), out)
    np.testing.assert_array_equal(out.numpy(), [[1.0, 2.0], [3.0, 4.0]])
    flat = wp.zeros(2, dtype=float)
    array_cast(wp.array(((1, 2), (3, 4)), dtype=wp.vec2), flat, count=1)  # one vec2: two values
    np.testing.assert_array_equal(flat.numpy(), [1.0, 2.0])


@pytest.mark.parametrize("key_dtype", [wp.int32, wp.float32])
def test_segmented_sort_sorts_each_segment_stably_and_leaves_the_rest(key_dtype):
    from weft.utils import segmented_sort_pairs

    rng = np.random.default_rng(5)
    n = 500
    keys_np = rng.integers(0, 20, n).astype(key_dtype.np_dtype if hasattr(key_dtype, "np_dtype") else np.float64)
    values_np = np.arange(n, dtype=np.int32)
    starts, ends = np.array([0, 40, 200, 450], np.int32), np.array([30, 180, 400, 500], np.int32)  # gaps stay as they are
    keys, values = padded(keys_np, key_dtype), padded(values_np, wp.int32)
    segmented_sort_pairs(keys, values, n, wp.array(starts, dtype=wp.int32), wp.array(ends, dtype=wp.int32))
    expect_k, expect_v = keys_np.copy(), values_np.copy()
    for s, e in zip(starts, ends):
        order = np.argsort(keys_np[s:e], kind="stable")
        expect_k[s:e], expect_v[s:e] = keys_np[s:e][order], values_np[s:e][order]
    np.testing.assert_array_equal(keys.numpy()[:n], expect_k)
    np.testing.assert_array_equal(values.numpy()[:n], expect_v)
    # ends taken from the next start
    k2, v2 = padded(keys_np, key_dtype), padded(values_np, wp.int32)
    segmented_sort_pairs(k2, v2, n, wp.array([0, 250, 500], dtype=wp.int32))
    for s, e in ((0, 250), (250, 500)):
        assert np.all(np.diff(k2.numpy()[s:e]) >= 0)
    with pytest.raises(RuntimeError, match="overlap"):
        segmented_sort_pairs(keys, values, n, wp.array([0, 10], dtype=wp.int32), wp.array([20, 30], dtype=wp.int32))
    seg = (wp.array([0], dtype=wp.int32), wp.array([3], dtype=wp.int32))
    with pytest.raises(RuntimeError, match=r"^Array storage must be large enough to contain 2\*count elements$"):
        segmented_sort_pairs(wp.zeros(3, dtype=key_dtype), wp.zeros(3, dtype=wp.int32), 3, *seg)
    with pytest.raises(RuntimeError, match=f"^Unsupported data type: {key_dtype.__name__}$"):
        segmented_sort_pairs(wp.zeros(6, dtype=key_dtype), wp.zeros(6, dtype=wp.float32), 1, *seg)  # int32 values only
    with pytest.raises(RuntimeError, match=r"^Unsupported data type: float64$"):
        segmented_sort_pairs(wp.zeros(6, dtype=wp.float64), wp.zeros(6, dtype=wp.int32), 1, *seg)


def _make_multiline_lambda():
    return lambda q, qd: (
        q[0] * 2.0
        + qd[1]
    )


def test_create_warp_function_makes_a_func_kernels_and_python_call():
    import subprocess
    import sys

    f = _make_multiline_lambda()
    fn, module = wp.utils.create_warp_function(f)
    assert wp.utils.create_warp_function(f)[0] is fn and module is fn.module
    assert fn((1.0, 2.0), (3.0, 4.0)) == f((1.0, 2.0), (3.0, 4.0)) == 6.0

    @wp.kernel(module="unique")
    def use(out: wp.array(dtype=float)):
        out[0] = fn(wp.vec2(1.0, 5.0), wp.vec2(3.0, 4.0))

    out = wp.zeros(1, dtype=float)
    wp.launch(use, 1, inputs=[out])
    assert out.numpy()[0] == 6.0
    script = (
        "import weft as wp, test_utils_arrays as t\n"
        "print(wp.utils.create_warp_function(t._make_multiline_lambda())[0].key)\n"
    )
    keys = set()
    for seed in ("1", "2"):  # the key does not depend on the process's hash seed
        env = dict(__import__("os").environ, PYTHONHASHSEED=seed)
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=__import__("os").path.dirname(__file__))
        assert r.returncode == 0, r.stderr
        keys.add(r.stdout.strip())
    assert len(keys) == 1 and fn.key in keys
    assert re.fullmatch(r"func_[0-9a-f]{16}", fn.key)  # Warp's form of the key


def test_transform_expand():
    t = wp.transform_expand((1.0, 2.0, 3.0, 4.0, 3.0, 2.0, 1.0))
    assert t == wp.transformf(p=(1.0, 2.0, 3.0), q=(4.0, 3.0, 2.0, 1.0))
    with pytest.raises(ValueError, match="7 numbers"):
        wp.transform_expand((1.0, 2.0))


def test_mesh_adjacency_pairs_faces_across_edges(capsys):
    from weft.utils import MeshAdjacency

    # two triangles of a unit square sharing the diagonal 0-2, then a fold-over third on 0-2
    adj = MeshAdjacency(np.array([[0, 1, 2], [0, 2, 3]]), 2)
    got = {k: (e.v0, e.v1, e.o0, e.o1, e.f0, e.f1) for k, e in adj.edges.items()}
    assert got == {
        (0, 1): (0, 1, 2, -1, 0, -1),
        (1, 2): (1, 2, 0, -1, 0, -1),
        (0, 2): (2, 0, 1, 3, 0, 1),  # the shared edge: opposite vertices 1 and 3
        (2, 3): (2, 3, 0, -1, 1, -1),
        (0, 3): (3, 0, 2, -1, 1, -1),
    }
    boundary = sorted(k for k, e in adj.edges.items() if e.f1 == -1)
    assert boundary == [(0, 1), (0, 3), (1, 2), (2, 3)]
    assert capsys.readouterr().out == ""
    adj = MeshAdjacency(wp.array([0, 1, 2, 0, 2, 3, 2, 0, 4], dtype=wp.int32), 3)  # flat indices, a third face on 0-2
    assert capsys.readouterr().out == "Detected non-manifold edge\n"
    assert (adj.edges[(0, 2)].f0, adj.edges[(0, 2)].f1) == (0, 1)
    assert adj.edges[(0, 4)].f0 == 2
