"""The one-thread kernels ``host_calls`` runs builtins in, one per arity: their source must live
in a file (kernels are compiled from their Python source)."""

from ..array import array
from ..kernel import kernel

MODULE = "weft_host_calls"


def make(fn, types, rtype):
    """A kernel computing ``out[0] = fn(a0, ..., a<n-1>)`` for arguments of ``types`` (at most
    six); None for more."""
    factory = _factories.get(len(types))
    return factory(fn, *types, rtype) if factory is not None else None


def _arity0(fn, R):
    @kernel(module=MODULE, enable_backward=False)
    def host_call(out: array(dtype=R)):
        out[0] = fn()

    return host_call


def _arity1(fn, T0, R):
    @kernel(module=MODULE, enable_backward=False)
    def host_call(a0: T0, out: array(dtype=R)):
        out[0] = fn(a0)

    return host_call


def _arity2(fn, T0, T1, R):
    @kernel(module=MODULE, enable_backward=False)
    def host_call(a0: T0, a1: T1, out: array(dtype=R)):
        out[0] = fn(a0, a1)

    return host_call


def _arity3(fn, T0, T1, T2, R):
    @kernel(module=MODULE, enable_backward=False)
    def host_call(a0: T0, a1: T1, a2: T2, out: array(dtype=R)):
        out[0] = fn(a0, a1, a2)

    return host_call


def _arity4(fn, T0, T1, T2, T3, R):
    @kernel(module=MODULE, enable_backward=False)
    def host_call(a0: T0, a1: T1, a2: T2, a3: T3, out: array(dtype=R)):
        out[0] = fn(a0, a1, a2, a3)

    return host_call


def _arity5(fn, T0, T1, T2, T3, T4, R):
    @kernel(module=MODULE, enable_backward=False)
    def host_call(a0: T0, a1: T1, a2: T2, a3: T3, a4: T4, out: array(dtype=R)):
        out[0] = fn(a0, a1, a2, a3, a4)

    return host_call


def _arity6(fn, T0, T1, T2, T3, T4, T5, R):
    @kernel(module=MODULE, enable_backward=False)
    def host_call(a0: T0, a1: T1, a2: T2, a3: T3, a4: T4, a5: T5, out: array(dtype=R)):
        out[0] = fn(a0, a1, a2, a3, a4, a5)

    return host_call


_factories = {0: _arity0, 1: _arity1, 2: _arity2, 3: _arity3, 4: _arity4, 5: _arity5, 6: _arity6}


def make_multi(fn, types, rtypes):
    """A kernel storing the results of a one-argument builtin with two or three outputs
    (``wp.svd3``, ``wp.quat_to_axis_angle``...) in one array each; None for other shapes."""
    if len(types) != 1 or len(rtypes) not in (2, 3):
        return None
    return (_two if len(rtypes) == 2 else _three)(fn, types[0], *rtypes)


def _two(fn, T0, R0, R1):
    @kernel(module=MODULE, enable_backward=False)
    def host_call_2(a0: T0, out0: array(dtype=R0), out1: array(dtype=R1)):
        r = fn(a0)
        out0[0] = r[0]
        out1[0] = r[1]

    return host_call_2


def _three(fn, T0, R0, R1, R2):
    @kernel(module=MODULE, enable_backward=False)
    def host_call_3(a0: T0, out0: array(dtype=R0), out1: array(dtype=R1), out2: array(dtype=R2)):
        r = fn(a0)
        out0[0] = r[0]
        out1[0] = r[1]
        out2[0] = r[2]

    return host_call_3
