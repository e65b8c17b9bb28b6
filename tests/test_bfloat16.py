"""wp.bfloat16: the upper half of a float32, stored as 16 bits and computed in float32."""

import numpy as np
import pytest

import weft as wp
from weft import types as wt


def test_conversion_rounds_to_nearest_even_and_keeps_nan():
    f = np.array([1.0, 3.14159, -0.0, np.inf, 1e-6, 1.00390625, 1.01171875], dtype=np.float32)
    bits = wt.np_float32_to_bfloat16_bits(f)
    assert bits[0] == 0x3F80 and bits[2] == 0x8000 and bits[3] == 0x7F80
    assert bits[5] == 0x3F80 and bits[6] == 0x3F82  # ties go to the even mantissa
    back = wt.np_bfloat16_bits_to_float32(bits)
    np.testing.assert_allclose(back[:5], f[:5], rtol=4e-3)
    snan = np.array([0x7F800001], dtype=np.uint32).view(np.float32)  # payload only in the dropped bits
    assert np.isnan(wt.np_bfloat16_bits_to_float32(wt.np_float32_to_bfloat16_bits(snan)))[0]
    assert float(wp.bfloat16(3.14159)) == 3.140625 and repr(wp.bfloat16(2.0)) == "bfloat16(2.0)"


@wp.kernel
def _bf16_math(x: wp.array(dtype=wp.bfloat16), y: wp.array(dtype=wp.bfloat16), s: wp.bfloat16):
    i = wp.tid()
    y[i] = wp.sin(x[i]) + x[i] * s + wp.pow(x[i], wp.bfloat16(2.0))
    wp.atomic_add(y, 0, wp.bfloat16(1.0))


def test_kernels_compute_in_float32_and_round_to_bfloat16():
    xs = [0.25, 0.5, 1.0]
    x = wp.array(xs, dtype=wp.bfloat16, requires_grad=True)
    y = wp.zeros(3, dtype=wp.bfloat16, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_bf16_math, 3, [x, y, wp.bfloat16(2.0)])
    xs = np.array(xs)
    expected = np.sin(xs) + 2.0 * xs + xs**2 + np.array([3.0, 0.0, 0.0])
    got = np.array([float(v) for v in y.list()])
    np.testing.assert_allclose(got, expected, rtol=8e-3)
    tape.backward(grads={y: wp.ones(3, dtype=wp.bfloat16)})
    np.testing.assert_allclose([float(v) for v in x.grad.list()], np.cos(xs) + 2.0 + 2.0 * xs, rtol=8e-3)


def test_arrays_take_numbers_or_bit_patterns_and_give_numpy_values():
    a = wp.array([1.0, 2.5, -3.14], dtype=wp.bfloat16)
    assert a.numpy().dtype == wt.bfloat16.np_dtype  # ml_dtypes' bfloat16 when installed, else uint16 bits
    assert [float(v) for v in a.list()] == [1.0, 2.5, -3.140625]
    raw = wp.array(np.array([0x3F80, 0x4000, 0x4040], dtype=np.uint16), dtype=wp.bfloat16)  # bits pass through
    assert [float(v) for v in raw.list()] == [1.0, 2.0, 3.0]
    z = wp.zeros(2, dtype=wp.bfloat16)
    z.fill_(1.5)
    assert [float(v) for v in z.list()] == [1.5, 1.5]


_vec3bf = wp.types.vector(3, wp.bfloat16)
_mat22bf = wp.types.matrix((2, 2), wp.bfloat16)


@wp.struct
class _Bf16Fields:
    value: wp.bfloat16
    v: _vec3bf


@wp.kernel
def _bf16_composites(s: _Bf16Fields, out: wp.array(dtype=wp.float32)):
    m = _mat22bf(wp.bfloat16(1.0), wp.bfloat16(2.0), wp.bfloat16(3.0), wp.bfloat16(4.0))
    out[0] = wp.float32(s.value) + wp.float32(wp.dot(s.v, s.v)) + wp.float32(m[1, 1])
    out[1] = wp.where(wp.bfloat16(-0.0) == wp.bfloat16(0.0), 1.0, 0.0)


def test_vectors_matrices_structs_and_comparisons():
    s = _Bf16Fields()
    s.value = wp.bfloat16(3.5)
    s.v = _vec3bf(1.0, 2.0, 3.0)
    out = wp.zeros(2, dtype=wp.float32)
    wp.launch(_bf16_composites, 1, [s, out])
    assert out.numpy().tolist() == [3.5 + 14.0 + 4.0, 1.0]
    assert _vec3bf.__name__ == "vec3bf"


def test_host_calls_and_torch_interop():
    assert float(wp.sin(wp.bfloat16(1.23))) == pytest.approx(np.sin(1.23), abs=4e-3)
    torch = pytest.importorskip("torch")
    t = torch.tensor([1.5, 2.25], dtype=torch.bfloat16)
    a = wp.from_torch(t)
    assert a.dtype is wp.bfloat16 and [float(v) for v in a.list()] == [1.5, 2.25]
    back = wp.to_torch(a)
    assert back.dtype == torch.bfloat16
    back[0] = 7.0  # the tensor shares the array's memory
    assert float(a.list()[0]) == 7.0


def test_without_ml_dtypes_numpy_holds_the_bit_patterns():
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['ml_dtypes'] = None\n"  # as if ml_dtypes were not installed
        "import numpy as np, weft as wp\n"
        "a = wp.array([1.0, 2.0], dtype=wp.bfloat16)\n"
        "assert a.numpy().dtype == np.uint16 and a.numpy().tolist() == [0x3F80, 0x4000]\n"
        "assert [float(v) for v in a.list()] == [1.0, 2.0]\n"
        "assert wp.dtype_from_numpy(np.uint16) is wp.uint16\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
