"""Array access analysis: which array parameters a kernel or func reads and writes.

Contract: ``array_access(fn)`` walks an ``ir.Function`` (and, through calls, the funcs it calls)
and returns ``{path: {"read", "write"}}`` where ``path`` is a tuple naming a parameter and,
for arrays inside structs, the field chain: ``("x",)``, ``("params", "output")``. Stores and
atomics count as writes; loads and atomics as reads (an atomic reads the old value). The tape
uses this to warn about outputs that cannot carry a gradient.

``ordered_access(fn)`` adds program order for the tape's overwrite check: which parameters a
function may read *before* it writes them (an in-place update, whose backward would replay the
overwritten values). Writing then reading back one's own result is fine.

``analyze(fn)`` returns a kernel's ``AccessFacts``: the loads only their own thread touches, the
accesses a per-launch bounds test makes safe, and the adds a thread may sum locally. It reads the
IR and writes nothing into it; the renderer and the staging planner are given the facts.
"""

from __future__ import annotations

import dataclasses
import weakref

from .. import types as wt
from . import index_ranges
from . import intrinsics as intr
from . import ir


# calls whose result is (part of) the memory of their first argument
_VIEWS = (intr.ARRAY_VIEW, intr.ARRAY_SLICE, intr.INDEXED_VIEW, intr.INDEXED_DATA, intr.FABRIC_ELEMENT, intr.FABRIC_ROW)


def _origins(fn: ir.Function) -> dict:
    """var id -> set of parameter paths the var may refer to (arrays and structs only)."""
    origin: dict = {}
    for prm in fn.params:
        origin[prm.var.id] = {(prm.name,)}
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Call) and s.result is not None:
            if s.callee == intr.GET_FIELD and s.args[0].id in origin:
                origin[s.result.id] = {path + (s.attr[1],) for path in origin[s.args[0].id]}
            elif s.callee in _VIEWS and s.args[0].id in origin:
                origin[s.result.id] = set(origin[s.args[0].id])  # a subarray is the array's memory
            elif s.callee == intr.PHI:
                merged = origin.get(s.args[1].id, set()) | origin.get(s.args[2].id, set())
                if merged:
                    origin[s.result.id] = merged
        elif isinstance(s, ir.Assign) and s.src.id in origin:
            origin.setdefault(s.dst.id, set()).update(origin[s.src.id])
        elif isinstance(s, ir.Read) and s.src.id in origin:
            origin[s.result.id] = set(origin[s.src.id])
    return origin


def _is_native(callee) -> bool:
    """A ``@wp.func_native`` instance: its C++ body is opaque to these analyses."""
    return getattr(callee, "native", None) is not None


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
        if intr.reads_array(s.callee):
            note(s.args[0], "read")
        if intr.writes_array(s.callee):
            note(s.args[0], "write")
        callee_ir = s.callee.ir if ir.is_func(s.callee) else None
        if callee_ir is not None and _is_native(s.callee):
            for arg in s.args:  # a C++ snippet may read and write any array it is given
                if wt.is_array_like(arg.type):
                    note(arg, "read")
                    note(arg, "write")
        elif callee_ir is not None:
            inner = array_access(callee_ir, cache)
            names = [prm.name for prm in callee_ir.params]
            for path, kinds in inner.items():
                arg = s.args[names.index(path[0])]
                for base in origin.get(arg.id, ()):
                    out.setdefault(base + path[1:], set()).update(kinds)
    cache[id(fn)] = out
    return out


_order_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def ordered_access(fn: ir.Function) -> dict:
    """``{param path: kinds}`` with kinds among ``"read"``, ``"write"`` and ``"read_before_write"``.

    Unlike ``array_access``, an atomic counts as a write only: its adjoint needs no old value, so
    accumulating into an array (a loss) is not an overwrite of something read. A path is
    ``read_before_write`` when some load of it may run before some store or atomic to it in the
    same thread: earlier in program order, or anywhere in the same loop body (the next iteration
    writes after this one read). Branches are not told apart (a read in ``then`` and a write in
    ``else`` count), and indices are not compared: ``a[i+1] = a[i]`` counts, as it should.
    """
    out: dict = {}
    seen_read: set = set()
    for path, kind in access_events(fn):
        kinds = out.setdefault(path, set())
        kinds.add(kind)
        if kind == "read":
            seen_read.add(path)
        elif path in seen_read:
            kinds.add("read_before_write")
    return out


def access_events(fn: ir.Function) -> list:
    """``(path, "read" | "write")`` array accesses of ``fn`` in program order, funcs inlined, each
    loop body listed twice (iteration k, then k+1); repeats of the same event are merged."""
    cached = _order_cache.get(fn)
    if cached is not None:
        return cached
    origin = _origins(fn)
    events: list = []

    def add(path, kind):
        if not events or events[-1] != (path, kind):
            events.append((path, kind))

    def visit(block):
        for s in block:
            if isinstance(s, ir.If):
                visit(s.then)
                visit(s.orelse)
            elif isinstance(s, ir.Loop):
                for _ in range(2):
                    if s.cond_block is not None:
                        visit(s.cond_block)
                    visit(s.body)
            elif isinstance(s, ir.Call):
                kind = "write" if intr.writes_array(s.callee) else "read" if intr.reads_array(s.callee) else None
                if kind is not None:
                    for path in origin.get(s.args[0].id, ()):
                        add(path, kind)
                callee_ir = s.callee.ir if ir.is_func(s.callee) else None
                if callee_ir is not None and _is_native(s.callee):
                    for arg in s.args:
                        if wt.is_array_like(arg.type):
                            for path in origin.get(arg.id, ()):
                                add(path, "read")
                                add(path, "write")
                elif callee_ir is not None:
                    names = [prm.name for prm in callee_ir.params]
                    for path, kind in access_events(callee_ir):
                        for base in origin.get(s.args[names.index(path[0])].id, ()):
                            add(base + path[1:], kind)

    visit(fn.body)
    _order_cache[fn] = events
    return events


def _thread_index_vars(fn: ir.Function) -> dict:
    """var id -> grid dimension for every ``wp.tid()`` result (0 for the linear index)."""
    out = {}
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Call) and s.callee == intr.TID:
            d, n = s.attr
            out[s.result.id] = d if n > 1 else 0
    return out


def _indexed_by_thread(call: ir.Call, tid_vars: dict) -> bool:
    """Whether an array access is ``a[i]`` / ``a[i, j, ...]`` with exactly the thread indices."""
    idx = call.args[1 : 1 + call.args[0].type.ndim]
    return all(v.id in tid_vars and tid_vars[v.id] == k for k, v in enumerate(idx))


def exclusive_loads(fn: ir.Function) -> frozenset:
    """The loads whose gradient element only the current thread can touch, so the backward pass
    may accumulate into it without an atomic (ids of their statements). That holds for an array
    parameter every access of which (in this kernel, never passed to a func) is indexed by exactly
    the thread index (``x[i]`` with ``i = wp.tid()``, or ``x[i, j]`` with ``i, j = wp.tid()``):
    thread t then owns element t."""
    if not fn.is_kernel or not fn.tid_ndim:
        return frozenset()
    tid_vars = _thread_index_vars(fn)
    params = {prm.var.id: prm for prm in fn.params if isinstance(prm.var.type, wt.ArrayType)}
    ok = {vid for vid, prm in params.items() if prm.var.type.ndim == fn.tid_ndim}
    loads = []
    for s in ir.walk(fn.body):
        if not isinstance(s, ir.Call):
            continue
        if intr.reads_array(s.callee) or intr.writes_array(s.callee):
            arr = s.args[0]
            if ir.is_builtin(s.callee) or not _indexed_by_thread(s, tid_vars):  # a tile op spans elements
                ok.discard(arr.id)
            elif s.callee == intr.LOAD:
                loads.append(s)
        else:
            for a in s.args:  # an array handed to a func or anything else: be conservative
                ok.discard(a.id)
    return frozenset(id(s) for s in loads if s.args[0].id in ok)


def _bounds_facts(fn: ir.Function) -> dict:
    """Find array accesses that cannot go out of bounds once a per-launch test passed, so that the
    renderer can emit a second, unchecked body used for the launches where the tests hold:

    - loads and stores ``a[i]`` / ``a[i, j]`` of array *parameters* indexed exactly by the thread
      index: safe when the array covers the launch grid (``fn.tid_arrays`` names them);
    - loads and stores ``a[j]`` of 1-D array parameters indexed by the index of a dynamic loop
      ``for j in range(start, stop)`` (step 1) whose start and stop are
      constants or kernel parameters: safe when ``start >= 0`` and ``stop <= a.shape[0]``
      (``fn.loop_bounds`` lists ``(array, start, stop)`` with start/stop as ``("const", value)``
      or ``("param", name)``);
    - loads and stores ``a[c]`` / ``a[c0, c1, ...]`` of array parameters with constant
      non-negative indices (``drag[0]``): safe when every ``c_d < a.shape[d]``
      (``fn.const_bounds`` lists ``(array, (c0, ...))``);
    - loads and stores ``a[k * i + c]`` of 1-D array parameters in a 1-D launch, ``i`` the thread
      index, ``k >= 1`` and ``c >= 0`` integer constants (``ends[2 * i + 1]``: pairs, triangles):
      safe when ``k * (size - 1) + c < a.shape[0]`` and fits in an int32
      (``fn.affine_bounds`` lists ``(array, k, c)``);
    - any other load or store of an array parameter whose indices index_ranges.py proves inside
      the array, from the int32 arithmetic computing them (``a[wp.max(i - 1, 0)]``,
      ``a[wp.min(i + 1, a.shape[0] - 1)]``): safe when its condition holds
      (``fn.range_checks`` lists ``(array, ndim, condition)``, condition an
      ``index_ranges.Cond``).

    Also the range loops with launch-invariant bounds and a positive constant step
    (``entered_loops``, by id): where the per-launch test ``entry_checks`` holds they run at least
    once wherever they are reached, so the fast body renders them as ``do``-``while`` loops (a
    loop whose trip count is not tested first lets GCC vectorise the task loop around it,
    several threads' iterations in the lanes of one vector: n-body's inner loop over bodies).

    And the range of the last thread coordinate inside which the kernel's clamps of it are the
    identity (``interior_lows`` / ``interior_highs``, the clamps ``interior_identity``, the
    offsets of the coordinate they clamp ``interior_steps``, index_ranges ``interior``): the CPU
    renderer runs the tasks in that range through a body without those clamps.

    Returns the ``AccessFacts`` fields ``tid_indexed`` (the ids of those calls), ``tid_arrays``,
    ``loop_bounds``, ``const_bounds``, ``affine_bounds``, ``range_checks``, ``entered_loops``,
    ``entry_checks``, ``interior_lows``, ``interior_highs``, ``interior_identity``
    and ``interior_steps``."""
    tid_indexed, loop_bounds, const_bounds, affine_bounds, range_checks = set(), [], [], [], []
    if not fn.is_kernel:
        return {}
    ranges = index_ranges.IndexRanges(fn)
    tid_vars = _thread_index_vars(fn)
    params = {prm.var.id: prm.name for prm in fn.params if isinstance(prm.var.type, wt.ArrayType)}
    loops = _invariant_range_loops(fn)
    affine = _affine_thread_indices(fn, tid_vars) if fn.tid_ndim == 1 else {}
    names = []
    for s in ir.walk(fn.body):
        if not (isinstance(s, ir.Call) and s.callee in (intr.LOAD, intr.STORE)):
            continue
        arr = s.args[0]
        if arr.id not in params:
            continue
        if fn.tid_ndim and arr.type.ndim == fn.tid_ndim and _indexed_by_thread(s, tid_vars):
            tid_indexed.add(id(s))
            if params[arr.id] not in names:
                names.append(params[arr.id])
        elif arr.type.ndim == 1 and s.args[1].id in loops:
            tid_indexed.add(id(s))
            check = (params[arr.id],) + loops[s.args[1].id]
            if check not in loop_bounds:
                loop_bounds.append(check)
        elif (consts := _constant_indices(s)) is not None:
            tid_indexed.add(id(s))
            check = (params[arr.id], consts)
            if check not in const_bounds:
                const_bounds.append(check)
        elif arr.type.ndim == 1 and s.args[1].id in affine:
            tid_indexed.add(id(s))
            check = (params[arr.id],) + affine[s.args[1].id]
            if check not in affine_bounds:
                affine_bounds.append(check)
        elif (cond := ranges.condition(s)) is not None:
            tid_indexed.add(id(s))
            check = (params[arr.id], arr.type.ndim, cond)
            if check not in range_checks:
                range_checks.append(check)
    entered, entry_checks = set(), []
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Loop) and (cond := ranges.entered(s)):
            entered.add(id(s))
            if cond != index_ranges.TRUE and cond not in entry_checks:
                entry_checks.append(cond)
    lows, highs, identity, steps = ranges.interior() if fn.tid_ndim else ((), (), (), ())
    return {
        "interior_lows": lows,
        "interior_highs": highs,
        "interior_identity": identity,
        "interior_steps": frozenset(steps),
        "tid_indexed": frozenset(tid_indexed),
        "tid_arrays": tuple(names),
        "loop_bounds": tuple(loop_bounds),
        "const_bounds": tuple(const_bounds),
        "affine_bounds": tuple(affine_bounds),
        "range_checks": tuple(range_checks),
        "entered_loops": frozenset(entered),
        "entry_checks": tuple(entry_checks),
    }


def _affine_thread_indices(fn: ir.Function, tid_vars: dict) -> dict:
    """var id -> (k, c) for the int32 values ``k * i + c`` built from the thread index ``i`` of a
    1-D launch by multiplying with and adding integer constants, with ``k >= 1`` and ``c >= 0``
    (so the value grows with ``i`` and is never negative). Plain ``i`` itself is left out (it is
    thread-indexed). Results of calls are defined once, so the map holds wherever they are used."""
    affine = {vid: (1, 0) for vid, d in tid_vars.items() if d == 0}

    def const_int(v):
        c = v.const if v.is_const else None
        return c if isinstance(c, int) and not isinstance(c, bool) else None

    for s in ir.walk(fn.body):
        if not (isinstance(s, ir.Call) and s.result is not None and s.result.type is wt.int32 and len(s.args) == 2):
            continue
        if s.result.mutable or not (ir.is_builtin(s.callee) and s.callee.symbol in ("mul", "add")):
            continue
        a, b = s.args
        if a.id not in affine:
            a, b = b, a
        if a.id not in affine or (c := const_int(b)) is None:
            continue
        k, off = affine[a.id]
        if s.callee.symbol == "mul" and c >= 1:
            affine[s.result.id] = (k * c, off * c)
        elif s.callee.symbol == "add" and c >= 0:
            affine[s.result.id] = (k, off + c)
    return {vid: kc for vid, kc in affine.items() if vid not in tid_vars}


def _constant_indices(call: ir.Call):
    """The indices of an access ``a[c0, ...]`` indexing every dimension with a non-negative integer
    constant, or None."""
    idx = call.args[1 : 1 + call.args[0].type.ndim]
    consts = []
    for v in idx:
        if not (v.is_const and isinstance(v.const, int) and not isinstance(v.const, bool) and v.const >= 0):
            return None
        consts.append(int(v.const))
    return tuple(consts) if len(consts) == call.args[0].type.ndim else None


def _invariant_range_loops(fn: ir.Function) -> dict:
    """index var id -> (start, stop) of the dynamic range loops whose start and stop are the same
    for the whole launch (constants or kernel parameters) and whose step is 1. (A larger step
    can wrap the index past the int32 range after the last iteration, which index_ranges.py
    tests for.)"""
    params = {prm.var.id: prm.name for prm in fn.params}

    def invariant(v):
        if v.is_const and isinstance(v.const, int) and not isinstance(v.const, bool):
            return ("const", int(v.const))
        if v.id in params and v.type in wt.int_types:
            return ("param", params[v.id])
        return None

    out = {}
    for s in ir.walk(fn.body):
        if not (isinstance(s, ir.Loop) and s.kind == "range"):
            continue
        step = s.step
        if not (step.is_const and isinstance(step.const, int) and step.const == 1):
            continue
        start, stop = invariant(s.start), invariant(s.stop)
        if start is not None and stop is not None:
            out[s.index.id] = (start, stop)
    return out


def _tile_read(s) -> bool:
    """A tile operation that only reads the array given first (``wp.tile_load``)."""
    return ir.is_builtin(s.callee) and getattr(s.callee, "array_access", None) == "read"


def _operand_uses(fn: ir.Function) -> dict:
    """var id -> ``[(statement, operand position)]`` for every use of the var as an operand."""
    uses: dict = {}

    def use(var, s, pos):
        if var is not None:
            uses.setdefault(var.id, []).append((s, pos))

    for s in ir.walk(fn.body):
        if isinstance(s, ir.Call):
            for k, a in enumerate(s.args):
                use(a, s, k)
        elif isinstance(s, (ir.Assign, ir.Read)):
            use(s.src, s, 0)
        elif isinstance(s, ir.If):
            use(s.cond, s, 0)
        elif isinstance(s, ir.Loop):
            for v in (s.start, s.stop, s.step, s.cond, *s.exit_flags, *s.carried):
                use(v, s, -1)
    if fn.ret is not None:
        use(fn.ret, None, -1)
    return uses


def _accumulation_facts(fn: ir.Function, exclusive: frozenset) -> dict:
    """Find adds into arrays that nothing else in the kernel observes, so that a thread may sum
    its contributions locally and add each sum once (native/accumulate.h):

    - forward: ``wp.atomic_add/atomic_sub(a, ...)`` whose previous value is unused, when every
      use of the array parameter ``a`` in the kernel is such an atomic;
    - backward: the gradient adds of loads (not thread-exclusive ones) of an array parameter
      that the kernel only reads: nothing in the backward pass reads that gradient.

    Reads of an array's shape do not count as uses. An array handed to a func, rebound, or used
    any other way is left alone, and so are kernels
    with struct parameters (their array fields could overlap an accumulated array). Whether two
    array arguments overlap is checked at launch time by the entry point. Returns the
    ``AccessFacts`` fields ``accum_calls`` (ids of the calls), ``accum_params`` (the parameter
    names) and ``accum_forward`` / ``accum_backward`` (the arrays each pass accumulates into: the
    forward into the data of the atomics' arrays, the backward into the gradients of the
    read-only ones).
    """
    calls_marked, params_marked, targets = set(), [], {"forward": [], "backward": []}
    if not fn.is_kernel or any(getattr(p.var.type, "_kind", None) == "struct" for p in fn.params):
        return {}
    uses = _operand_uses(fn)
    adds = (intr.ATOMICS["atomic_add"], intr.ATOMICS["atomic_sub"])
    for prm in fn.params:
        if not isinstance(prm.var.type, wt.ArrayType):
            continue
        # reading the shape observes neither the data nor the gradient (a stencil's clamps)
        found = [(s, pos) for s, pos in uses.get(prm.var.id, []) if not _shape_read(s)]
        calls = [s for s, pos in found if isinstance(s, ir.Call) and pos == 0]
        if not found or len(calls) != len(found):
            continue
        if all(s.callee in adds and (s.result is None or s.result.id not in uses) for s in calls):
            marked, mode = calls, "forward"
        elif all(s.callee == intr.LOAD or _tile_read(s) for s in calls):
            # tile loads add their gradients with their own atomics (not marked), into the
            # private copies the scope gives the array's gradient
            marked, mode = [s for s in calls if id(s) not in exclusive], "backward"
        else:
            continue
        if marked:
            calls_marked.update(id(s) for s in marked if s.callee == intr.LOAD or mode == "forward")
            params_marked.append(prm.name)
            targets[mode].append(prm.name)
    marked = [s for s in ir.walk(fn.body) if id(s) in calls_marked]
    return {
        "accum_calls": frozenset(calls_marked),
        "accum_params": tuple(params_marked),
        "accum_forward": tuple(targets["forward"]),
        "accum_backward": tuple(targets["backward"]),
        **_hoisting_facts(fn, [s for s in marked if s.callee in adds], [s for s in marked if s.callee == intr.LOAD]),
    }


def _shape_read(s) -> bool:
    return isinstance(s, ir.Call) and s.callee == intr.SHAPE


def _hoistable(dtype) -> bool:
    """Element types a thread can sum in a local variable of their own type: 32/64-bit integers
    and floats, and vectors / matrices of floats (half floats keep their per-add rounding)."""
    if dtype in (wt.float32, wt.float64, wt.int32, wt.int64, wt.uint32, wt.uint64):
        return True
    return getattr(dtype, "_kind", None) in ("vector", "matrix") and dtype._scalar in (wt.float32, wt.float64)


def _hoisting_facts(fn: ir.Function, adds: list, loads: list) -> dict:
    """Accumulations into the same element for the whole launch (every index a constant or an
    int parameter the kernel never rebinds): forward atomic adds (``adds``) and the gradient
    adds of reads (``loads``, backward). A thread sums them in local variables and adds each sum
    once, when its share of the launch ends (``emit_cpu.CPURenderer``). Returns the ``AccessFacts``
    fields ``hoisted`` (call id -> slot of its pass) and ``hoist_slots`` /
    ``hoist_back_slots`` (per slot: the array parameter, its element type and the index
    sources, ``("const", value)`` or ``("param", name)``)."""
    int_params = {p.var.id: p.name for p in fn.params if wt.is_int(p.var.type)}
    reassigned = ir.assigned_var_ids(fn)
    names = {p.var.id: p.name for p in fn.params}
    hoisted, out = {}, {}
    for field, calls, last in (("hoist_slots", adds, -1), ("hoist_back_slots", loads, None)):
        slots = {}
        for s in calls:
            arr, idx = s.args[0], s.args[1:last]
            if not _hoistable(arr.type.dtype):
                continue
            sources = []
            for v in idx:
                if v.is_const:
                    sources.append(("const", int(v.const)))
                elif v.id in int_params and v.id not in reassigned:
                    sources.append(("param", int_params[v.id]))
                else:
                    break
            else:
                key = (names[arr.id], arr.type.dtype, tuple(sources))
                hoisted[id(s)] = slots.setdefault(key, len(slots))
        if slots:
            out[field] = tuple(slots)
    return {"hoisted": hoisted, **out} if hoisted else {}


@dataclasses.dataclass(frozen=True)
class AccessFacts:
    """What the access analyses found in one kernel (statements by ``id``, arrays by parameter
    name). Funcs have none (``NO_FACTS``): the analyses look at kernels only."""

    exclusive_loads: frozenset = frozenset()  # loads only their own thread touches (exclusive_loads)
    tid_indexed: frozenset = frozenset()  # accesses a per-launch bounds test makes safe (_bounds_facts)
    tid_arrays: tuple = ()
    loop_bounds: tuple = ()
    const_bounds: tuple = ()
    affine_bounds: tuple = ()
    range_checks: tuple = ()  # (array, ndim, index_ranges condition) per proven access
    entered_loops: frozenset = frozenset()  # range loops the fast body runs as do-while loops
    entry_checks: tuple = ()  # index_ranges conditions under which they run at least once
    interior_lows: tuple = ()  # Forms the last thread coordinate is at least, in the interior
    interior_highs: tuple = ()  # and at most
    interior_identity: tuple = ()  # (call id, argument position): the clamps there are that argument
    interior_steps: frozenset = frozenset()  # int adds/subtracts that cannot wrap there
    accum_calls: frozenset = frozenset()  # adds a thread may sum locally (_accumulation_facts)
    accum_params: tuple = ()
    accum_forward: tuple = ()
    accum_backward: tuple = ()
    hoisted: dict = dataclasses.field(default_factory=dict)  # forward adds into one element per launch
    hoist_slots: tuple = ()  # (array parameter, dtype, index sources) per hoisted forward sum
    hoist_back_slots: tuple = ()  # the same for the backward pass's gradient sums

    def hoist_slots_of(self, mode: str) -> tuple:
        """The hoisted sums of the ``"forward"`` or ``"backward"`` pass."""
        return self.hoist_slots if mode == "forward" else self.hoist_back_slots

    def accum_targets(self, mode: str) -> tuple:
        """The arrays the ``"forward"`` or ``"backward"`` pass accumulates into."""
        return self.accum_forward if mode == "forward" else self.accum_backward


NO_FACTS = AccessFacts()


def analyze(fn: ir.Function) -> AccessFacts:
    """The access facts of a kernel (``NO_FACTS`` for a func); reads ``fn`` only."""
    if not fn.is_kernel:
        return NO_FACTS
    exclusive = exclusive_loads(fn)
    return AccessFacts(exclusive_loads=exclusive, **_bounds_facts(fn), **_accumulation_facts(fn, exclusive))
