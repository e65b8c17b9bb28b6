"""Calling one kernel as a function ``outputs = f(*inputs)``: the rules shared by ``torch_kernel``
and ``jax_kernel`` (as in Warp's ``jax_kernel``).

Contract: the kernel's last ``num_outputs`` parameters are its outputs and must be arrays with a
concrete dtype; the others are inputs. The launch grid is ``launch_dims`` or the (weft) shape of
the first array input; each output's shape is ``output_dims`` (one shape for all, or a dict by
parameter name), else the launch grid. Shapes count array elements: a vec3 array of ``n`` is
``(n,)`` here and ``(n, 3)`` in torch / JAX (both forms are accepted for ``output_dims``).
"""

from __future__ import annotations

import typing

from .. import types


def _as_shape(dims) -> tuple:
    return (int(dims),) if isinstance(dims, int) or hasattr(dims, "__index__") else tuple(int(d) for d in dims)


def trailing(dtype) -> tuple:
    """The component shape of ``dtype`` (``()`` for scalars)."""
    return tuple(getattr(dtype, "_shape", ()))


class KernelSignature:
    """Inputs and outputs of ``kernel`` called as a function with ``num_outputs`` results."""

    def __init__(self, kernel, num_outputs: int = 1):
        if getattr(kernel, "_weft_kind", None) != "kernel":
            raise TypeError(f"expected a @wp.kernel, got {kernel!r}")
        n = len(kernel.arg_names)
        if not 1 <= num_outputs <= n:
            raise ValueError(f"kernel '{kernel.key}' has {n} parameters, so num_outputs must be in 1..{n}")
        self.kernel = kernel
        self.names = list(kernel.arg_names)
        self.types = list(kernel.arg_types)
        self.num_inputs = n - num_outputs
        for name, t in zip(self.names[self.num_inputs :], self.types[self.num_inputs :]):
            if not isinstance(t, types.ArrayType) or t.dtype is typing.Any:
                raise TypeError(
                    f"kernel '{kernel.key}': output parameter '{name}' must be an array with a concrete dtype, got {t!r}"
                )

    @property
    def input_types(self) -> list:
        return self.types[: self.num_inputs]

    @property
    def output_types(self) -> list:
        return self.types[self.num_inputs :]

    @property
    def output_names(self) -> list:
        return self.names[self.num_inputs :]

    def launch_dims(self, input_shapes, launch_dims=None) -> tuple:
        """The launch grid: ``launch_dims``, else the weft shape of the first array input.

        Args:
            input_shapes: For each input, its foreign shape (components trailing) or None (scalar).
        """
        if launch_dims is not None:
            return _as_shape(launch_dims)
        for t, shape in zip(self.input_types, input_shapes):
            if isinstance(t, types.ArrayType) and shape is not None:
                comp = trailing(t.dtype)
                return tuple(shape[: len(shape) - len(comp)]) if comp else tuple(shape)
        raise ValueError(f"kernel '{self.kernel.key}' has no array input: pass launch_dims= to set the grid")

    def output_shapes(self, dims: tuple, output_dims=None) -> list:
        """The weft shape of each output: from ``output_dims`` (shape or ``{name: shape}``) or ``dims``."""
        shapes = []
        for name, t in zip(self.output_names, self.output_types):
            spec = output_dims.get(name) if isinstance(output_dims, dict) else output_dims
            shape = dims if spec is None else _as_shape(spec)
            comp = trailing(t.dtype)
            if comp and len(shape) > len(comp) and shape[len(shape) - len(comp) :] == comp:
                shape = shape[: len(shape) - len(comp)]  # given in the foreign convention
            if len(shape) != t.ndim:
                raise ValueError(
                    f"kernel '{self.kernel.key}': output '{name}' is a {t.ndim}-d array but its shape would be {shape}; "
                    "pass output_dims= (one shape, or a dict by output name)"
                )
            shapes.append(shape)
        return shapes
