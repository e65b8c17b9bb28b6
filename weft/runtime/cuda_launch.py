"""``wp.launch`` on a CUDA device: the same argument handling as on the CPU, a GPU launch at the end.

Contract: called by ``launch.launch`` (only when the target device is a GPU, so CPU programs never
import it) with the arguments already counted. It resolves the kernel instance and the grid like
the CPU path, packs the argument struct with ``Launcher.pack(..., device=)`` (every array must live on
the device; array descriptors carry device pointers), records the launch on the active tape with
the resolved device, and queues the kernel with ``cuda.launch_kernel``. ``record_cmd=True``
returns a ``wp.Launch`` bound to the device, exactly as on the CPU.
"""

from __future__ import annotations

from . import cuda, recording
from . import launch as _launch


def launch(
    kernel,
    dim,
    params,
    inputs,
    outputs,
    adj_params,
    device,
    stream,
    adjoint,
    record_tape,
    record_cmd,
    max_blocks,
    block_dim,
):
    """Launch ``kernel`` on the CUDA ``device`` (see ``wp.launch``)."""
    inst = _launch._instance_for(kernel, params)
    bounds = _launch.make_bounds(dim)
    launcher = device_launcher(inst)
    if launcher.tid_ndim > 1:
        _launch.check_grid(inst, bounds, dim)
    if stream is not None and stream.device is not device:
        raise RuntimeError(f"wp.launch on {device} was given a stream of {stream.device}")
    if record_cmd:
        from .launch_object import Launch

        cmd = Launch._recorded(kernel, inst, device, bounds, params, adj_params, adjoint)
        cmd.max_blocks = max_blocks
        cmd.block_dim = block_dim
        return cmd
    args_struct = launcher.pack(params, adj_params, device)
    if not adjoint and record_tape:
        tape = recording.active_tape()
        if tape is not None:
            tape.record_launch(kernel, inst, dim, list(inputs), list(outputs), device, block_dim)
    cuda.launch_kernel(inst, device, bounds, args_struct, adjoint, stream, block_dim, max_blocks)


def device_launcher(inst):
    """The instance's argument packer, without building its CPU library."""
    if inst.binding.launcher is None:
        inst.binding.launcher = _launch.Launcher(inst)
    return inst.binding.launcher
