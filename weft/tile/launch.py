"""``wp.launch_tiled``: launch a kernel over a grid of thread blocks."""

from __future__ import annotations

import inspect

from ..runtime import device as _device
from ..runtime import launch as _launch
from ..runtime.launch import launch


def launch_tiled(*args, **kwargs):
    """Launch ``kernel`` over a grid of blocks: ``wp.launch_tiled(kernel, dim=(M, N), inputs=...,
    block_dim=64)``. Takes ``wp.launch``'s arguments, ``block_dim`` as a keyword; in the kernel,
    ``wp.tid()`` gives the block's index along each of ``dim``'s dimensions (one more trailing
    index, the thread within the block, is there for ``i, j, lane = wp.tid()``).

    On the CPU each block runs on one thread, as in Warp: the launch grid is ``dim`` with a
    trailing dimension of 1, and tile operations work on whole tiles at once. On a GPU a block
    has ``block_dim`` threads sharing its tiles (the grid is ``dim`` with a trailing
    ``block_dim``), unless the kernel reads values that differ between them (``wp.tile(x)``,
    ``wp.untile``, ``wp.block_dim()``, the thread index from ``wp.tid()``): then each block is one
    thread there too. Returns what ``wp.launch`` returns (a ``wp.Launch`` with ``record_cmd=True``).
    """
    if "block_dim" not in kwargs:
        raise RuntimeError("wp.launch_tiled() needs the block dimension as a keyword argument: block_dim=...")
    args = list(args)
    dim = kwargs.pop("dim") if "dim" in kwargs else args.pop(1) if len(args) > 1 else None
    if dim is None:
        raise TypeError("wp.launch_tiled() needs the launch dimensions (dim=...)")
    try:
        dim = [int(dim)]
    except TypeError:
        dim = [int(d) for d in dim]
    if len(dim) > 3:
        raise RuntimeError("wp.launch_tiled() takes up to 3 grid dimensions (the 4th is the thread within the block)")
    kernel = args.pop(0) if args else kwargs.pop("kernel")
    lanes = _gpu_lanes(kernel, dim, args, kwargs)
    kwargs["block_dim"] = lanes
    return launch(kernel, [*dim, lanes], *args, **kwargs)


def _gpu_lanes(kernel, dim, args, kwargs) -> int:
    """The threads per block of the launch: ``block_dim`` on a GPU when the kernel's tiles can be
    spread over them (``cuda.tile_lanes``, for the forward and the backward pass), else 1."""
    block_dim = int(kwargs["block_dim"])
    bound = inspect.signature(launch).bind(kernel, dim, *args, **kwargs).arguments
    target = bound.get("device")
    if block_dim <= 1 or (target in (None, "cpu") and _device._current.ordinal < 0):
        return 1
    target = _device.get_device(target)
    if target.ordinal < 0 or getattr(kernel, "_weft_kind", None) != "kernel":
        return 1
    from ..runtime import cuda

    inst = _launch._instance_for(kernel, [*bound.get("inputs", ()), *bound.get("outputs", ())])
    bounds = _launch.make_bounds([*dim, block_dim])
    spread = all(cuda.tile_lanes(inst, bounds, block_dim, adjoint) == block_dim for adjoint in (False, True))
    return block_dim if spread else 1
