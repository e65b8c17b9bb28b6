"""The C++ skeletons of the generated code: kernel body signatures and each target's entry points.

Contract: plain ``str.format`` templates, filled by the renderers (``emit.py``, ``emit_cuda.py``)
with names and with already-rendered lines (``{body}``: statements, indented for their place).
No logic lives here; a renderer decides what goes into a skeleton, the skeleton only shapes it.
"""

# The per-thread body of one pass of a kernel (``{variant}``: "", "_fast" for the unchecked body).
BODY_HEAD = (
    "{qualifier} void {sym}_{mode}{variant}_body(const wp_args_{sym}* args, const weft::launch_bounds* bounds, "
    "weft::int64 task, weft::thread_ctx& tc{extra}) {{"
)

# The CPU's staged body of a pass (staging.py): one task of a chunk, recording its adds. ``task32``
# is the task as the chunk's loop counts it in int32 (first task plus k), which the compiler sees
# advance by one per iteration, where it cannot tell that int32(task) does not wrap.
STAGED_BODY_HEAD = (
    "{qualifier} void {sym}_{mode}_staged_body(const wp_args_{sym}* args, "
    "const weft::launch_bounds* bounds, weft::int64 task, weft::int32 task32, {stage}& st, int k) {{"
)

# The CPU entry point of one pass: runs tasks [begin, end) of a launch on the calling pool thread.
# The arguments and bounds are copied to locals: the body's stores cannot alias a local whose
# address does not escape, so the compiler keeps them in registers across tasks (and can vectorize
# the task loop) instead of reloading them after every store. Kernel errors end the range and are
# recorded in the launch context.
CPU_ENTRY = """\
{qualifier} void {sym}_{target}_{mode}(weft::launch_context* ctx, const void* args, weft::int64 begin, weft::int64 end) {{
    weft::serial_launch = ctx->serial != 0;
    weft::thread_ctx tc{{ctx->serial != 0, ctx->serial != 0, nullptr}};
    wp_args_{sym} local_args = *(const wp_args_{sym}*)args;
    const weft::launch_bounds local_bounds = ctx->bounds;
    try {{
{body}
    }} catch (const weft::kernel_exception& e) {{
        weft::record_error(ctx, e.err);
    }}
}}"""

CPU_TASK_LOOP = "for (weft::int64 t = begin; t < end; ++t) "
# A multi-dimensional launch's tasks, run by run along the last grid dimension (core.h tid_start).
# A pragma placed before it (the fast loop's ivdep) applies to the outer loop over runs only.
CPU_RUN_LOOP = (
    "for (weft::int64 t = begin; t < end; weft::tid_next_run(tc, local_bounds, end)) "
    "for (const weft::int64 stop = t + tc.run; t < stop; ++t) "
)
CPU_BODY_CALL = "{sym}_{mode}{{}}_body(&local_args, &local_bounds, t, tc{extra});"

# The CUDA entry point of one pass: a grid-stride loop over the launch (64-bit: launches may
# exceed 2^31 threads in total); ``ctx`` is a device pointer where the first kernel error goes.
CUDA_ENTRY = """\
{qualifier} void {sym}_{target}_{mode}(weft::launch_bounds bounds, wp_args_{sym} args, weft::launch_context* ctx) {{
    weft::cuda_set_context(ctx);
    weft::thread_ctx tc;
{body}
}}"""

CUDA_TASK_LOOP = (
    "for (weft::int64 t = weft::int64(blockIdx.x) * blockDim.x + threadIdx.x; t < bounds.size; "
    "t += weft::int64(gridDim.x) * blockDim.x) "
)
CUDA_BODY_CALL = "{sym}_{mode}{{}}_body(&args, &bounds, t, tc);"
