"""Clamped neighbours of the last thread coordinate (``a[i, j, wp.max(l - 1, 0)]``): the CPU task
loop runs the tasks whose clamps are the identity (the interior, index_ranges ``interior``)
through a body without them, counting the coordinate in int32, so the neighbours are vector
loads; the tasks at the edges keep the clamps. Results must be NumPy's, to the bit, whatever the
shape, the part of the array the launch covers and the number of threads."""

import numpy as np
import pytest

import weft as wp
from tests.threads import with_threads
from weft.codegen import access

pytestmark = pytest.mark.fixed_device("the CPU task loops and their bits")


@wp.kernel
def smooth3(a: wp.array3d(dtype=float), b: wp.array3d(dtype=float), k: float):
    i, j, l = wp.tid()
    nl = a.shape[2]
    c = a[i, j, l]
    s = a[wp.max(i - 1, 0), j, l] + a[i, wp.min(j + 1, a.shape[1] - 1), l]
    s += a[i, j, wp.max(l - 1, 0)] + a[i, j, wp.min(l + 1, nl - 1)]
    s += a[i, j, wp.clamp(l + 2, 0, nl - 1)]
    b[i, j, l] = c + k * (s - 5.0 * c)


@wp.kernel
def smooth1(a: wp.array(dtype=float), lo: int, b: wp.array(dtype=float)):
    i = wp.tid()
    left = a[wp.max(i - 2, lo)]
    right = a[wp.min(1 + i, a.shape[0] - 1)]
    b[i] = left - 2.0 * a[i] + right


@wp.kernel
def per_thread_bound(a: wp.array(dtype=float), lim: wp.array(dtype=int), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = a[wp.min(i + 1, lim[i])]  # the bound differs per thread: no interior


def smooth3_numpy(x, k, launch):
    ni, nj, nl = x.shape
    out = np.zeros(launch, np.float32)
    i, j, l = np.meshgrid(*[np.arange(n) for n in launch], indexing="ij")
    c = x[i, j, l]
    s = x[np.maximum(i - 1, 0), j, l] + x[i, np.minimum(j + 1, nj - 1), l]
    s = s + (x[i, j, np.maximum(l - 1, 0)] + x[i, j, np.minimum(l + 1, nl - 1)])
    s = s + x[i, j, np.clip(l + 2, 0, nl - 1)]
    out[...] = c + np.float32(k) * (s - np.float32(5.0) * c)
    return out


def test_analysis_finds_the_interior_of_the_last_coordinate():
    facts = access.analyze(smooth3.default_instance().ir)
    # max(l - 1, 0), min(l + 1, nl - 1), clamp(l + 2, 0, nl - 1); i's and j's clamps are not on it
    assert len(facts.interior_identity) == 3
    lows = {f.const for f in facts.interior_lows if not f.terms}
    assert lows == {1, -2}
    highs = sorted((f.terms, f.const) for f in facts.interior_highs)
    assert ((((("shape", "a", 2), 1),), -3)) in highs and ((((("shape", "a", 2), 1),), -2)) in highs
    facts = access.analyze(smooth1.default_instance().ir)
    assert len(facts.interior_identity) == 2 and len(facts.interior_steps) == 2
    facts = access.analyze(per_thread_bound.default_instance().ir)
    assert facts.interior_identity == ()


@pytest.mark.parametrize("shape", [(3, 4, 37), (2, 3, 1), (2, 2, 2), (1, 5, 3), (4, 3, 130)])
@pytest.mark.parametrize("threads", [1, 2])
def test_stencil_gives_numpys_bits(shape, threads):
    rng = np.random.default_rng(sum(shape))
    x = rng.random(shape, dtype=np.float32)
    a, b = wp.array(x), wp.zeros(shape, dtype=float)
    with_threads(threads, lambda: wp.launch(smooth3, dim=shape, inputs=[a, b, 0.25]))
    np.testing.assert_array_equal(b.numpy(), smooth3_numpy(x, 0.25, shape))


def test_launch_smaller_than_the_array_and_threads_splitting_rows():
    # the interior comes from the array's shape, the runs from the launch's: a launch over part
    # of the array, its shares starting in the middle of a row
    x = np.random.default_rng(3).random((5, 6, 41), dtype=np.float32)
    launch = (5, 5, 29)
    a, b = wp.array(x), wp.zeros(launch, dtype=float)
    with_threads(2, lambda: wp.launch(smooth3, dim=launch, inputs=[a, b, 0.5]))
    np.testing.assert_array_equal(b.numpy(), smooth3_numpy(x, 0.5, launch))
    src = smooth3.default_instance().binding.source
    assert "smooth3" in src and "_forward_fast_interior_body(&local_args, &local_bounds, t0 + l, tc, l);" in src
    # the edges, like every fast body of a multi-dimensional launch, get the coordinate as an int32
    assert "_forward_fast_body(&local_args, &local_bounds, t0 + l, tc, l);" in src


def test_one_dimensional_interior_with_a_parameter_bound():
    x = np.random.default_rng(4).random(1000, dtype=np.float32)
    a, b = wp.array(x), wp.zeros(1000, dtype=float)
    i = np.arange(1000)
    for lo in (0, 1, 5, 400):
        want = x[np.maximum(i - 2, lo)] - np.float32(2.0) * x + x[np.minimum(i + 1, 999)]
        for threads in (1, 2):
            b.zero_()
            with_threads(threads, lambda: wp.launch(smooth1, dim=1000, inputs=[a, lo, b]))
            np.testing.assert_array_equal(b.numpy(), want)
    with pytest.raises(IndexError, match="smooth1"):  # no task is inside the interior, and a[2000]
        wp.launch(smooth1, dim=1000, inputs=[a, 2000, b])


def test_edges_keep_their_checks():
    # a launch larger than the array goes to the checked body and names the access
    a, b = wp.zeros((2, 2, 4), dtype=float), wp.zeros((2, 2, 5), dtype=float)
    with pytest.raises(IndexError, match="smooth3"):
        wp.launch(smooth3, dim=(2, 2, 5), inputs=[a, b, 0.5])
    x = np.arange(8, dtype=np.float32)
    out = wp.zeros(8, dtype=float)
    wp.launch(per_thread_bound, dim=8, inputs=[wp.array(x), wp.array(np.full(8, 3, np.int32)), out])
    np.testing.assert_array_equal(out.numpy(), x[np.minimum(np.arange(8) + 1, 3)])
