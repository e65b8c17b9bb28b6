"""Differentiable collectives over weft arrays: ``allreduce`` and ``broadcast``.

Contract: both work in place on a weft array (every rank of the communicator passes an array of
the same shape and dtype) and return it. Inside a recording ``wp.Tape``, when the array has a
gradient, each records its adjoint with ``tape.record_func``; an adjoint is a collective too, so
every rank records the same collectives in the same order and calls ``tape.backward``. The
adjoints are exact transposes: the gradients seeded on all ranks add up (see ``allreduce``).
"""

from __future__ import annotations

import functools

import numpy as np

from ..array import array as _array
from ..runtime import recording
from . import _buffers, _mpi, _record

_OPS = ("sum", "max", "min")


def _check(a, what: str):
    if not isinstance(a, _array) or a.is_annotation:
        raise TypeError(f"wp.distributed.{what}: expected a wp.array with data, got {type(a).__name__}")


def _mpi_op(MPI, op: str):
    if op not in _OPS:
        raise ValueError(f"wp.distributed.allreduce: op must be one of {', '.join(map(repr, _OPS))}, got {op!r}")
    return {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[op]


def allreduce(array, op: str = "sum", comm=None):
    """Combine ``array`` element by element over all ranks of ``comm``, in place.

    Afterwards every rank holds the sum (``"sum"``), maximum or minimum of all ranks' arrays. With
    one process it leaves the array as it is.

    Gradients: recorded on an active ``wp.Tape`` when ``array`` has a gradient. Backward replaces
    ``array.grad`` (the gradient of the result on this rank) by the gradient of this rank's values
    before the call. For ``"sum"``, ``y_r = sum_q x_q`` on every rank ``r``, so
    ``dL/dx_q = sum_r dL/dy_r``: the adjoint is an allreduce-sum of the gradients. ``L`` is the sum
    of what all ranks seed: a loss made global by ``allreduce`` and seeded with 1 on each of ``P``
    ranks is differentiated as ``P`` times itself. Seed it on one rank
    (``tape.backward(grads={loss: [1.0 if rank == 0 else 0.0]})``), or seed each rank's own part
    of the loss. For ``"max"`` / ``"min"`` an element's gradient goes to the lowest rank that held
    the extreme value.

    Args:
        array: a weft array (CPU arrays reach MPI without a copy; GPU arrays too with a CUDA-aware
            MPI and ``WEFT_MPI_CUDA_AWARE=1``, else through a host copy).
        op: ``"sum"``, ``"max"`` or ``"min"``.
        comm: an mpi4py communicator (default ``MPI.COMM_WORLD``).

    Returns:
        ``array``.

    Raises:
        ImportError: mpi4py is not installed.
        TypeError: ``array`` is not a weft array, or MPI has no arithmetic type for its dtype.
        ValueError: unknown ``op``.
    """
    MPI = _mpi.mpi()
    mpi_op = _mpi_op(MPI, op)
    _check(array, "allreduce")
    comm = _mpi.resolve_comm(comm)
    tape = _record.recording_tape(array)
    _record.mark(array, "wp.distributed.allreduce")
    before = _buffers.host_values(array) if tape is not None and op != "sum" else None
    with _mpi.timed("allreduce"), _buffers.whole(array, write=True) as buf:
        comm.Allreduce(MPI.IN_PLACE, _typed(buf), op=mpi_op)
    if tape is not None:
        after = _buffers.host_values(array) if op != "sum" else None
        tape.record_func(backward=functools.partial(_allreduce_backward, array, comm, before, after), arrays=[array])
    return array


def _typed(buf):
    """``buf`` with its MPI datatype named (a NumPy buffer), so that an unsupported dtype fails
    with a clear message; a device array passes as it is."""
    if isinstance(buf, np.ndarray):
        return [buf, _mpi.numeric_datatype(buf.dtype)]
    return buf


def _allreduce_backward(array, comm, before, after):
    MPI = _mpi.mpi()
    grad = array.grad
    if grad is None:
        return
    with _mpi.timed("allreduce.backward"):
        if before is None:  # sum: dL/dx_q = sum_r dL/dy_r
            with _buffers.whole(grad, write=True) as g:
                comm.Allreduce(MPI.IN_PLACE, _typed(g), op=MPI.SUM)
            return
        total = _buffers.host_values(grad)
        comm.Allreduce(MPI.IN_PLACE, _typed(total), op=MPI.SUM)
        # the lowest rank holding the extreme value of an element owns its gradient
        owner = np.where(before == after, comm.Get_rank(), comm.Get_size()).astype(np.int32)
        comm.Allreduce(MPI.IN_PLACE, [owner, MPI.INT32_T], op=MPI.MIN)
        _buffers.set_values(grad, np.where(owner == comm.Get_rank(), total, 0).astype(total.dtype))


def broadcast(array, root: int = 0, comm=None):
    """Copy ``root``'s array into the array of every rank of ``comm``, in place.

    Gradients: recorded on an active ``wp.Tape`` when ``array`` has a gradient. Every rank's
    result is root's value, so backward sums the gradients of all ranks into root's gradient (a
    reduce to ``root``); on the other ranks the gradient becomes zero, since their values before
    the call were overwritten and affect nothing.

    Args:
        array: a weft array of the same shape and dtype on every rank.
        root: the rank whose values are sent.
        comm: an mpi4py communicator (default ``MPI.COMM_WORLD``).

    Returns:
        ``array``.

    Raises:
        ImportError: mpi4py is not installed.
        TypeError: ``array`` is not a weft array.
        ValueError: ``root`` is not a rank of ``comm``.
    """
    _mpi.mpi()  # ImportError first, when mpi4py is missing
    _check(array, "broadcast")
    comm = _mpi.resolve_comm(comm)
    if not 0 <= root < comm.Get_size():
        raise ValueError(
            f"wp.distributed.broadcast: root {root} is not a rank of a communicator of size {comm.Get_size()}"
        )
    tape = _record.recording_tape(array)
    _record.mark(array, "wp.distributed.broadcast")
    with _mpi.timed("broadcast"), _buffers.whole(array, write=comm.Get_rank() != root) as buf:
        comm.Bcast(_bytes(buf), root=root)
    if tape is not None:
        tape.record_func(backward=functools.partial(_broadcast_backward, array, root, comm), arrays=[array])
    return array


def _bytes(buf):
    """A NumPy buffer as raw bytes (a broadcast moves any dtype: vectors, structs, float16)."""
    if isinstance(buf, np.ndarray):
        return [buf.reshape(-1).view(np.uint8), _mpi.mpi().BYTE]
    return buf


def _broadcast_backward(array, root, comm):
    MPI = _mpi.mpi()
    grad = array.grad
    if grad is None:
        return
    with _mpi.timed("broadcast.backward"):
        if comm.Get_rank() == root:
            with _buffers.whole(grad, write=True) as g:
                comm.Reduce(MPI.IN_PLACE, _typed(g), op=MPI.SUM, root=root)
            return
        with _buffers.whole(grad, write=False) as g:
            comm.Reduce(_typed(g), None, op=MPI.SUM, root=root)
        with recording.paused():
            grad.zero_()
