"""Shared helpers of the optimizers: flat scalar views of parameter arrays."""

from __future__ import annotations

from .. import types as _types
from ..array import array as _array, zeros as _zeros


def scalar_info(a):
    """(scalar type, components per element) of an array's dtype."""
    dt = a.dtype
    scalar = getattr(dt, "_scalar", None)
    if scalar is not None:
        return scalar, int(dt._length_)
    return dt, 1


def flat_view(a, what="parameter"):
    """A 1-d array of scalars sharing the memory of the contiguous array ``a``."""
    if a is None:
        return None
    if not a.is_contiguous:
        raise ValueError(f"optimizer {what} arrays must be contiguous (shape {a.shape})")
    scalar, length = scalar_info(a)
    if not _types.is_float(scalar):
        raise TypeError(f"optimizer {what} arrays need a floating-point dtype, got {a.dtype}")
    v = _array(ptr=a.ptr, dtype=scalar, shape=(a.size * length,), device=a.device)
    v._weft_owner = a  # keep the memory alive as long as the view
    return v


def flat_grads(grad, params):
    if len(grad) != len(params):
        raise ValueError(f"step() got {len(grad)} gradients for {len(params)} parameter arrays")
    out = []
    for g, p in zip(grad, params):
        if g is None:
            out.append(None)
            continue
        if g.size != p.size or scalar_info(g) != scalar_info(p):
            raise ValueError(
                f"gradient of dtype {g.dtype} and shape {g.shape} does not match parameter of "
                f"dtype {p.dtype} and shape {p.shape}"
            )
        out.append(flat_view(g, "gradient"))
    return out


def zeros_for(p):
    """A zero state buffer with the flat scalar layout of parameter ``p``."""
    scalar, length = scalar_info(p)
    return _zeros(p.size * length, dtype=scalar, device=p.device)


def state_for(p, old):
    """``old`` when it already is a state buffer with the layout ``zeros_for(p)`` makes (its
    contents kept), else a new zeroed one."""
    scalar, length = scalar_info(p)
    if old is not None and old.dtype is scalar and old.shape == (p.size * length,) and old.device == p.device:
        return old
    return zeros_for(p)
