"""Array access analysis: which array parameters a kernel or func reads and writes.

Contract: ``array_access(fn)`` walks an ``ir.Function`` (and, through calls, the funcs it calls)
and returns ``{path: {"read", "write"}}`` where ``path`` is a tuple naming a parameter and,
for arrays inside structs, the field chain: ``("x",)``, ``("params", "output")``. Stores and
atomics count as writes; loads and atomics as reads (an atomic reads the old value). The tape
uses this to warn about overwrites and about outputs that cannot carry a gradient.
"""

from __future__ import annotations

from .. import types as wt
from . import intrinsics as intr
from . import ir

_WRITES = {intr.STORE, *intr.ATOMICS.values()}
_READS = {intr.LOAD, *intr.ATOMICS.values()}


def _origins(fn: ir.Function) -> dict:
    """var id -> set of parameter paths the var may refer to (arrays and structs only)."""
    origin: dict = {}
    for prm in fn.params:
        origin[prm.var.id] = {(prm.name,)}
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Call) and s.result is not None:
            if s.callee == intr.GET_FIELD and s.args[0].id in origin:
                origin[s.result.id] = {path + (s.attr[1],) for path in origin[s.args[0].id]}
            elif s.callee == intr.PHI:
                merged = origin.get(s.args[1].id, set()) | origin.get(s.args[2].id, set())
                if merged:
                    origin[s.result.id] = merged
        elif isinstance(s, ir.Assign) and s.src.id in origin:
            origin.setdefault(s.dst.id, set()).update(origin[s.src.id])
        elif isinstance(s, ir.Read) and s.src.id in origin:
            origin[s.result.id] = set(origin[s.src.id])
    return origin


def array_access(fn: ir.Function, _cache: dict = None) -> dict:
    """``{param path: {"read", "write"}}`` for every array the function touches."""
    cache = {} if _cache is None else _cache
    if id(fn) in cache:
        return cache[id(fn)]
    origin = _origins(fn)
    out: dict = {}

    def note(var, kind):
        for path in origin.get(var.id, ()):
            out.setdefault(path, set()).add(kind)

    for s in ir.walk(fn.body):
        if not isinstance(s, ir.Call):
            continue
        if s.callee in _READS:
            note(s.args[0], "read")
        if s.callee in _WRITES:
            note(s.args[0], "write")
        callee_ir = getattr(s.callee, "ir", None)
        if callee_ir is not None:
            inner = array_access(callee_ir, cache)
            names = [prm.name for prm in callee_ir.params]
            for path, kinds in inner.items():
                arg = s.args[names.index(path[0])]
                for base in origin.get(arg.id, ()):
                    out.setdefault(base + path[1:], set()).update(kinds)
    cache[id(fn)] = out
    return out


def is_array_param(t) -> bool:
    return isinstance(t, wt.ArrayType)


def mark_exclusive_loads(fn: ir.Function) -> int:
    """Mark loads whose gradient element only the current thread can touch, so the backward pass
    may accumulate into it without an atomic. That holds for an array parameter every access of
    which (in this kernel, never passed to a func) is indexed by exactly the thread index
    (``x[i]`` with ``i = wp.tid()``, or ``x[i, j]`` with ``i, j = wp.tid()``): thread t then owns
    element t. Returns how many loads were marked."""
    if not fn.is_kernel or not fn.tid_ndim:
        return 0
    tid_vars = {}
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Call) and s.callee == intr.TID:
            d, n = s.attr
            tid_vars[s.result.id] = d if n > 1 else 0
    params = {prm.var.id: prm for prm in fn.params if isinstance(prm.var.type, wt.ArrayType)}
    ok = {vid for vid, prm in params.items() if prm.var.type.ndim == fn.tid_ndim}
    loads = []
    for s in ir.walk(fn.body):
        if not isinstance(s, ir.Call):
            continue
        if s.callee in _READS or s.callee in _WRITES:
            arr = s.args[0]
            n = arr.type.ndim
            idx = s.args[1 : 1 + n]
            if not all(v.id in tid_vars and tid_vars[v.id] == k for k, v in enumerate(idx)):
                ok.discard(arr.id)
            elif s.callee == intr.LOAD:
                loads.append(s)
        else:
            for a in s.args:  # an array handed to a func or anything else: be conservative
                ok.discard(a.id)
    marked = 0
    for s in loads:
        if s.args[0].id in ok:
            s.attr = "exclusive"
            marked += 1
    return marked
