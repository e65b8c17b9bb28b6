"""The differentiable halo exchange of a block-decomposed array.

Contract: ``halo_exchange(array, halo, neighbors, comm)`` overwrites the ghost layers of a local
block (the outer ``halo`` layers on each side of each axis) with the neighbouring ranks' edge
layers of their interiors, in place; a side whose neighbour is ``MPI.PROC_NULL`` keeps its ghost
values (a boundary condition). Axes are exchanged one after the other, each face spanning the
whole block along the other axes (ghosts included), so edge and corner ghosts receive the
diagonal neighbours' values too (9- and 27-point stencils work).

The adjoint, recorded on an active ``wp.Tape``, runs the axes in reverse order. Each ghost value
was a copy of an owner's interior value, so each ghost layer's gradient is sent back to its owner,
which adds it into the gradient of the layer it sent, and the ghost gradient is set to zero
(where a neighbour overwrote it; boundary ghosts keep theirs).
"""

from __future__ import annotations

import functools

from ..array import array as _array
from . import _buffers, _mpi, _record

_TAG = 7100  # + 4 * axis + direction: distinct tags keep the two sides apart when both are one rank


def _normalise(array, halo, neighbors, comm):
    """Check the arguments; return ``(halo per axis, neighbours per axis, comm)``."""
    if not isinstance(array, _array) or array.is_annotation:
        raise TypeError(f"wp.distributed.halo_exchange: expected a wp.array with data, got {type(array).__name__}")
    neighbors = tuple(tuple(int(r) for r in pair) for pair in neighbors)
    if len(neighbors) != array.ndim or any(len(pair) != 2 for pair in neighbors):
        raise ValueError(
            f"wp.distributed.halo_exchange: neighbors must give a (low, high) rank pair for each of the array's "
            f"{array.ndim} axes, got {neighbors}"
        )
    halos = (int(halo),) * array.ndim if isinstance(halo, int) else tuple(int(h) for h in halo)
    if len(halos) != array.ndim or any(h < 0 for h in halos):
        raise ValueError(f"wp.distributed.halo_exchange: halo must be a width >= 0 or one per axis, got {halo}")
    for axis, (n, h) in enumerate(zip(array.shape, halos)):
        if n < 3 * h:
            raise ValueError(
                f"wp.distributed.halo_exchange: axis {axis} has {n} layers, fewer than an interior of {h} between two "
                f"ghost layers of {h}: the ghosts would need values from beyond the nearest neighbour"
            )
    return halos, neighbors, _mpi.resolve_comm(comm)


def _faces(shape, axis: int, h: int) -> dict:
    """The regions of one axis: the interior layers sent to the low / high neighbour and the ghost
    layers received from them, each spanning the whole block along the other axes."""
    n = shape[axis]

    def layers(start, stop):
        return tuple((start, stop) if a == axis else (0, shape[a]) for a in range(len(shape)))

    return {
        "send_low": layers(h, 2 * h),
        "send_high": layers(n - 2 * h, n - h),
        "ghost_low": layers(0, h),
        "ghost_high": layers(n - h, n),
    }


def halo_exchange(array, halo, neighbors, comm=None):
    """Fill the ghost layers of ``array`` from the neighbouring ranks, in place.

    ``array`` is this rank's block with ``halo`` ghost layers on both sides of every axis (as
    ``Decomposition.local_shape`` gives it). Its ghost layers on the low side of axis ``d`` receive
    the last ``halo`` interior layers of rank ``neighbors[d][0]``, those on the high side the first
    interior layers of ``neighbors[d][1]``; ``MPI.PROC_NULL`` leaves a side as it is. Periodic
    neighbours (a rank its own neighbour included) work too. Every rank of ``comm`` calls it.

    Gradients: recorded on an active ``wp.Tape`` when ``array`` has a gradient. Backward sends the
    gradient of each received ghost layer back to its owner, which adds it into the gradient of
    the interior layer it sent; the ghost gradients are then zero.

    Args:
        array: a 1-, 2- or 3-D (or 4-D) weft array; any dtype. C-contiguous CPU arrays are sent and
            received in place (MPI subarray datatypes); strided and GPU arrays move packed copies
            of their faces through host memory.
        halo: the ghost width, one for all axes or one per axis.
        neighbors: ``((low, high), ...)``, the neighbour ranks along each axis
            (``Decomposition.neighbors``).
        comm: an mpi4py communicator (default ``MPI.COMM_WORLD``).

    Returns:
        ``array``.

    Raises:
        ImportError: mpi4py is not installed.
        TypeError: ``array`` is not a weft array.
        ValueError: ``halo`` or ``neighbors`` do not fit the array's dimensions.
    """
    MPI = _mpi.mpi()
    halos, neighbors, comm = _normalise(array, halo, neighbors, comm)
    tape = _record.recording_tape(array)
    _record.mark(array, "wp.distributed.halo_exchange")
    with _mpi.timed("halo_exchange"):
        field = _buffers.field(array)
        for axis in range(array.ndim):
            if halos[axis]:
                _exchange_axis(MPI, comm, field, array.shape, axis, halos[axis], neighbors[axis])
    if tape is not None:
        backward = functools.partial(_halo_backward, array, halos, neighbors, comm)
        tape.record_func(backward=backward, arrays=[array])
    return array


def _exchange_axis(MPI, comm, field, shape, axis, h, pair):
    """Forward, one axis: my low interior layers to the low neighbour's high ghosts, and back."""
    low, high = pair
    faces = _faces(shape, axis, h)
    recv_high, finish_high = field.recv(faces["ghost_high"])
    recv_low, finish_low = field.recv(faces["ghost_low"])
    tag_down, tag_up = _TAG + 4 * axis, _TAG + 4 * axis + 1
    _swap(
        MPI,
        comm,
        recvs=[(recv_high, high, tag_down), (recv_low, low, tag_up)],
        sends=[(field.send(faces["send_low"]), low, tag_down), (field.send(faces["send_high"]), high, tag_up)],
    )
    if high != MPI.PROC_NULL:
        finish_high()
    if low != MPI.PROC_NULL:
        finish_low()


def _swap(MPI, comm, recvs, sends):
    """Post every receive ``(buffer, source, tag)`` and send ``(buffer, dest, tag)`` of one axis
    at once, then wait for all of them (a neighbour MPI.PROC_NULL makes its transfer a no-op)."""
    requests = [comm.Irecv(buf, source=src, tag=tag) for buf, src, tag in recvs]
    requests += [comm.Isend(buf, dest=dst, tag=tag) for buf, dst, tag in sends]
    MPI.Request.Waitall(requests)


def _halo_backward(array, halos, neighbors, comm):
    MPI = _mpi.mpi()
    if array.grad is None:
        return
    with _mpi.timed("halo_exchange.backward"):
        field = _buffers.field(array.grad)
        for axis in reversed(range(array.ndim)):
            if halos[axis]:
                _adjoint_axis(MPI, comm, field, array.shape, axis, halos[axis], neighbors[axis])


def _adjoint_axis(MPI, comm, field, shape, axis, h, pair):
    """Backward, one axis: ghost gradients go back to their owners, which add them into the
    gradients of the layers they sent; then the ghost gradients are zeroed."""
    low, high = pair
    faces = _faces(shape, axis, h)
    from_low = field.packed_like(faces["send_low"])  # gradients of the low neighbour's high ghosts
    from_high = field.packed_like(faces["send_high"])
    tag_down, tag_up = _TAG + 4 * axis + 2, _TAG + 4 * axis + 3
    _swap(
        MPI,
        comm,
        recvs=[(from_low, low, tag_up), (from_high, high, tag_down)],
        sends=[(field.send(faces["ghost_high"]), high, tag_up), (field.send(faces["ghost_low"]), low, tag_down)],
    )
    if low != MPI.PROC_NULL:
        field.add(faces["send_low"], from_low)
        field.zero(faces["ghost_low"])
    if high != MPI.PROC_NULL:
        field.add(faces["send_high"], from_high)
        field.zero(faces["ghost_high"])
