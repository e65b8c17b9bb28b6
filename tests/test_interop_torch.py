"""PyTorch interop: zero-copy tensors <-> arrays, gradients, tensors as kernel arguments, the
autograd bridge (torch_function / torch_kernel) and the Adam example."""

import numpy as np
import pytest

import weft as wp

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def torch_device(weft_device):
    """Tensors a test makes live on the torch device matching its weft device (torch's default
    device is set for the test), so that every test here also runs on a GPU."""
    if weft_device.is_cpu:
        yield "cpu"
        return
    if not torch.cuda.is_available():
        pytest.skip(f"this torch build has no CUDA, so no tensors on {weft_device}")
    previous = torch.get_default_device()
    torch.set_default_device(wp.device_to_torch(weft_device))
    try:
        yield torch.get_default_device()
    finally:
        torch.set_default_device(previous)


@wp.kernel
def add_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float)):
    i = wp.tid()
    z[i] = x[i] + y[i]


@wp.kernel
def square_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def scale2d_kernel(x: wp.array2d(dtype=float), k: float, y: wp.array2d(dtype=float)):
    i, j = wp.tid()
    y[i, j] = k * x[i, j]


@wp.kernel
def length_kernel(v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.length(v[i])


@wp.kernel
def sin_mul_kernel(x: wp.array(dtype=wp.float64), w: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = wp.sin(x[i]) * w[i] + x[i] * x[i]


@wp.kernel
def vec_energy_kernel(p: wp.array(dtype=wp.vec3d), k: wp.float64, e: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.atomic_add(e, 0, k * wp.dot(p[i], p[i]) + wp.sin(p[i][0]))


@wp.kernel
def double_kernel(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


# -- dtypes and devices ------------------------------------------------------------------------


def test_dtype_and_device_mapping():
    assert wp.dtype_from_torch(torch.float32) is wp.float32
    assert wp.dtype_from_torch(torch.float64) is wp.float64
    assert wp.dtype_from_torch(torch.float16) is wp.float16
    assert wp.dtype_from_torch(torch.int64) is wp.int64
    assert wp.dtype_from_torch(torch.bool) is wp.bool
    assert wp.dtype_to_torch(wp.float32) == torch.float32
    assert wp.dtype_to_torch(wp.uint32) == torch.int32  # as in Warp
    with pytest.raises(TypeError):
        wp.dtype_from_torch(torch.complex64)
    with pytest.raises(TypeError):
        wp.dtype_to_torch(wp.vec3)
    assert wp.device_from_torch("cpu") == wp.get_device("cpu")
    assert wp.device_from_torch(torch.device("cpu")).is_cpu
    assert wp.device_to_torch("cpu") == "cpu"


# -- from_torch / to_torch: zero copy ------------------------------------------------------------


def test_from_torch_shares_memory_both_ways():
    t = torch.zeros(5)
    a = wp.from_torch(t)
    assert a.dtype is wp.float32 and a.shape == (5,) and a.ptr == t.data_ptr()
    t[2] = 7.0
    assert a.numpy()[2] == 7.0
    if a.device.is_cpu:  # a CPU array's .numpy() is a view of the same memory
        a.numpy()[3] = -1.0
        assert t[3].item() == -1.0
    wp.launch(square_kernel, dim=5, inputs=[wp.from_torch(torch.full((5,), 3.0)), a])
    assert torch.equal(t, torch.full((5,), 9.0))


def test_from_torch_vector_and_matrix_dtypes():
    t = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    assert wp.from_torch(t).shape == (4, 3)  # no dtype: the tensor's scalar type (as in Warp)
    v = wp.from_torch(t, dtype=wp.vec3)
    assert v.dtype is wp.vec3 and v.shape == (4,) and v.ptr == t.data_ptr()
    t[1, 2] = 100.0
    assert v.numpy()[1, 2] == 100.0
    m = wp.from_torch(torch.zeros(2, 5, 3, 3, dtype=torch.float64), dtype=wp.mat33d)
    assert m.shape == (2, 5) and m.dtype is wp.mat33d
    with pytest.raises(RuntimeError, match="inner dimensions"):
        wp.from_torch(torch.zeros(4, 2), dtype=wp.vec3)
    with pytest.raises(RuntimeError, match="float64"):
        wp.from_torch(torch.zeros(4, dtype=torch.float64), dtype=wp.float32)
    with pytest.raises(RuntimeError, match="not contiguous"):
        wp.from_torch(torch.zeros(3, 5).t(), dtype=wp.vec3)


def test_from_torch_strided_tensors_are_views():
    big = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    col = big[:, 1]
    a = wp.from_torch(col)
    assert a.shape == (3,) and a.strides == (16,) and a.ptr == col.data_ptr()
    np.testing.assert_array_equal(a.numpy(), [1.0, 5.0, 9.0])
    tt = wp.from_torch(big.t())
    assert tt.shape == (4, 3) and tt.strides == (4, 16)
    if a.device.is_cpu:
        a.numpy()[0] = -3.0
        assert big[0, 1].item() == -3.0


def test_from_torch_gradient_is_shared():
    t = torch.zeros(4, requires_grad=True)
    a = wp.from_torch(t)
    assert a.requires_grad and t.grad is not None  # allocated as zeros
    assert a.grad.ptr == t.grad.data_ptr()
    if a.device.is_cpu:
        a.grad.numpy()[1] = 5.0
        assert t.grad[1].item() == 5.0
    t2 = torch.zeros(3, requires_grad=True)
    t2.grad = torch.ones(3)
    assert wp.from_torch(t2).grad.ptr == t2.grad.data_ptr()
    assert wp.from_torch(t2, requires_grad=False).grad is None
    plain = torch.zeros(3)
    assert wp.from_torch(plain).grad is None
    g = torch.full((3,), 2.0)
    assert wp.from_torch(plain, grad=g).grad.ptr == g.data_ptr()


def test_from_torch_strided_gradient_keeps_the_layout():
    leaf = torch.zeros(4, 3, requires_grad=True)
    a = wp.from_torch(leaf.t())
    assert a.grad.strides == a.strides == (4, 12)
    wrong = torch.zeros(3, 4, requires_grad=True)
    wrong.grad = torch.zeros(4, 3).t()  # another layout than the tensor's
    with pytest.raises(RuntimeError, match="layout"):
        wp.from_torch(wrong)


def test_from_torch_expanded_tensor_cannot_have_a_gradient():
    ex = torch.ones(1).expand(4)
    assert wp.from_torch(ex).strides == (0,)
    with pytest.raises(RuntimeError, match="expand"):
        wp.from_torch(ex, requires_grad=True)


def test_from_torch_return_ctype_and_0d():
    t = torch.arange(3, dtype=torch.float32)
    ct = wp.from_torch(t, return_ctype=True)
    assert isinstance(ct, wp.types.array_t) and ct.data == t.data_ptr()
    s = wp.from_torch(torch.tensor(2.5))
    assert s.shape == (1,) and s.numpy()[0] == 2.5


def test_to_torch_shares_memory_and_gradient():
    a = wp.zeros(3, dtype=wp.vec3, requires_grad=True)
    t = wp.to_torch(a)
    assert t.shape == (3, 3) and t.dtype == torch.float32 and t.data_ptr() == a.ptr
    assert t.is_leaf and t.requires_grad and t.grad.data_ptr() == a.grad.ptr
    with torch.no_grad():
        t[1, 2] = 5.0
    assert a.numpy()[1, 2] == 5.0
    if a.device.is_cpu:
        a.numpy()[0, 0] = 4.0
        assert t[0, 0].item() == 4.0
    plain = wp.to_torch(wp.zeros((2, 3), dtype=wp.float64))
    assert plain.shape == (2, 3) and not plain.requires_grad and plain.dtype == torch.float64
    assert wp.to_torch(a, requires_grad=False).grad is None
    no_grad = wp.zeros(2)
    leaf = wp.to_torch(no_grad, requires_grad=True)  # as in Warp: requires grad, no .grad yet
    assert leaf.requires_grad and leaf.grad is None and no_grad.grad is None
    u = wp.to_torch(wp.array([1, 2], dtype=wp.uint32))
    assert u.dtype == torch.int32


def test_round_trip_keeps_memory():
    t = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    back = wp.to_torch(wp.from_torch(t))
    assert back.data_ptr() == t.data_ptr() and torch.equal(back, t)


# -- tensors passed straight to wp.launch ------------------------------------------------------


def _must_case(x):
    yt = torch.full((4,), 10.0, requires_grad=True)
    zt = torch.zeros(4, requires_grad=True)
    y, z = wp.from_torch(yt), wp.from_torch(zt)
    tape = wp.Tape()
    with tape:
        wp.launch(add_kernel, dim=4, inputs=[x, y], outputs=[z])
    return yt, zt, z, tape


def test_plain_tensor_argument_backward_never_writes_it():
    """The case that must be right: z = x + y with x a plain tensor passed directly."""
    x = torch.arange(4, dtype=torch.float32)
    original = x.clone()
    yt, zt, z, tape = _must_case(x)
    np.testing.assert_array_equal(zt.detach().cpu().numpy(), original.cpu().numpy() + 10.0)
    tape.backward(grads={z: wp.ones(4, dtype=float)})
    assert torch.equal(x, original)
    assert x.grad is None
    assert torch.equal(yt.grad, torch.ones(4))


def test_plain_tensor_argument_with_numpy_seed_and_tensor_seed():
    x = torch.arange(4, dtype=torch.float32)
    yt, _, z, tape = _must_case(x)
    tape.backward(grads={z: np.ones(4, dtype=np.float32)})
    assert torch.equal(x, torch.arange(4, dtype=torch.float32))
    assert torch.equal(yt.grad, torch.ones(4))


def test_tensor_requiring_grad_passed_directly_gets_its_gradient():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = torch.zeros(3, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square_kernel, dim=3, inputs=[x], outputs=[y])
    assert torch.equal(y.detach(), torch.tensor([1.0, 4.0, 9.0]))
    tape.backward(grads={wp.from_torch(y): np.ones(3, dtype=np.float32)})
    assert torch.equal(x.grad, torch.tensor([2.0, 4.0, 6.0]))
    assert torch.equal(x.detach(), torch.tensor([1.0, 2.0, 3.0]))
    # t.grad cleared in between (optimizer.zero_grad(set_to_none=True)): a fresh one is allocated
    x.grad = None
    tape.backward(grads={wp.from_torch(y): np.ones(3, dtype=np.float32)})
    assert torch.equal(x.grad, torch.tensor([2.0, 4.0, 6.0]))


def test_output_tensor_without_grad_is_left_alone_by_backward():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = torch.zeros(3)  # written by the kernel, no gradient
    tape = wp.Tape()
    with tape:
        wp.launch(square_kernel, dim=3, inputs=[x], outputs=[y])
    tape.backward()
    assert torch.equal(y, torch.tensor([1.0, 4.0, 9.0]))
    assert torch.equal(x.grad, torch.zeros(3))


def test_vec3_tensors_passed_directly():
    v = torch.tensor([[3.0, 4.0, 0.0], [0.0, 0.0, 2.0]], requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(length_kernel, dim=2, inputs=[v, out])
    np.testing.assert_allclose(out.numpy(), [5.0, 2.0])
    tape.backward(grads={out: np.ones(2, dtype=np.float32)})
    np.testing.assert_allclose(v.grad.cpu().numpy(), [[0.6, 0.8, 0.0], [0.0, 0.0, 1.0]], rtol=1e-6)
    with pytest.raises(TypeError):
        wp.launch(length_kernel, dim=2, inputs=[torch.zeros(2, 2), out])  # inner shape 2 is no vec3


def test_2d_tensors_passed_directly():
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3).requires_grad_()
    y = torch.zeros(2, 3, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(scale2d_kernel, dim=(2, 3), inputs=[x, 3.0, y])
    assert torch.equal(y.detach(), 3.0 * x.detach())
    tape.backward(grads={wp.from_torch(y): np.ones((2, 3), dtype=np.float32)})
    assert torch.equal(x.grad, torch.full((2, 3), 3.0))


def test_non_contiguous_tensors_passed_directly_are_strided_views():
    base = torch.arange(8, dtype=torch.float32)
    x = base[::2]  # [0, 2, 4, 6], stride 2
    out_base = torch.zeros(8)
    y = out_base[1::2]
    wp.launch(square_kernel, dim=4, inputs=[x, y])
    assert torch.equal(out_base, torch.tensor([0.0, 0.0, 0.0, 4.0, 0.0, 16.0, 0.0, 36.0]))
    # with gradients, through a transpose
    leaf = torch.arange(6, dtype=torch.float32).reshape(3, 2).requires_grad_()
    xt = leaf.detach().t().requires_grad_()  # (2, 3), strides (1, 2)
    yt = torch.zeros(2, 3, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(scale2d_kernel, dim=(2, 3), inputs=[xt, 2.0, yt])
    assert torch.equal(yt.detach(), 2.0 * xt.detach())
    tape.backward(grads={wp.from_torch(yt): np.ones((2, 3), dtype=np.float32)})
    assert xt.grad.stride() == xt.stride()
    assert torch.equal(xt.grad, torch.full((2, 3), 2.0))
    with pytest.raises(TypeError):  # vector components must be contiguous: a clear error, no copy
        wp.launch(length_kernel, dim=2, inputs=[torch.zeros(3, 2).t(), wp.zeros(2)])


def test_wrong_dtype_tensor_is_rejected():
    with pytest.raises(TypeError, match="float64 values"):
        wp.launch(square_kernel, dim=3, inputs=[torch.zeros(3, dtype=torch.float64), torch.zeros(3)])


# -- the autograd bridge -------------------------------------------------------------------------


def test_torch_kernel_forward_and_gradcheck():
    op = wp.torch_kernel(sin_mul_kernel)
    x = torch.linspace(-1.0, 1.0, 7, dtype=torch.float64, requires_grad=True)
    w = torch.linspace(0.5, 2.0, 7, dtype=torch.float64, requires_grad=True)
    (y,) = op(x, w)
    torch.testing.assert_close(y, torch.sin(x) * w + x * x)
    assert torch.autograd.gradcheck(lambda a, b: op(a, b)[0], (x, w))


def test_torch_function_over_a_tape_with_vectors_and_gradcheck():
    @wp.interop.torch_function(dtypes=[wp.vec3d])
    def energy(p, k):
        e = wp.zeros(1, dtype=wp.float64, requires_grad=True)
        wp.launch(vec_energy_kernel, dim=p.shape[0], inputs=[p, k, e])
        doubled = wp.zeros(1, dtype=wp.float64, requires_grad=True)
        wp.launch(double_kernel, dim=1, inputs=[e, doubled])
        return doubled

    p = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    e = energy(p, 0.5)
    expected = 2.0 * (0.5 * (p * p).sum() + torch.sin(p[:, 0]).sum())
    torch.testing.assert_close(e[0], expected)
    assert torch.autograd.gradcheck(lambda q: energy(q, 0.5), (p,))


def test_torch_bridge_composes_with_torch_ops_and_leaves_t_grad_to_torch():
    op = wp.torch_kernel(double_kernel)
    x = torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64, requires_grad=True)
    (y,) = op(torch.exp(x))  # a non-leaf input
    loss = (y * y).sum()
    loss.backward()
    torch.testing.assert_close(x.grad, 8.0 * torch.exp(2.0 * x.detach()))
    # a second backward through a retained graph gives the same gradient again
    x.grad = None
    (y,) = op(x)
    s = y.sum()
    s.backward(retain_graph=True)
    s.backward()
    torch.testing.assert_close(x.grad, torch.full((3,), 4.0, dtype=torch.float64))


def test_torch_example_loss_falls():
    from weft.examples import torch_optimize

    losses, _, _ = torch_optimize.optimize(iters=10)
    assert losses[-1] < 0.2 * losses[0]


def test_repeated_launches_follow_tensor_storage_changes():
    x = torch.full((3,), 2.0)
    y = torch.zeros(3)
    wp.launch(square_kernel, dim=3, inputs=[x, y])
    wp.launch(square_kernel, dim=3, inputs=[x, y])  # the cached wrapper
    assert torch.equal(y, torch.full((3,), 4.0))
    y.set_(torch.zeros(3))  # new storage: the wrapper must follow it
    x.mul_(2.0)
    wp.launch(square_kernel, dim=3, inputs=[x, y])
    assert torch.equal(y, torch.full((3,), 16.0))
