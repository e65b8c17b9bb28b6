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
        call = f"{sym}_{mode}{{}}_body(&args, &bounds, t, tc);"
        # 64-bit grid-stride loop: launches may exceed 2^31 threads in total.
        loop = (
            "for (weft::int64 t = weft::int64(blockIdx.x) * blockDim.x + threadIdx.x; t < bounds.size; "
            "t += weft::int64(gridDim.x) * blockDim.x) "
        )
        out = [
            (
                f"{self.entry_qualifier} void {sym}_{self.target}_{mode}(weft::launch_bounds bounds, "
                f"wp_args_{sym} args, weft::launch_context* ctx) {{"
            ),
            "    weft::cuda_set_context(ctx);",
            "    weft::thread_ctx tc;",
        ]
        cond = self.fast_condition(inst, "args.", "bounds") if has_fast else None
        out += self.task_loops(cond, loop, call, "    ")
        out.append("}")
        return out
