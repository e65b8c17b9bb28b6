"""The element-wise kernels ``array_map`` runs a func or builtin in (1-D: inputs are flattened
first). One kernel per function, input count and output count, written out as Python source
(``out0[i], out1[i] = fn(a0[i], a1[i])``) and compiled like any kernel: the text is registered
as the function's source, so error messages and the build cache see real lines."""

from typing import Any

from ..array import array
from ..codegen.source import register_source
from ..kernel import kernel
from ..types import int32

MODULE = "weft_array_map"
MAX_INPUTS = 16


def make(fn, dtypes, out_dtypes):
    """A kernel computing ``out0[i], ... = fn(a0[i], ...)`` over 1-D arrays: inputs of
    ``dtypes``, then one output array per entry of ``out_dtypes``."""
    n, m = len(dtypes), len(out_dtypes)
    name = f"map_{n}_to_{m}"
    params = [f"a{k}: array(dtype=T{k})" for k in range(n)] + [f"out{k}: array(dtype=R{k})" for k in range(m)]
    call = f"fn({', '.join(f'a{k}[i]' for k in range(n))})"
    if m == 1:
        body = [f"    out0[i] = {call}"]
    else:
        body = [f"    {', '.join(f'r{k}' for k in range(m))} = {call}"]
        body += [f"    out{k}[i] = r{k}" for k in range(m)]
    lines = [f"def {name}({', '.join(params)}):\n", "    i = wp_tid()\n"] + [b + "\n" for b in body]
    file = f"<weft.map kernel {name}>"
    namespace = {"array": array, "fn": fn, "wp_tid": wp_tid}
    namespace.update({f"T{k}": t for k, t in enumerate(dtypes)})
    namespace.update({f"R{k}": t for k, t in enumerate(out_dtypes)})
    exec(compile("".join(lines), file, "exec"), namespace)  # noqa: S102 (weft's own generated text)
    pyfunc = namespace[name]
    register_source(pyfunc, file, lines)
    return kernel(pyfunc, module=MODULE)


@kernel(module=MODULE)
def gather(src: array(dtype=Any), index: array(dtype=int32), dst: array(dtype=Any)):
    """``dst[i] = src[index[i]]``: a broadcast input, materialised (gradients flow back)."""
    i = wp_tid()
    dst[i] = src[index[i]]


from ..codegen.intrinsics import tid as wp_tid  # noqa: E402 (kernels resolve it by value)
