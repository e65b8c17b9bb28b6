"""MPI access for ``weft.distributed``: the lazily imported ``mpi4py``, communicators, node-local
ranks, MPI datatypes, and the time spent communicating.

Contract: importing this module imports nothing from ``mpi4py``; the first function that needs
MPI imports it (which initialises MPI) and raises an ``ImportError`` saying how to install it
when it is missing. ``import weft`` therefore never needs MPI.
"""

from __future__ import annotations

import contextlib
import os
import time

INSTALL_HINT = 'weft.distributed needs mpi4py and an MPI library: pip install -e ".[mpi]" (or pip install mpi4py mpich)'

# A CUDA-aware MPI reads and writes GPU memory itself; otherwise GPU arrays travel through host
# copies. MPI libraries do not report this reliably, so the user says so (WEFT_MPI_CUDA_AWARE=1).
cuda_aware = os.environ.get("WEFT_MPI_CUDA_AWARE", "0") not in ("", "0")

_timings: dict = {}  # operation name -> [calls, seconds]
_node_comms: dict = {}  # communicator handle -> its node-local (shared-memory) sub-communicator


def mpi():
    """The ``mpi4py.MPI`` module (imported, and MPI initialised, on first use).

    Raises:
        ImportError: mpi4py (or the MPI library it loads) is not installed; the message says how
            to install both.
    """
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError(f"{INSTALL_HINT} ({e})") from e
    return MPI


def resolve_comm(comm):
    """``comm``, or ``MPI.COMM_WORLD`` when None."""
    return mpi().COMM_WORLD if comm is None else comm


def _node_comm(comm):
    comm = resolve_comm(comm)
    key = comm.py2f()
    node = _node_comms.get(key)
    if node is None:
        node = _node_comms[key] = comm.Split_type(mpi().COMM_TYPE_SHARED)
    return node


def local_rank(comm=None) -> int:
    """This process's rank among the ranks of ``comm`` on the same node (machine).

    Use it to give each rank of a node its own GPU: ``wp.set_device(f"cuda:{local_rank()}")``.
    The first call for a communicator is collective (every rank of ``comm`` must make it).

    Args:
        comm: an mpi4py communicator (default ``MPI.COMM_WORLD``).

    Returns:
        0 .. ``local_size(comm) - 1``.
    """
    return _node_comm(comm).Get_rank()


def local_size(comm=None) -> int:
    """How many ranks of ``comm`` run on this node (collective on the first call, as ``local_rank``).

    Args:
        comm: an mpi4py communicator (default ``MPI.COMM_WORLD``).
    """
    return _node_comm(comm).Get_size()


def numeric_datatype(np_dtype):
    """The predefined MPI datatype of a NumPy scalar dtype (reductions need a predefined one).

    Raises:
        TypeError: MPI has no arithmetic type for it (a struct's record dtype...).
    """
    try:
        return mpi().Datatype.fromcode(np_dtype.char)
    except (KeyError, ValueError, TypeError) as e:
        raise TypeError(f"MPI has no arithmetic datatype for elements of NumPy type {np_dtype}: {e}") from None


@contextlib.contextmanager
def timed(name: str):
    """Add the block's wall time to the ``timings()`` entry ``name``."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        entry = _timings.setdefault(name, [0, 0.0])
        entry[0] += 1
        entry[1] += time.perf_counter() - t0


def timings() -> dict:
    """Time spent in communication since the last ``reset_timings()``, per operation.

    Keys are ``"allreduce"``, ``"broadcast"``, ``"halo_exchange"`` and their adjoints
    (``"halo_exchange.backward"``...); values are ``{"calls": n, "seconds": s}``. The time includes
    waiting for the other ranks, so it also measures load imbalance.
    """
    return {name: {"calls": c, "seconds": s} for name, (c, s) in sorted(_timings.items())}


def reset_timings() -> None:
    """Forget the times ``timings()`` reports."""
    _timings.clear()
