"""Multi-dimensional launches on the CPU: each task's ``wp.tid()`` coordinates, which the task
loops keep run by run along the last grid dimension (core.h ``tid_start`` / ``tid_next_run``)
instead of dividing the task number per task, whatever the shape, the number of threads (shares
that start and end in the middle of a row), and the body variant (checked, unchecked, one-element
sums, staged backward)."""

import numpy as np
import pytest

import weft as wp
from tests.threads import with_threads

pytestmark = pytest.mark.fixed_device("the CPU task loops")


@wp.kernel
def coords2(out: wp.array3d(dtype=int)):
    i, j = wp.tid()
    out[i, j, 0] = i
    out[i, j, 1] = j


@wp.kernel
def coords3(out: wp.array4d(dtype=int)):
    i, j, k = wp.tid()
    out[i, j, k, 0] = i
    out[i, j, k, 1] = j
    out[i, j, k, 2] = k


@wp.kernel
def coords4(flat: wp.array2d(dtype=int), shape: wp.vec4i):
    i, j, k, l = wp.tid()
    n = ((i * shape[1] + j) * shape[2] + k) * shape[3] + l
    flat[n, 0] = i
    flat[n, 1] = j
    flat[n, 2] = k
    flat[n, 3] = l


@wp.kernel
def weighted_sum2(x: wp.array2d(dtype=float), total: wp.array(dtype=float)):
    i, j = wp.tid()
    wp.atomic_add(total, 0, x[i, j] * float(i + 2 * j))  # a one-element sum (hoisted lanes)


@wp.kernel
def scatter_rows(x: wp.array2d(dtype=float), rows: wp.array(dtype=float)):
    i, j = wp.tid()
    wp.atomic_add(rows, i, x[i, j] * x[i, j] * float(j + 1))  # staged in the backward pass


SHAPES = [(3, 5), (1, 9), (9, 1), (13, 1001), (257, 3)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", SHAPES)
def test_2d_coordinates(shape, threads):
    out = wp.zeros((*shape, 2), dtype=int)
    with_threads(threads, lambda: wp.launch(coords2, dim=shape, inputs=[out]))
    np.testing.assert_array_equal(out.numpy(), np.moveaxis(np.indices(shape), 0, -1))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 1, 700), (37, 19, 3), (5, 1, 1)])
def test_3d_coordinates(shape, threads):
    out = wp.zeros((*shape, 3), dtype=int)
    with_threads(threads, lambda: wp.launch(coords3, dim=shape, inputs=[out]))
    np.testing.assert_array_equal(out.numpy(), np.moveaxis(np.indices(shape), 0, -1))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (3, 1, 2, 1), (1, 2, 1, 301)])
def test_4d_coordinates(shape, threads):
    n = int(np.prod(shape))
    flat = wp.full((n, 4), -1, dtype=int)
    with_threads(threads, lambda: wp.launch(coords4, dim=shape, inputs=[flat, wp.vec4i(*shape)]))
    np.testing.assert_array_equal(flat.numpy(), np.indices(shape).reshape(4, -1).T)


@pytest.mark.parametrize("threads", [1, 2])
def test_one_element_sum_and_staged_backward_over_a_2d_grid(threads):
    rng = np.random.default_rng(4)
    shape = (67, 129)
    xv = rng.standard_normal(shape).astype(np.float32)
    i, j = np.indices(shape)

    def run():
        x = wp.array(xv, requires_grad=True)
        total = wp.zeros(1, dtype=float, requires_grad=True)
        rows = wp.zeros(shape[0], dtype=float, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(weighted_sum2, dim=shape, inputs=[x, total])
            wp.launch(scatter_rows, dim=shape, inputs=[x, rows])
        tape.backward(grads={total: wp.ones(1, dtype=float), rows: wp.array(np.arange(shape[0], dtype=np.float32))})
        return total.numpy()[0], rows.numpy(), x.grad.numpy()

    total, rows, grad = with_threads(threads, run)
    w = (i + 2 * j).astype(np.float64)
    np.testing.assert_allclose(total, (xv * w).sum(), rtol=1e-4)
    np.testing.assert_allclose(rows, (xv.astype(np.float64) ** 2 * (j + 1)).sum(axis=1), rtol=1e-4)
    np.testing.assert_allclose(grad, w + 2.0 * xv * (j + 1) * i, rtol=1e-4, atol=1e-4)


@wp.kernel
def clamped_stencil(a: wp.array3d(dtype=float), b: wp.array3d(dtype=float)):
    i, j, l = wp.tid()
    n = a.shape[2]
    b[i, j, l] = a[i, j, wp.max(l - 1, 0)] + 2.0 * a[i, j, l] + a[i, j, wp.min(l + 1, n - 1)] + float(i - j)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(3, 5, 37), (2, 1, 1), (4, 3, 200)])
def test_fast_bodies_take_the_run_coordinates(shape, threads):
    """The fast body of a multi-dimensional launch runs only inside a run of the task loop, so it
    takes the run's coordinates without a test (which lets the loop over a run vectorise); shares
    that start and end mid-row must still see the right coordinates."""
    a = np.random.default_rng(2).random(shape).astype(np.float32)
    out = wp.zeros(shape, dtype=float)
    with_threads(threads, lambda: wp.launch(clamped_stencil, dim=shape, inputs=[wp.array(a, dtype=float), out]))
    left = np.concatenate([a[:, :, :1], a[:, :, :-1]], axis=2)
    right = np.concatenate([a[:, :, 1:], a[:, :, -1:]], axis=2)
    i, j = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    np.testing.assert_allclose(out.numpy(), left + 2 * a + right + (i - j)[:, :, None], rtol=1e-6)
    source = next(iter(clamped_stencil._instances.values())).binding.source
    # the run's first coordinates from the task loop, the last one counted by it (``coord``)
    assert "weft::int32 tid_coords[4] = {tc.coords[0], tc.coords[1], tc.coords[2], tc.coords[3]};" in source
    assert "weft::thread_ctx& tc, weft::int32 coord) {" in source and "tc.coords_task" not in source
