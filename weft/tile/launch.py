"""``wp.launch_tiled``: launch a kernel over a grid of thread blocks."""

from __future__ import annotations

from ..runtime.launch import launch


def launch_tiled(*args, **kwargs):
    """Launch ``kernel`` over a grid of blocks: ``wp.launch_tiled(kernel, dim=(M, N), inputs=...,
    block_dim=64)``. Takes ``wp.launch``'s arguments, ``block_dim`` as a keyword; in the kernel,
    ``wp.tid()`` gives the block's index along each of ``dim``'s dimensions (one more trailing
    index, the thread within the block, is there for ``i, j, lane = wp.tid()``).

    weft runs each block on one thread, as Warp does on the CPU: the launch grid is ``dim`` with a
    trailing dimension of 1, and tile operations work on whole tiles at once. Returns what
    ``wp.launch`` returns (a ``wp.Launch`` with ``record_cmd=True``).
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
    kwargs["block_dim"] = 1
    return launch(args[0] if args else kwargs.pop("kernel"), [*dim, 1], *args[1:], **kwargs)
