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

from .. import types as wt
from . import intrinsics as intr
from . import ir, templates
from . import tile_cuda
from .cnames import ctype_name
from .emit import CStyleRenderer, reverse_formats


class CUDARenderer(CStyleRenderer):
    """Renders a module for NVRTC."""

    target = "cuda"
    fn_qualifier = "static __device__ inline"
    body_qualifier = "static __device__ inline"
    entry_qualifier = 'extern "C" __global__'

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tile_memory = tile_cuda.SharedMemory()  # what the module's tile operations need

    # ------------------------------------------------------------------ tiles (tile_cuda.py)
    def call_expr(self, b, s, replay: bool) -> str:
        c = s.callee
        if not isinstance(c, tile_cuda.TileOverload) or not tile_cuda.block_wide(s):
            if ir.is_builtin(c) and c.symbol == "tile_query_next":  # tile_cuda.h runs it on the first thread
                self.tile_memory.serial([], [], s.result.type)
            return super().call_expr(b, s, replay)
        args = [self.v(x) for x in s.args]
        types = [x.type for x in s.args]
        if tile_cuda.is_local(c.symbol):
            self.tile_memory.local(c.symbol, types, adjoint=False)
            return f"weft::{c.symbol}({', '.join(args)})"
        self.tile_memory.serial(types, [], s.result.type if s.result is not None else None)
        return tile_cuda.serial(f"weft::{c.symbol}", args)

    def intrinsic_expr(self, b, s, args) -> str:
        if s.callee is intr.TID and s.attr[1] == 1:  # a spread tile launch's task is (block, thread)
            return "weft::int32(task / weft::tile_lanes)"
        text = super().intrinsic_expr(b, s, args)
        if s.callee is not intr.TILE_REDUCE:
            return text
        # weft::tile_reduce[_axis<R, axis>](f, t), run by the first thread on the whole tile
        head, _, rest = text.partition("(")
        f = rest[: -len(args[0]) - 3]  # "f, t)" less ", t)"
        self.tile_memory.serial([x.type for x in s.args], [], s.result.type)
        return tile_cuda.serial(head, [args[0]], bound=f)

    def reverse_call(self, b, s) -> str:
        c = s.callee
        if s.callee is intr.TILE_MAP:
            return self._adj_tile_map(b, s)
        if not isinstance(c, tile_cuda.TileOverload) or not tile_cuda.block_wide(s):
            return super().reverse_call(b, s)
        args = [self.v(x) for x in s.args]
        adjs = self.adj_args(s)
        ret = [self.a(s.result)] if s.result is not None else []
        types = [x.type for x in s.args]
        if tile_cuda.is_local(c.symbol):
            self.tile_memory.local(c.symbol, types, adjoint=True)
            return f"weft::adj_{c.symbol}({', '.join(args + adjs + ret)});"
        result = [s.result.type] if s.result is not None else []
        self.tile_memory.serial(types + result, types, None)
        # a tile adjoint given twice (tile_dot(a, a)) is staged twice: the second one accumulates
        # into a temporary, added afterwards
        outs, temps = [], []
        for x, a in zip(s.args, adjs):
            if isinstance(x.type, tile_cuda.TileType) and a in outs:
                temps.append((f"weft_dup{len(temps)}", ctype_name(x.type), a))
                a = temps[-1][0]
            outs.append(a)
        call = tile_cuda.serial(f"weft::adj_{c.symbol}", args + [tile_cuda.out(a) for a in outs] + ret) + ";"
        if not temps:
            return call
        decls = " ".join(f"{t} {n}{{}};" for n, t, _ in temps)
        adds = " ".join(f"{a} += {n};" for n, _, a in temps)
        return f"{{ {decls} {call} {adds} }}"

    def _adj_tile_map(self, b, s) -> str:
        """The map's adjoint; the adjoints of captured values (not tiles) are summed over the
        block's threads, each having added its elements' share."""
        text = reverse_formats[intr.TILE_MAP](self, b, s, [self.v(x) for x in s.args], self.adj_args(s), [self.a(s.result)])
        shared = []
        for k, x in enumerate(s.args):
            if k in s.attr.tiles or self.a(x) in shared or not _float_valued(x.type):
                continue
            shared.append(self.a(x))
            self.tile_memory.lane_sum(x.type)
        if not shared:
            return text
        save = " ".join(f"auto weft_part{k} = {a}; {a} = {{}};" for k, a in enumerate(shared))
        total = " ".join(f"{a} = weft::add(weft_part{k}, weft::tile_lane_sum({a}));" for k, a in enumerate(shared))
        return f"{{ {save} {text} {total} }}"

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


def _float_valued(t) -> bool:
    """A float scalar, vector or matrix (a value whose adjoint a thread sums)."""
    return wt.is_float(getattr(t, "_scalar", t))
