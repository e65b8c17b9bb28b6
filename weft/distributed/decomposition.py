"""Block decompositions of a 1-, 2- or 3-D global grid over the ranks of a communicator.

Contract: a ``Decomposition`` is plain arithmetic on the global shape and the process grid (no
communication, except in ``scatter`` and ``gather``): each rank owns a block of the global array,
stored locally with ``halo`` ghost layers on both sides of every axis. Ranks are laid out on the
process grid in C order (as ``MPI.Comm.Create_cart`` does without reordering); neighbours are not
periodic (``MPI.PROC_NULL`` past the edges). Blocks along an axis differ in size by at most one.
"""

from __future__ import annotations

import math

import numpy as np

from . import _mpi
from .halo import halo_exchange


def _split(n: int, parts: int, index: int) -> tuple:
    """``(offset, size)`` of block ``index`` when ``n`` layers are cut into ``parts`` blocks."""
    base, extra = divmod(n, parts)
    return index * base + min(index, extra), base + (1 if index < extra else 0)


class Decomposition:
    """This rank's block of a global grid split over a process grid.

    Attributes:
        comm: the communicator.
        rank, size: this rank and the number of ranks.
        global_shape: the shape of the whole grid.
        process_grid: ranks along each axis (their product is ``size``).
        coords: this rank's position on the process grid.
        halo: ghost layers on each side of each axis.
        offset: global index of this rank's first interior element.
        interior_shape: the shape of the block this rank owns.
        local_shape: ``interior_shape`` plus the ghost layers: the shape of the local arrays.
        neighbors: ``((low, high), ...)`` per axis, the neighbour ranks (``MPI.PROC_NULL`` at an edge).
        interior: the index (a tuple of slices) of the owned block within a local array.
    """

    def __init__(self, global_shape, process_grid=None, halo: int = 1, comm=None):
        """Split ``global_shape`` over the ranks of ``comm``.

        Args:
            global_shape: 1 to 3 sizes.
            process_grid: ranks along each axis; None chooses a balanced grid with
                ``MPI.Compute_dims``.
            halo: ghost layers on each side (>= 0).
            comm: an mpi4py communicator (default ``MPI.COMM_WORLD``).

        Raises:
            ImportError: mpi4py is not installed.
            ValueError: the dimensions, the grid or the halo do not fit (a block must have at least
                ``halo`` interior layers, and at least one, along every axis).
        """
        MPI = _mpi.mpi()
        self.comm = _mpi.resolve_comm(comm)
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.global_shape = tuple(int(n) for n in global_shape)
        ndim = len(self.global_shape)
        if not 1 <= ndim <= 3 or min(self.global_shape) < 1:
            raise ValueError(f"Decomposition: global_shape must have 1 to 3 positive sizes, got {global_shape}")
        grid = MPI.Compute_dims(self.size, ndim) if process_grid is None else list(process_grid)
        self.process_grid = tuple(int(p) for p in grid)
        if len(self.process_grid) != ndim or math.prod(self.process_grid) != self.size or min(self.process_grid) < 1:
            raise ValueError(
                f"Decomposition: process_grid {tuple(grid)} must have {ndim} positive entries whose product is the "
                f"{self.size} ranks of the communicator"
            )
        self.halo = int(halo)
        if self.halo < 0:
            raise ValueError(f"Decomposition: halo must be >= 0, got {halo}")
        for axis, (n, p) in enumerate(zip(self.global_shape, self.process_grid)):
            smallest = n // p
            if smallest < max(1, self.halo):
                raise ValueError(
                    f"Decomposition: axis {axis} of size {n} split over {p} ranks leaves blocks of {smallest} layers, "
                    f"fewer than {max(1, self.halo)} (the halo width, and at least one)"
                )
        self.coords = tuple(int(c) for c in np.unravel_index(self.rank, self.process_grid))
        self.offset, self.interior_shape = self.block(self.rank)
        self.local_shape = tuple(n + 2 * self.halo for n in self.interior_shape)
        self.interior = tuple(slice(self.halo, self.halo + n) for n in self.interior_shape)
        self.neighbors = tuple(
            (self._rank_at(axis, -1, MPI.PROC_NULL), self._rank_at(axis, 1, MPI.PROC_NULL)) for axis in range(ndim)
        )

    def _rank_at(self, axis: int, step: int, none: int) -> int:
        coords = list(self.coords)
        coords[axis] += step
        if not 0 <= coords[axis] < self.process_grid[axis]:
            return none
        return int(np.ravel_multi_index(coords, self.process_grid))

    def block(self, rank: int) -> tuple:
        """``(offset, interior_shape)`` of the block ``rank`` owns."""
        coords = np.unravel_index(rank, self.process_grid)
        parts = [_split(n, p, int(c)) for n, p, c in zip(self.global_shape, self.process_grid, coords)]
        return tuple(o for o, _ in parts), tuple(s for _, s in parts)

    def global_slices(self, rank=None) -> tuple:
        """The index (a tuple of slices) of a rank's block in the global array (default: this rank's)."""
        offset, shape = self.block(self.rank if rank is None else rank)
        return tuple(slice(o, o + n) for o, n in zip(offset, shape))

    def exchange(self, array):
        """``halo_exchange(array, self.halo, self.neighbors, self.comm)``: fill the ghost layers of a
        local array (shape ``local_shape``) from the neighbours, recorded on an active tape."""
        return halo_exchange(array, self.halo, self.neighbors, self.comm)

    def scatter(self, global_array=None, root: int = 0) -> np.ndarray:
        """Hand every rank its block of a global NumPy array held by ``root``.

        Args:
            global_array: the whole grid on ``root`` (shape ``global_shape``, plus trailing
                dimensions for vector elements); ignored on the other ranks.
            root: the rank holding it.

        Returns:
            A NumPy array of shape ``local_shape`` (plus the trailing dimensions) with this rank's
            block in its interior and zeros in its ghost layers.

        Raises:
            ValueError: ``global_array``'s leading dimensions are not ``global_shape`` (on root).
        """
        layout = None
        if self.rank == root:
            global_array = np.ascontiguousarray(global_array)
            if global_array.shape[: len(self.global_shape)] != self.global_shape:
                raise ValueError(f"Decomposition.scatter: expected shape {self.global_shape}, got {global_array.shape}")
            layout = (global_array.dtype.str, global_array.shape[len(self.global_shape) :])
        dtype, trailing = self.comm.bcast(layout, root=root)
        local = np.zeros(self.local_shape + tuple(trailing), dtype=np.dtype(dtype))
        if self.rank == root:
            for r in range(self.size):
                block = np.ascontiguousarray(global_array[self.global_slices(r)])
                if r == root:
                    local[self.interior] = block
                else:
                    self.comm.Send(_raw(block), dest=r, tag=7300)
        else:
            block = np.empty(self.interior_shape + tuple(trailing), dtype=local.dtype)
            self.comm.Recv(_raw(block), source=root, tag=7300)
            local[self.interior] = block
        return local

    def gather(self, local, root: int = 0):
        """Collect the interiors of every rank's local array into the global array on ``root``.

        Args:
            local: a weft array or NumPy array of shape ``local_shape`` (plus trailing dimensions).
            root: the rank that receives the global array.

        Returns:
            The global NumPy array on ``root``, None on the other ranks.
        """
        values = local.numpy() if hasattr(local, "numpy") and not isinstance(local, np.ndarray) else np.asarray(local)
        block = np.ascontiguousarray(values[self.interior])
        if self.rank != root:
            self.comm.Send(_raw(block), dest=root, tag=7301)
            return None
        out = np.empty(self.global_shape + block.shape[len(self.global_shape) :], dtype=block.dtype)
        for r in range(self.size):
            if r == root:
                out[self.global_slices(r)] = block
                continue
            part = np.empty(self.block(r)[1] + block.shape[len(self.global_shape) :], dtype=block.dtype)
            self.comm.Recv(_raw(part), source=r, tag=7301)
            out[self.global_slices(r)] = part
        return out

    def __repr__(self):
        return (
            f"Decomposition(global_shape={self.global_shape}, process_grid={self.process_grid}, halo={self.halo}, "
            f"rank={self.rank}, coords={self.coords}, offset={self.offset}, interior_shape={self.interior_shape})"
        )


def _raw(a: np.ndarray):
    """A contiguous NumPy array as an MPI byte buffer (any dtype)."""
    return [a.reshape(-1).view(np.uint8), _mpi.mpi().BYTE]
