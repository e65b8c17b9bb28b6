"""JAX interop (CPU): from_jax / to_jax through DLPack, and weft kernels inside jax.jit through
jax_kernel / jax_callable (pure_callback), with gradients via enable_backward.

JAX arrays here live on JAX's CPU device even where JAX would pick a GPU, and weft arrays on the
CPU; JAX on a GPU is tested in test_cuda_runtime.py."""

import numpy as np
import pytest

import weft as wp

jax = pytest.importorskip("jax")
jnp = jax.numpy

pytestmark = pytest.mark.fixed_device("JAX interop on the CPU; JAX on a GPU is tested in test_cuda_runtime.py")


@pytest.fixture(autouse=True)
def jax_on_cpu():
    """JAX's default device is its CPU for each test (on a GPU machine it would be the GPU)."""
    with jax.default_device(jax.devices("cpu")[0]):
        yield


@wp.kernel
def triple_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 3.0 * x[i]


@wp.kernel
def scale_square_kernel(a: wp.array(dtype=float), b: wp.array(dtype=float), s: float, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = (a[i] * s + b[i]) * (a[i] * s + b[i])


@wp.kernel
def sincos_kernel(x: wp.array(dtype=float), s: wp.array(dtype=float), c: wp.array(dtype=float)):
    i = wp.tid()
    s[i] = wp.sin(x[i])
    c[i] = wp.cos(x[i])


@wp.kernel
def norm_kernel(v: wp.array(dtype=wp.vec3), n: wp.array(dtype=float), unit: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    n[i] = wp.length(v[i])
    unit[i] = wp.normalize(v[i])


def test_dtype_and_device_mapping():
    assert wp.dtype_from_jax(jnp.float32) is wp.float32
    assert wp.dtype_from_jax(jnp.int32) is wp.int32
    assert wp.dtype_to_jax(wp.float16) == jnp.float16
    with pytest.raises(TypeError):
        wp.dtype_to_jax(wp.vec3)
    cpu = jax.devices("cpu")[0]
    assert wp.device_from_jax(cpu).is_cpu
    assert wp.device_to_jax("cpu") == cpu


def test_from_jax_is_zero_copy():
    x = jnp.arange(8, dtype=jnp.float32)
    a = wp.from_jax(x)
    assert a.dtype is wp.float32 and a.ptr == x.unsafe_buffer_pointer()
    v = wp.from_jax(jnp.ones((4, 3), dtype=jnp.float32), dtype=wp.vec3)
    assert v.shape == (4,) and v.dtype is wp.vec3


def test_to_jax_is_zero_copy_for_weft_allocations():
    a = wp.array(np.arange(6, dtype=np.float32))
    j = wp.to_jax(a)
    assert j.unsafe_buffer_pointer() == a.ptr
    a.numpy()[0] = 7.0  # shared memory: JAX sees the write (JAX assumes it never happens)
    assert float(j[0]) == 7.0
    v = wp.to_jax(wp.zeros(3, dtype=wp.vec3))
    assert v.shape == (3, 3)
    strided = wp.to_jax(wp.array(np.arange(8, dtype=np.float32))[::2])  # copied: XLA needs compact layouts
    np.testing.assert_array_equal(np.asarray(strided), [0.0, 2.0, 4.0, 6.0])


def test_jax_kernel_inside_jit():
    jax_triple = wp.jax_kernel(triple_kernel)

    @jax.jit
    def f(x):
        (y,) = jax_triple(x)
        return y + 1.0

    x = jnp.arange(5, dtype=jnp.float32)
    np.testing.assert_allclose(np.asarray(f(x)), 3.0 * np.arange(5) + 1.0)


def test_jax_kernel_multiple_outputs_vectors_and_static_scalars():
    s, c = wp.jax_kernel(sincos_kernel, num_outputs=2)(jnp.linspace(0.0, 1.0, 4, dtype=jnp.float32))
    np.testing.assert_allclose(np.asarray(s), np.sin(np.linspace(0.0, 1.0, 4)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(c), np.cos(np.linspace(0.0, 1.0, 4)), rtol=1e-6)
    n, unit = jax.jit(wp.jax_kernel(norm_kernel, num_outputs=2))(jnp.array([[3.0, 4.0, 0.0], [0.0, 2.0, 0.0]]))
    np.testing.assert_allclose(np.asarray(n), [5.0, 2.0])
    assert unit.shape == (2, 3)
    op = wp.jax_kernel(scale_square_kernel)
    with pytest.raises(TypeError, match="static"):
        jax.jit(lambda a, b, s: op(a, b, s))(jnp.ones(3), jnp.ones(3), 2.0)


def test_jax_kernel_gradients():
    op = wp.jax_kernel(scale_square_kernel, enable_backward=True)

    def loss(a, b):
        (out,) = op(a, b, 2.0)
        return jnp.sum(out)

    a = jnp.arange(4, dtype=jnp.float32)
    b = jnp.ones(4, dtype=jnp.float32)
    da, db = jax.jit(jax.grad(loss, argnums=(0, 1)))(a, b)
    np.testing.assert_allclose(np.asarray(da), 4.0 * (2.0 * np.arange(4) + 1.0), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(db), 2.0 * (2.0 * np.arange(4) + 1.0), rtol=1e-6)


def test_jax_kernel_under_vmap():
    op = wp.jax_kernel(triple_kernel)
    (y,) = jax.vmap(op)(jnp.arange(6, dtype=jnp.float32).reshape(2, 3))
    np.testing.assert_allclose(np.asarray(y), 3.0 * np.arange(6).reshape(2, 3))


def test_jax_callable_runs_several_launches():
    def triple_twice(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        tmp = wp.zeros_like(x)
        wp.launch(triple_kernel, dim=x.shape, inputs=[x, tmp])
        wp.launch(triple_kernel, dim=x.shape, inputs=[tmp, y])

    op = wp.jax_callable(triple_twice)
    (y,) = jax.jit(op)(jnp.ones(3, dtype=jnp.float32))
    np.testing.assert_allclose(np.asarray(y), [9.0, 9.0, 9.0])
