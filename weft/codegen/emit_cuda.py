"""Renderer, CUDA flavour: a sibling of ``CPURenderer`` over the same ``CStyleRenderer`` (the same
IR and the same body rendering); it adds the qualifiers and the entry points, and stages nothing.

Contract: ``CUDARenderer().render_module(kernels, funcs)`` returns one CUDA C++ translation unit
holding, for every kernel instance ``sym``,

    extern "C" __global__ void {sym}_cuda_forward(weft::launch_bounds bounds, wp_args_{sym} args,
                                                  weft::launch_context* ctx)

and ``{sym}_cuda_backward`` with the same parameters when the instance has a backward pass.
Each is a grid-stride loop over ``bounds.size`` calling the per-thread body (the unchecked
``_fast`` body under the same shape condition as the CPU entry). ``ctx`` is a device pointer
(may be null) where the first kernel error is recorded (native/core.h ``raise_kernel_error``).
``renderer.locs`` lists the source locations referenced by error ids, as for the CPU.
"""

from __future__ import annotations

from . import templates
from .emit import CStyleRenderer


class CUDARenderer(CStyleRenderer):
    """Renders a module for NVRTC."""

    target = "cuda"
    fn_qualifier = "static __device__ inline"
    body_qualifier = "static __device__ inline"
    entry_qualifier = 'extern "C" __global__'

    def entry_points(self, inst) -> list:
        """Names of the instance's ``__global__`` functions, forward first."""
        modes = ("forward", "backward") if inst.backward_enabled else ("forward",)
        return [f"{inst.symbol}_{self.target}_{mode}" for mode in modes]

    def kernel_entry(self, inst, mode, has_fast, plan=None) -> list:
        sym = inst.symbol
        call = templates.CUDA_BODY_CALL.format(sym=sym, mode=mode)
        cond = self.fast_condition(inst, "args.", "bounds") if has_fast else None
        loops = self.task_loops(cond, templates.CUDA_TASK_LOOP, call, "    ")
        qualifier = self.entry_qualifier
        bounds = inst.kernel.options.get("launch_bounds")
        if bounds:  # @wp.kernel(launch_bounds=...): the most threads per block (and fewest blocks per SM)
            qualifier += f" __launch_bounds__({', '.join(str(b) for b in bounds)})"
        registers = inst.kernel.options.get("cuda_max_registers")
        if registers:  # @wp.kernel(cuda_max_registers=...): a register budget per thread
            qualifier += f" __maxnreg__({registers})"
        cluster = inst.kernel.options.get("cluster_dim")
        if cluster:  # @wp.kernel(cluster_dim=...): blocks scheduled in clusters (sm_90+)
            qualifier += f" WEFT_CLUSTER_DIMS({cluster})"
        entry = templates.CUDA_ENTRY.format(
            qualifier=qualifier, sym=sym, target=self.target, mode=mode, body="\n".join(loops)
        )
        return entry.split("\n")
