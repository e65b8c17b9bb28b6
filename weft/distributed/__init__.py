"""``wp.distributed``: differentiable MPI communication for domain-decomposed simulations.

A simulation too large for one process is cut into blocks, one per MPI rank, that exchange their
boundary (halo) layers every step. This package offers, on top of ``mpi4py``:

* ``allreduce`` and ``broadcast`` of weft arrays, in place;
* ``Decomposition``: a 1-, 2- or 3-D block decomposition (each rank's block, ghost layers,
  neighbours, scatter / gather of global NumPy arrays);
* ``halo_exchange``: fill a block's ghost layers from its neighbours, in place;
* ``local_rank`` / ``local_size`` (one GPU per rank of a node) and ``timings`` (time spent
  communicating).

Each operation is recorded on an active ``wp.Tape`` with its adjoint, so ``tape.backward()``
differentiates through the communication (a backward pass is collective: every rank runs it).
Everything works with one process (``comm`` of size 1, no ``mpiexec``). ``mpi4py`` is imported on
first use, never by ``import weft``; install it with ``pip install -e ".[mpi]"``.
"""

from ._mpi import local_rank, local_size, reset_timings, timings
from .collectives import allreduce, broadcast
from .decomposition import Decomposition
from .halo import halo_exchange

__all__ = [
    "Decomposition",
    "allreduce",
    "broadcast",
    "halo_exchange",
    "local_rank",
    "local_size",
    "reset_timings",
    "timings",
]
