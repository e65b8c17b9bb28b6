"""JAX interop (CPU): arrays through DLPack, and weft kernels inside ``jax.jit`` code.

Contract:
  - ``from_jax`` shares the JAX buffer (zero-copy; JAX treats its arrays as immutable, so writing
    into one is the caller's risk, as in Warp). ``to_jax`` hands a weft array to JAX through
    DLPack: zero-copy when the data is 64-byte aligned and contiguous (every array weft allocates
    is aligned), otherwise JAX makes its own copy.
  - ``jax_kernel`` / ``jax_callable`` run weft code from (jitted) JAX code through
    ``jax.pure_callback``: the callback gets the inputs on the host, launches on the CPU and
    returns the outputs, which JAX copies into its own buffers. ``jax_kernel(...,
    enable_backward=True)`` adds a ``jax.custom_vjp`` whose backward is a second callback running
    the kernel's adjoint, so ``jax.grad`` works. Scalars must be static (Python values), as in
    Warp. This is Warp's API on the CPU; Warp's XLA FFI path (no host round trip, CUDA graphs,
    ``in_out_argnames``) is not available.
  - jax is imported lazily: importing weft never imports jax.
"""

from __future__ import annotations

import inspect

import numpy as np

from .. import types
from ..array import array, zeros
from ..runtime.device import get_device
from ..runtime.launch import launch
from . import _kernel_call
from .dlpack import from_dlpack


def _jax():
    try:
        import jax
    except ImportError:
        raise ImportError("JAX interop needs jax: pip install jax jaxlib (or pip install 'weft[jax]')") from None
    return jax


# ---------------------------------------------------------------------------------------------
# devices, dtypes, arrays
# ---------------------------------------------------------------------------------------------


def device_from_jax(jax_device):
    """Return the weft ``Device`` of a JAX device (``jax.devices()[0]``...).

    Args:
        jax_device: A JAX device (its ``platform`` is ``"cpu"`` or a GPU platform).

    Returns:
        ``wp.get_device("cpu")`` or the ``cuda:N`` device of the same index.
    """
    if jax_device.platform == "cpu":
        return get_device("cpu")
    return get_device(f"cuda:{jax_device.id}")


def device_to_jax(warp_device):
    """Return the JAX device of a weft device-like value.

    Args:
        warp_device: A device-like value (``"cpu"``, ``"cuda:0"``, a ``wp.Device``; None for the current one).

    Returns:
        The JAX device of the same platform and index.

    Raises:
        RuntimeError: JAX has no such device.
    """
    jax = _jax()
    d = get_device(warp_device)
    platform, index = ("cpu", 0) if d.is_cpu else ("gpu", d.ordinal)
    devices = jax.devices(platform)
    if index >= len(devices):
        raise RuntimeError(f"JAX has no device for weft device '{d}'")
    return devices[index]


def dtype_from_jax(jax_dtype):
    """Return the weft scalar type of a JAX dtype (``jnp.float32``...).

    Args:
        jax_dtype: A JAX or NumPy dtype, or anything ``np.dtype`` accepts.

    Returns:
        The weft scalar type (``wp.float32``...).

    Raises:
        TypeError: weft has no such type (bfloat16, complex...).
    """
    t = types.scalar_from_numpy(np.dtype(jax_dtype)) if np.dtype(jax_dtype).kind != "V" else None
    if t is None:
        raise TypeError(f"Cannot convert {jax_dtype} to a Warp type")
    return t


def dtype_to_jax(warp_dtype):
    """Return the JAX (NumPy) dtype of a weft scalar type.

    Args:
        warp_dtype: A weft scalar type.

    Returns:
        The matching ``jnp.dtype``.

    Raises:
        TypeError: ``warp_dtype`` is not a scalar type.
    """
    if not types.is_scalar(warp_dtype):
        raise TypeError(f"Cannot convert {warp_dtype!r} to a Jax type")
    return _jax().numpy.dtype(warp_dtype.np_dtype)


def from_jax(jax_array, dtype=None) -> array:
    """Convert a JAX array (on the CPU or a GPU) to a weft array without copying.

    Args:
        jax_array: The JAX array.
        dtype: As for ``wp.from_dlpack`` (a vector/matrix dtype takes the trailing dimensions).
    """
    return from_dlpack(jax_array, dtype)


def to_jax(warp_array):
    """Convert a weft array to a JAX array, through DLPack.

    The JAX array is on the JAX device matching the array's (CPU or GPU). Zero-copy when the
    array is contiguous and 64-byte aligned (arrays weft allocates are);
    JAX copies other arrays (strided views, memory wrapped from elsewhere).
    Vector/matrix components are trailing dimensions.

    Args:
        warp_array: A ``wp.array`` holding data (not an annotation).

    Returns:
        A ``jax.Array`` on the matching JAX device, sharing memory where it can.

    Raises:
        TypeError: ``warp_array`` is not a weft array with data.

    Example:
        ``x = wp.to_jax(wp.zeros(8))`` (needs JAX).
    """
    jax = _jax()
    if not isinstance(warp_array, array) or warp_array.is_annotation:
        raise TypeError(f"wp.to_jax expects a wp.array with data, got {type(warp_array).__name__}")
    if not warp_array.is_contiguous:  # XLA only imports compact layouts
        return jax.device_put(warp_array.numpy(), device_to_jax(warp_array.device))
    return jax.dlpack.from_dlpack(warp_array)


# ---------------------------------------------------------------------------------------------
# weft code inside jax.jit
# ---------------------------------------------------------------------------------------------


def _host_array(x, dtype) -> array:
    """A weft array holding a callback's NumPy input (a private copy: JAX buffers are immutable)."""
    return array(np.array(x), dtype=dtype)


def _result_spec(shape, dtype):
    jax = _jax()
    full = tuple(shape) + _kernel_call.trailing(dtype)
    return jax.ShapeDtypeStruct(full, getattr(dtype, "_scalar", dtype).np_dtype)


def _is_float(dtype) -> bool:
    return types.is_float(getattr(dtype, "_scalar", dtype))


class JaxKernel:
    """One kernel as a JAX function (see ``jax_kernel``)."""

    def __init__(self, kernel, num_outputs, vmap_method, launch_dims, output_dims, enable_backward):
        self.sig = _kernel_call.KernelSignature(kernel, num_outputs)
        self.vmap_method = vmap_method
        self.launch_dims = launch_dims
        self.output_dims = output_dims
        self.enable_backward = enable_backward

    def __call__(self, *args, launch_dims=None, output_dims=None, vmap_method=None):
        sig = self.sig
        if len(args) != sig.num_inputs:
            raise TypeError(f"kernel '{sig.kernel.key}' takes {sig.num_inputs} inputs, got {len(args)}")
        is_arr = [isinstance(t, types.ArrayType) for t in sig.input_types]
        shapes = [tuple(np.shape(a)) if arr else None for a, arr in zip(args, is_arr)]
        dims = sig.launch_dims(shapes, self.launch_dims if launch_dims is None else launch_dims)
        out_shapes = sig.output_shapes(dims, self.output_dims if output_dims is None else output_dims)
        specs = [_result_spec(s, t.dtype) for s, t in zip(out_shapes, sig.output_types)]
        method = vmap_method or self.vmap_method
        arr_pos = [k for k, arr in enumerate(is_arr) if arr]
        statics = {k: a for k, a in enumerate(args) if not is_arr[k]}
        for k, v in statics.items():
            if hasattr(v, "aval"):
                raise TypeError(
                    f"kernel '{sig.kernel.key}': scalar argument '{sig.names[k]}' is a traced JAX value; scalars must "
                    "be static (Python values, or jax.jit static_argnames), as in Warp"
                )

        def params_of(arrays):
            params = [statics.get(k) for k in range(sig.num_inputs)]
            for k, x in zip(arr_pos, arrays):
                params[k] = _host_array(x, sig.input_types[k].dtype)
            return params

        def forward_host(*arrays):
            outs = [zeros(s, dtype=t.dtype) for s, t in zip(out_shapes, sig.output_types)]
            launch(sig.kernel, dims, inputs=params_of(arrays), outputs=outs)
            return tuple(np.array(o.numpy()) for o in outs)

        jax = _jax()

        def call(*arrays):
            return tuple(jax.pure_callback(forward_host, specs, *arrays, vmap_method=method))

        arrays = [args[k] for k in arr_pos]
        if not self.enable_backward:
            return call(*arrays)
        return self._differentiable(call, params_of, arrays, arr_pos, dims, out_shapes, method)(*arrays)

    def _differentiable(self, call, params_of, arrays, arr_pos, dims, out_shapes, method):
        """``call`` with a custom VJP whose backward launches the kernel's adjoint in a callback."""
        jax = _jax()
        sig = self.sig
        in_specs = [jax.ShapeDtypeStruct(np.shape(a), jax.numpy.result_type(a)) for a in arrays]

        def backward_host(*flat):
            inputs, cotangents = flat[: len(arrays)], flat[len(arrays) :]
            params = params_of(inputs)
            for k in arr_pos:
                if _is_float(params[k].dtype):
                    params[k].requires_grad = True
            outs = [zeros(s, dtype=t.dtype) for s, t in zip(out_shapes, sig.output_types)]
            adj_outs = [array(np.array(c), dtype=t.dtype) for c, t in zip(cotangents, sig.output_types)]
            adj_ins = [getattr(p, "grad", None) for p in params]
            launch(
                sig.kernel, dims, inputs=params, outputs=outs, adj_inputs=adj_ins, adj_outputs=adj_outs, adjoint=True
            )
            grads = []
            for k, spec in zip(arr_pos, in_specs):
                g = params[k].grad
                if g is None:
                    grads.append(np.zeros(spec.shape, spec.dtype))
                else:
                    grads.append(np.array(g.numpy()).reshape(spec.shape).astype(spec.dtype))
            return tuple(grads)

        @jax.custom_vjp
        def f(*xs):
            return call(*xs)

        def f_fwd(*xs):
            return call(*xs), xs

        def f_bwd(xs, cts):
            grads = jax.pure_callback(backward_host, in_specs, *xs, *cts, vmap_method=method)
            return tuple(g if _inexact(x) else np.zeros(np.shape(x), jax.dtypes.float0) for g, x in zip(grads, xs))

        f.defvjp(f_fwd, f_bwd)
        return f


def _inexact(x) -> bool:
    return np.issubdtype(x.dtype, np.inexact)


def jax_kernel(
    kernel, num_outputs=1, vmap_method="sequential", launch_dims=None, output_dims=None, enable_backward=False
):
    """Make a weft kernel callable from JAX (also inside ``jax.jit``), on the CPU.

    The kernel's last ``num_outputs`` parameters are outputs (allocated as zeros); the others are
    inputs: JAX arrays for array parameters (vector/matrix components trailing), static Python
    values for scalars. The grid is ``launch_dims`` or the shape of the first array input; each
    output's shape is ``output_dims`` (a shape or ``{name: shape}``) or the grid. Both may also be
    given per call, like ``vmap_method`` (``jax.pure_callback``'s: "sequential" by default).

    Args:
        kernel: The ``@wp.kernel``.
        num_outputs: How many trailing parameters are outputs.
        vmap_method: How the call behaves under ``jax.vmap``.
        launch_dims, output_dims: Default grid and output shapes.
        enable_backward: Make the function differentiable with ``jax.grad`` / ``jax.vjp``.

    Returns:
        A callable returning a tuple of JAX arrays, one per output.
    """
    return JaxKernel(kernel, num_outputs, vmap_method, launch_dims, output_dims, enable_backward)


def jax_callable(func, num_outputs=1, vmap_method="sequential", output_dims=None):
    """Make a Python function that launches weft kernels callable from JAX, on the CPU.

    ``func``'s parameters are annotated like a kernel's (``wp.array(dtype=...)``, scalars); its
    last ``num_outputs`` parameters are output arrays that it fills. Outputs are shaped by
    ``output_dims`` (a shape or ``{name: shape}``, also per call) or like the first array input.
    Not differentiable (as in Warp).

    Returns:
        A callable returning a tuple of JAX arrays, one per output.
    """
    return JaxCallable(func, num_outputs, vmap_method, output_dims)


class _Signature:
    """The kernel-like signature of an annotated Python function (for ``KernelSignature``)."""

    _weft_kind = "kernel"

    def __init__(self, func):
        from ..codegen import typing_rules

        params = inspect.signature(func).parameters
        self.key = getattr(func, "__qualname__", repr(func))
        self.arg_names = list(params)
        self.arg_types = []
        for p in params.values():
            t = typing_rules.annotation_type(p.annotation) if p.annotation is not inspect.Parameter.empty else None
            if t is None:
                raise TypeError(f"jax_callable: parameter '{p.name}' of '{self.key}' needs a weft type annotation")
            self.arg_types.append(t)


class JaxCallable:
    """A Python function of weft arrays as a JAX function (see ``jax_callable``)."""

    def __init__(self, func, num_outputs, vmap_method, output_dims):
        self.func = func
        self.sig = _kernel_call.KernelSignature(_Signature(func), num_outputs)
        self.vmap_method = vmap_method
        self.output_dims = output_dims

    def __call__(self, *args, output_dims=None, vmap_method=None):
        return _call_function(self, self.func, self.sig, args, output_dims, vmap_method)


def _call_function(op, func, sig, args, output_dims, vmap_method):
    jax = _jax()
    if len(args) != sig.num_inputs:
        raise TypeError(f"'{sig.kernel.key}' takes {sig.num_inputs} inputs, got {len(args)}")
    is_arr = [isinstance(t, types.ArrayType) for t in sig.input_types]
    shapes = [tuple(np.shape(a)) if arr else None for a, arr in zip(args, is_arr)]
    dims = sig.launch_dims(shapes, None)
    out_shapes = sig.output_shapes(dims, op.output_dims if output_dims is None else output_dims)
    specs = [_result_spec(s, t.dtype) for s, t in zip(out_shapes, sig.output_types)]
    arr_pos = [k for k, arr in enumerate(is_arr) if arr]

    def host(*arrays):
        params = list(args)
        for k, x in zip(arr_pos, arrays):
            params[k] = _host_array(x, sig.input_types[k].dtype)
        outs = [zeros(s, dtype=t.dtype) for s, t in zip(out_shapes, sig.output_types)]
        func(*params, *outs)
        return tuple(np.array(o.numpy()) for o in outs)

    arrays = [args[k] for k in arr_pos]
    return tuple(jax.pure_callback(host, specs, *arrays, vmap_method=vmap_method or op.vmap_method))
