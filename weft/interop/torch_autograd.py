"""weft code as differentiable PyTorch ops (``torch.autograd.Function``).

Contract:
  - ``torch_function(fn)`` wraps a Python function that takes weft arrays (and other values) and
    launches kernels, returning one weft array or a tuple of them. Called with torch tensors, it
    records ``fn`` on a fresh ``wp.Tape`` and returns tensors that share the outputs' memory.
    Torch's backward seeds the outputs' gradients with copies of the incoming gradients, runs
    ``tape.backward()`` and returns the inputs' gradients (fresh tensors), so repeated backward
    passes (``retain_graph=True``, ``gradcheck``) work.
  - Inputs are wrapped zero-copy WITHOUT their ``.grad``: the gradient goes to torch through the
    autograd graph, never by writing ``t.grad`` behind torch's back. ``fn`` must not write into
    its input arrays (torch's saved-tensor version check catches in-place changes made by torch).
  - ``torch_kernel(kernel)`` is ``torch_function`` around one launch, with the calling
    convention of ``wp.jax_kernel`` (inputs first, the last ``num_outputs`` parameters are
    outputs, allocated as zeros shaped like the launch grid).
"""

from __future__ import annotations

from .. import types
from ..array import array, copy, zeros
from ..runtime import recording
from ..runtime.launch import launch
from ..tape import Tape
from . import _kernel_call
from .torch import _torch, from_torch, to_torch

_function_class: list = []


def _tape_function():
    """The ``torch.autograd.Function`` subclass (defined on first use: torch is imported lazily)."""
    if _function_class:
        return _function_class[0]
    torch = _torch()

    class TapeFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, op, *args):
            return op.forward(ctx, args)

        @staticmethod
        def backward(ctx, *grad_outputs):
            return (None,) + ctx.weft_op.backward(ctx, grad_outputs)

    _function_class.append(TapeFunction)
    return TapeFunction


def _is_float(dtype) -> bool:
    return types.is_float(getattr(dtype, "_scalar", dtype))


class TorchFunction:
    """A weft function called with torch tensors as a differentiable torch op (see ``torch_function``)."""

    def __init__(self, fn, dtypes=None):
        self.fn = fn
        self.dtypes = dtypes
        self.__name__ = getattr(fn, "__name__", "torch_function")
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args):
        outs = _tape_function().apply(self, *args)
        return outs

    def _dtype(self, k):
        if self.dtypes is None:
            return None
        return (
            self.dtypes.get(k) if isinstance(self.dtypes, dict) else (self.dtypes[k] if k < len(self.dtypes) else None)
        )

    def forward(self, ctx, args):
        torch = _torch()
        tensor_pos = [k for k, a in enumerate(args) if isinstance(a, torch.Tensor)]
        params = list(args)
        for k in tensor_pos:
            t = args[k].detach()
            if any(n > 1 and s == 0 for n, s in zip(t.shape, t.stride())):
                t = t.contiguous()  # expand()ed: give every element its own gradient cell (fn only reads it)
            a = from_torch(t, dtype=self._dtype(k), requires_grad=False)
            if ctx.needs_input_grad[k + 1] and _is_float(a.dtype):
                a.requires_grad = True  # a private zeroed gradient with the input's strides
            params[k] = a
        tape = Tape()
        with recording.paused(), tape:  # the function's own tape, whatever weft tape records outside
            result = self.fn(*params)
        single = isinstance(result, array)
        outs = (result,) if single else tuple(result)
        for o in outs:
            if not isinstance(o, array):
                raise TypeError(f"torch_function: '{self.__name__}' must return weft arrays, got {type(o).__name__}")
        ctx.weft_op = self
        ctx.tape, ctx.params, ctx.outs, ctx.tensor_pos = tape, params, outs, tensor_pos
        ctx.input_shapes = [tuple(args[k].shape) for k in tensor_pos]
        ctx.save_for_backward(*(args[k] for k in tensor_pos))  # torch's check for in-place changes
        tensors = [to_torch(o, requires_grad=False) for o in outs]
        for o, t in zip(outs, tensors):
            if not _is_float(o.dtype):
                ctx.mark_non_differentiable(t)
        return tensors[0] if single else tuple(tensors)

    def backward(self, ctx, grad_outputs):
        _ = ctx.saved_tensors  # raises if an input was modified in place since forward
        tape = ctx.tape
        tape.zero()
        for o, g in zip(ctx.outs, grad_outputs):
            if not _is_float(o.dtype):
                continue
            if o.grad is None:
                o.requires_grad = True
            if g is None:
                o.grad.zero_()
            else:  # on the output's device (CPU or GPU): a copy between two weft views
                seed = from_torch(g.detach().contiguous(), dtype=o.dtype, requires_grad=False)
                copy(o.grad, seed.reshape(o.grad.shape))
        tape.backward()
        grads = [None] * (len(ctx.params))
        for k, shape in zip(ctx.tensor_pos, ctx.input_shapes):
            a = ctx.params[k]
            if a.grad is not None and ctx.needs_input_grad[k + 1]:
                grads[k] = to_torch(a.grad, requires_grad=False).clone().reshape(shape)
        return tuple(grads)


def torch_function(fn=None, *, dtypes=None):
    """Make a weft function a differentiable PyTorch op (usable as a decorator).

    ``fn`` takes weft arrays where the op is given tensors (other arguments pass through
    unchanged), launches kernels, and returns a weft array or a tuple of them (allocate them
    inside ``fn``). The op returns tensors sharing the outputs' memory; ``loss.backward()``
    runs the recorded launches' adjoints and hands the inputs' gradients to torch.

    Args:
        fn: The function.
        dtypes: weft dtypes for tensor arguments, by position (a list, or a dict
            ``{position: dtype}``); a vector/matrix dtype takes the trailing dimensions
            (``(n, 3)`` float32 with ``wp.vec3``). Default: the tensor's scalar type.

    Returns:
        A callable ``op(*args)`` returning a tensor or a tuple of tensors.
    """
    if fn is None:
        return lambda f: TorchFunction(f, dtypes)
    return TorchFunction(fn, dtypes)


class TorchKernel:
    """One kernel as a differentiable torch op (see ``torch_kernel``)."""

    def __init__(self, kernel, num_outputs=1, launch_dims=None, output_dims=None):
        self.sig = _kernel_call.KernelSignature(kernel, num_outputs)
        self.launch_dims = launch_dims
        self.output_dims = output_dims
        self.__name__ = kernel.key

    def __call__(self, *inputs, launch_dims=None, output_dims=None):
        torch = _torch()
        sig = self.sig
        if len(inputs) != sig.num_inputs:
            raise TypeError(f"kernel '{sig.kernel.key}' takes {sig.num_inputs} inputs, got {len(inputs)}")
        shapes = [tuple(x.shape) if isinstance(x, torch.Tensor) else None for x in inputs]
        dims = sig.launch_dims(shapes, launch_dims if launch_dims is not None else self.launch_dims)
        out_shapes = sig.output_shapes(dims, output_dims if output_dims is not None else self.output_dims)

        def run(*params):
            device = next((p.device for p in params if isinstance(p, array)), None)  # the tensors' device
            outs = [
                zeros(s, dtype=t.dtype, requires_grad=True, device=device) for s, t in zip(out_shapes, sig.output_types)
            ]
            launch(sig.kernel, dims, inputs=list(params), outputs=outs, device=device)
            return tuple(outs)

        dtypes = [t.dtype if isinstance(t, types.ArrayType) else None for t in sig.input_types]
        return TorchFunction(run, dtypes)(*inputs)


def torch_kernel(kernel, num_outputs=1, launch_dims=None, output_dims=None):
    """Make one kernel a differentiable PyTorch op: ``outs = op(*inputs)``.

    The kernel's last ``num_outputs`` parameters are outputs, allocated as zeros; the others are
    inputs (tensors for arrays, Python values for scalars), converted with the kernel's declared
    dtypes. The grid is ``launch_dims`` or the shape of the first array input, and each output's
    shape is ``output_dims`` (a shape or ``{name: shape}``) or the grid. Both may also be given
    per call. Same conventions as ``wp.jax_kernel``.

    Returns:
        A callable returning a tuple of tensors (vector/matrix components trailing).
    """
    return TorchKernel(kernel, num_outputs, launch_dims, output_dims)
