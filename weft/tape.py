"""``wp.Tape``: records kernel launches and runs their adjoints in reverse.

Contract: inside ``with tape:``, every ``wp.launch`` (forward, not ``record_cmd``) appends a
``LaunchRecord``. ``backward()`` seeds output gradients and launches each record's backward
entry point in reverse order, with every array argument's ``.grad`` as its adjoint.
"""

from __future__ import annotations

import contextlib
import dataclasses
import linecache
import sys
import typing
import warnings

from . import config
from .codegen.access import access_events
from .runtime import launch as _launch
from .runtime import recording
from .vector_types import _Composite


@dataclasses.dataclass(frozen=True)
class LaunchRecord:
    """One recorded launch: what ran, over which grid, with which arguments."""

    kernel: object
    instance: object
    dim: object
    inputs: tuple
    outputs: tuple
    device: object
    block_dim: int = 256  # threads per block on a GPU (a tiled launch's backward needs the same)


@dataclasses.dataclass(frozen=True)
class FuncRecord:
    """A Python-level step recorded with ``Tape.record_func``."""

    backward: typing.Callable
    arrays: tuple


def _resolve(params_by_name: dict, path: tuple):
    v = params_by_name.get(path[0])
    for field in path[1:]:
        v = getattr(v, field, None)
    return v


_warned: set = set()


def _warn_gradient_dead_ends(rec, params, read_later: set, check: bool = True) -> list:
    """Warn when a launch writes an array that has no gradient buffer, that a later recorded
    launch reads, although this launch reads arrays that do have gradients: the gradient of
    everything computed from that array silently stops there. ``read_later`` collects the ids
    of arrays read by later launches (backward walks the tape in reverse); returns the ids this
    launch adds. ``check=False`` only collects (the answer is known from an earlier backward)."""
    by_name = dict(zip(rec.kernel.arg_names, params))
    access = rec.instance.access
    reads = []
    try:
        if check:
            _check_dead_ends(rec, by_name, access, read_later)
    finally:
        for p, kinds in access.items():
            arr = _resolve(by_name, p)
            if arr is not None and "read" in kinds:
                reads.append(id(arr))
        read_later.update(reads)
    return reads


def _check_dead_ends(rec, by_name, access, read_later):
    reads_with_grad = [
        p for p, kinds in access.items() if "read" in kinds and getattr(_resolve(by_name, p), "grad", None) is not None
    ]
    if not reads_with_grad:
        return
    for path, kinds in access.items():
        if "write" not in kinds:
            continue
        arr = _resolve(by_name, path)
        if arr is None or getattr(arr, "grad", None) is not None or id(arr) not in read_later:
            continue
        key = (rec.kernel.key, path)
        if key in _warned:
            continue
        _warned.add(key)
        warnings.warn(
            f"kernel '{rec.kernel.key}' writes '{'.'.join(path)}', an array created without requires_grad=True, so "
            f"no gradient flows back through it to {', '.join(repr('.'.join(p)) for p in reads_with_grad)}; "
            "create it with requires_grad=True",
            stacklevel=4,
        )


def _adjoint_launch(rec, adj):
    """A prepared adjoint ``wp.Launch`` for a recorded launch whose arguments are all arrays,
    Python numbers or vector/matrix values, else None. Vector values can be changed in place, so
    ``_value_key`` puts their bytes in the key the prepared launch is reused under."""
    from .array import array

    params = tuple(rec.inputs) + tuple(rec.outputs)
    if not all(type(p) in (int, float, bool) or isinstance(p, (array, _Composite)) for p in params):
        return None
    return _launch_adjoint(rec, adj, record_cmd=True)


def _value_key(params) -> tuple:
    """The current bytes of the vector/matrix arguments of a launch (mutable ctypes values)."""
    return tuple(bytes(p) for p in params if isinstance(p, _Composite))


def _launch_adjoint(rec, adj, record_cmd=False):
    """Launch (or with ``record_cmd``, prepare) the adjoint of a recorded launch."""
    return _launch.launch(
        rec.kernel,
        rec.dim,
        inputs=rec.inputs,
        outputs=rec.outputs,
        adj_inputs=adj[: len(rec.inputs)],
        adj_outputs=adj[len(rec.inputs) :],
        device=rec.device,
        adjoint=True,
        record_tape=False,
        record_cmd=record_cmd,
        block_dim=rec.block_dim,
    )


def _check_overwrites(rec, params):
    """Warp's overwrite warnings for a launch being recorded; then mark what the launch reads.

    A write warns when an earlier launch or copy on the tape read the array, or when this kernel
    itself may read the array before writing it (an in-place update; codegen/access.py). Writing
    then reading back within one kernel is fine. The kernel's accesses are taken in program order
    per array, not per parameter, so one array passed as two arguments is seen as one.
    """
    by_name = dict(zip(rec.kernel.arg_names, params))
    events = access_events(rec.instance.ir)
    arrays = {path: _resolve(by_name, path) for path in {p for p, _ in events}}
    read_here: set = set()
    warned: set = set()
    for path, kind in events:
        arr = arrays[path]
        if not hasattr(arr, "mark_write"):
            continue
        key = id(_root(arr))
        if kind == "read":
            read_here.add(key)
        elif key not in warned:
            file, line = _kernel_location(rec.kernel)
            if arr.mark_write(
                read_in_same_kernel=key in read_here,
                arg_name=".".join(path),
                kernel_name=rec.kernel.key,
                filename=file,
                lineno=line,
            ):
                warned.add(key)
    for path, kind in events:
        if kind == "read" and hasattr(arrays[path], "mark_read"):
            arrays[path].mark_read()


def _root(arr):
    """The array a view was taken from (views share memory with it)."""
    while getattr(arr, "_ref", None) is not None:
        arr = arr._ref
    return arr


_locations: dict = {}


def _kernel_location(kernel):
    """``(file, line of the def)`` of a kernel, as Warp's warning names it."""
    loc = _locations.get(kernel.pyfunc)
    if loc is None:
        code = kernel.pyfunc.__code__
        line = code.co_firstlineno
        for k in range(line, line + 50):  # skip decorator lines
            if linecache.getline(code.co_filename, k).lstrip().startswith(("def ", "async def ")):
                line = k
                break
        loc = _locations[kernel.pyfunc] = (code.co_filename, line)
    return loc


class Tape:
    """Records launches for reverse-mode differentiation.

    Launches (and ``wp.copy``, ``array.assign``, fills) made inside ``with tape:`` are recorded;
    ``tape.backward(loss)`` runs their generated backward passes in reverse order and accumulates
    gradients into the ``.grad`` arrays of the arguments made with ``requires_grad=True``. One tape
    records at a time: entering a tape while another records raises ``RuntimeError``.

    Example:
        With kernels ``compute`` and ``reduce`` and arrays ``x`` (``requires_grad=True``), ``y`` and
        ``loss`` (one float)::

            tape = wp.Tape()
            with tape:
                wp.launch(compute, dim=n, inputs=[x], outputs=[y])
                wp.launch(reduce, dim=n, inputs=[y], outputs=[loss])
            tape.backward(loss)
            x.grad          # d loss / d x
            tape.zero()     # clear gradients before the next backward pass
    """

    def __init__(self):
        self.launches: list = []
        self.gradients: dict = {}
        self.scopes: list = []  # (launch index, name, metadata) begins; (launch index, None, None) ends
        self.loss = None
        # id(record) -> (ids of the adjoint arguments, prepared adjoint wp.Launch or None, ids of
        # the arrays it reads): a second backward over the same arrays and gradients replays the
        # packed launch and skips the dead-end check, whose answer cannot have changed.
        self._adjoint_cmds: dict = {}

    def __enter__(self):
        recording.push_tape(self)
        return self

    def __exit__(self, *exc):
        recording.pop_tape(self)

    def record_launch(self, kernel, instance, dim, inputs, outputs, device, block_dim=256):
        rec = LaunchRecord(kernel, instance, dim, tuple(inputs), tuple(outputs), device, block_dim)
        if config.verify_autograd_array_access:
            _check_overwrites(rec, list(inputs) + list(outputs))
        self.launches.append(rec)

    def record_func(self, backward, arrays):
        """Record a Python callable to run (with no arguments) during ``backward``.

        Raises:
            NotImplementedError: forward mode (``wp.autograd.hvp``) is running, which cannot carry
                tangents through a Python step (copies and fills, which it handles, excepted).
        """
        if recording.active_forward_mode() is not None and not getattr(backward, "forward_mode_safe", False):
            raise NotImplementedError(
                f"forward mode (wp.autograd.jvp/hvp) cannot carry tangents through the Python step "
                f"{getattr(backward, '__qualname__', backward)!r} recorded with Tape.record_func"
            )
        self.launches.append(FuncRecord(backward, tuple(arrays)))

    # -- scopes (only used to group launches in ``visualize``) ---------------------------------

    def record_scope_begin(self, scope_name, metadata=None):
        """Open a named scope: launches recorded until the matching ``record_scope_end`` belong to it.

        Args:
            scope_name: the scope's label.
            metadata: a dict kept with the scope (``{"color": "#rrggbb"}`` colors it in ``visualize``).
        """
        self.scopes.append((len(self.launches), scope_name, dict(metadata or {})))

    def record_scope_end(self, remove_scope_if_empty=True):
        """Close the innermost open scope.

        Args:
            remove_scope_if_empty: drop the scope altogether if no launch was recorded inside it.

        Raises:
            RuntimeError: no scope is open.
        """
        depth = 0
        for k in range(len(self.scopes) - 1, -1, -1):
            depth += 1 if self.scopes[k][1] is None else -1
            if depth < 0:
                break
        else:
            raise RuntimeError(
                "tape.record_scope_end() ended tape scope, but scope not present (no record_scope_begin is open)"
            )
        if remove_scope_if_empty and self.scopes[k][0] == len(self.launches) and k == len(self.scopes) - 1:
            del self.scopes[k]
            return
        self.scopes.append((len(self.launches), None, None))

    @contextlib.contextmanager
    def record_scope(self, name, color=None, remove_scope_if_empty=True):
        """``with tape.record_scope("name"):`` groups the launches inside into a named scope.

        A weft convenience around ``record_scope_begin`` / ``record_scope_end``; scopes nest.

        Args:
            name: the scope's label.
            color: a Graphviz color for the scope's box in ``visualize``.
            remove_scope_if_empty: drop the scope if nothing was recorded inside it.
        """
        self.record_scope_begin(name, {"color": color} if color is not None else None)
        try:
            yield self
        finally:
            self.record_scope_end(remove_scope_if_empty=remove_scope_if_empty)

    def get_adjoint(self, a):
        """The adjoint (gradient) that backward passes for kernel argument ``a``, tracked in ``gradients``.

        Arrays with a gradient buffer give ``a.grad``. Struct instances give None (their array
        fields carry their gradients into the kernel themselves), but those gradients are tracked,
        and ``gradients[instance]`` is a struct of them (``tape.gradients[s].x`` is ``s.x.grad``).
        Anything else gives None.
        """
        if hasattr(a, "arrays") and not hasattr(a, "grad"):
            for x in a.arrays():
                if getattr(x, "grad", None) is not None:
                    self.gradients[x] = x.grad
            self.gradients[a] = a.gradients()
            return None
        g = getattr(a, "grad", None)
        if g is not None:
            self.gradients[a] = g
        return g

    def _check_differentiable(self):
        """Raise before any adjoint runs if a recorded kernel has no (correct) backward pass."""
        for k, rec in enumerate(self.launches):
            if isinstance(rec, FuncRecord):
                continue
            inst = rec.instance
            if inst.backward_error and inst.kernel.enable_backward:
                raise RuntimeError(
                    f"tape.backward(): kernel '{rec.kernel.key}' (launch {k} on this tape) has no backward pass: "
                    f"{inst.backward_error}"
                )
            if not inst.backward_enabled:
                raise RuntimeError(
                    f"tape.backward(): kernel '{rec.kernel.key}' (launch {k} on this tape) was built with "
                    "enable_backward=False, so it has no backward pass; enable it with "
                    "@wp.kernel(enable_backward=True) or wp.set_module_options({'enable_backward': True})"
                )
            if inst.ir.adjoint_error:
                raise RuntimeError(f"tape.backward(): launch {k} on this tape: {inst.ir.adjoint_error}")

    def _seed(self, a, g):
        """Seed ``a``'s gradient with ``g``: an array without a gradient buffer adopts a weft array
        ``g`` as its ``.grad`` (as in Warp); otherwise ``g`` is copied into ``a.grad``."""
        if a.grad is None and getattr(g, "shape", None) == a.shape and getattr(g, "dtype", None) is a.dtype:
            a.grad = g
        else:
            if a.grad is None:
                a.requires_grad = True
            a.grad.assign(g)
        self.gradients[a] = a.grad

    def backward(self, loss=None, grads: typing.Optional[dict] = None):
        """Run the recorded launches' adjoints in reverse order.

        Every array argument's gradient used on the way is tracked in ``gradients``.

        Args:
            loss: a one-element array whose gradient is seeded with 1.
            grads: ``{array: seed}`` to seed output gradients explicitly instead (a seed is an
                array, NumPy array or nested list; see ``_seed``).

        Raises:
            RuntimeError: a recorded kernel was built with ``enable_backward=False`` or cannot be
                differentiated (raised before any gradient is touched).
        """
        self._check_differentiable()
        if loss is not None:
            if loss.size != 1:
                raise ValueError(f"tape.backward(loss) needs a one-element loss array, got shape {loss.shape}")
            if loss.grad is None:
                raise ValueError("tape.backward(loss): the loss array was created without requires_grad=True")
            loss.grad.fill_(1.0)
            self.loss = loss
        if grads:
            for a, g in grads.items():
                self._seed(a, g)
        read_later: set = set()
        for rec in reversed(self.launches):
            if isinstance(rec, FuncRecord):
                rec.backward()
                continue
            params = list(rec.inputs) + list(rec.outputs)
            adj = [self.get_adjoint(p) for p in params]
            key = (tuple(map(id, adj)), _value_key(params))
            cmd = self._adjoint_cmds.get(id(rec))
            if cmd is not None and cmd[0] == key:  # same arrays and gradients as last time
                read_later.update(cmd[2])
            else:
                reads = _warn_gradient_dead_ends(rec, params, read_later)
                cmd = (key, _adjoint_launch(rec, adj), reads)
                self._adjoint_cmds[id(rec)] = cmd
            if cmd[1] is None:
                _launch_adjoint(rec, adj)
            else:
                cmd[1].launch()
        self._release_reads()

    def _release_reads(self):
        """Forget which arrays this tape's launches read (``wp.config.verify_autograd_array_access``),
        as Warp does after ``backward()`` and ``reset()``: writing one of them afterwards no longer
        warns (the gradients already computed stay right; a further ``backward()`` would not).
        Reads through views are released on the arrays they view too."""
        for rec in self.launches:
            for a in rec.arrays if isinstance(rec, FuncRecord) else tuple(rec.inputs) + tuple(rec.outputs):
                for x in a.arrays() if hasattr(a, "arrays") else [a]:
                    while x is not None and hasattr(x, "mark_init"):  # a view's read marked its parents too
                        x.mark_init()
                        x = getattr(x, "_ref", None)

    def _arrays(self):
        seen = {}
        for rec in self.launches:
            arrays = rec.arrays if isinstance(rec, FuncRecord) else tuple(rec.inputs) + tuple(rec.outputs)
            for a in arrays:
                for x in a.arrays() if hasattr(a, "arrays") else [a]:
                    if getattr(x, "grad", None) is not None:
                        seen[id(x)] = x
        return list(seen.values())

    def zero(self):
        """Zero the gradients of every array the tape has seen."""
        for a in self._arrays():
            a.grad.zero_()
        for g in self.gradients.values():
            if hasattr(g, "zero_"):  # struct entries hold arrays zeroed above
                g.zero_()

    def reset(self):
        """Zero gradients and forget all recorded launches (the zeroed gradients stay in
        ``gradients``)."""
        self.zero()
        self._release_reads()
        self.launches = []  # ``gradients`` stays, zeroed (as in Warp: tape.gradients[s] after a reset)
        self.scopes = []
        self.loss = None
        self._adjoint_cmds = {}

    def visualize(
        self,
        filename=None,
        simplify_graph=True,
        hide_readonly_arrays=False,
        array_labels=None,
        choose_longest_node_name=True,
        ignore_graph_scopes=False,
        track_inputs=None,
        track_outputs=None,
        track_input_names=None,
        track_output_names=None,
        graph_direction="LR",
    ) -> str:
        """The recorded launches as a Graphviz DOT graph (render it with ``dot -Tsvg tape.dot``).

        Launches are boxes, arrays are ellipses (green: has a gradient buffer; gray: none, so no
        gradient flows through it). An edge ``array -> launch`` means the kernel reads the array,
        ``launch -> array`` that it writes it (from the kernel's access analysis); edges are
        labelled with the kernel parameter. Scopes (``record_scope``) become nested boxes.

        Args:
            filename: also write the DOT text to this file.
            simplify_graph: collapse consecutive repetitions of the same launch sequence (same
                kernels, grids and arrays) into one copy marked ``repeated Nx``.
            hide_readonly_arrays: leave out arrays that no recorded launch writes.
            array_labels: ``{array: label}`` names for arrays.
            choose_longest_node_name: arrays are otherwise named after the variables (and object
                attributes such as ``state.q``) that hold them in the calling frames; prefer the
                longest such name (else the shortest). Arrays found nowhere get the kernel
                parameter name they were first passed as.
            ignore_graph_scopes: draw no scope boxes.
            track_inputs, track_outputs: arrays to always show, highlighted as inputs / outputs.
            track_input_names, track_output_names: labels for those arrays.
            graph_direction: Graphviz ``rankdir`` ("LR", "TB", ...).

        Returns:
            The DOT source.
        """
        graph = _TapeGraph(self, array_labels, track_inputs, track_outputs, track_input_names, track_output_names)
        graph.name_arrays(sys._getframe(1), choose_longest_node_name)
        dot = graph.render(simplify_graph, hide_readonly_arrays, ignore_graph_scopes, graph_direction)
        if filename:
            with open(filename, "w", encoding="utf-8") as f:
                f.write(dot)
        return dot


# ---------------------------------------------------------------------------------------------
# Tape.visualize: the tape as a Graphviz graph
# ---------------------------------------------------------------------------------------------

_MAX_PERIOD = 16  # longest repeated launch sequence simplify_graph looks for
_ARRAY_COLORS = {"grad": "#9ed49e", "nograd": "#dddddd", "input": "#ffd54f", "output": "#ff9e80"}


def _is_data_array(a) -> bool:
    return hasattr(a, "ptr") and hasattr(a, "strides") and not getattr(a, "is_annotation", False)


def _array_key(a) -> tuple:
    """Arrays (or views) over the same memory with the same layout are one node."""
    return (a.ptr, tuple(a.shape), tuple(a.strides), a.dtype)


def _dot_str(text) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _members(obj):
    """(name, value) pairs of an object's attributes (struct fields for weft structs)."""
    if hasattr(obj, "_struct") and hasattr(obj, "_values"):
        return list(obj._values.items())
    d = getattr(obj, "__dict__", None)
    if not isinstance(d, dict) or len(d) > 256 or isinstance(obj, type) or type(obj).__name__ == "module":
        return []
    return list(d.items())


@dataclasses.dataclass
class _GraphNode:
    """One launch (or ``record_func``) on the tape, with its array edges."""

    index: int
    kernel: str
    dim: object
    edges: tuple  # ((array key, parameter label, "read" | "write" | "func"), ...)
    is_func: bool = False
    count: int = 1  # > 1 when simplify_graph merged repetitions into this node

    def signature(self):
        return (self.kernel, repr(self.dim), self.edges, self.is_func)


@dataclasses.dataclass
class _Scope:
    """A scope of the tape: launch indices and child scopes, in recording order."""

    name: object
    metadata: dict
    items: list


class _TapeGraph:
    """Collects launches, arrays and scopes from a tape and renders DOT text."""

    def __init__(self, tape, array_labels, track_inputs, track_outputs, track_input_names, track_output_names):
        self.tape = tape
        self.arrays: dict = {}  # key -> {"array", "id", "param", "written", "names"}
        self.labels = {}
        for a, label in (array_labels or {}).items():
            if _is_data_array(a):
                self.labels[_array_key(a)] = str(label)
        self.nodes = [self._node(k, rec) for k, rec in enumerate(tape.launches)]
        self.roles = {}
        for role, arrays, names in (
            ("input", track_inputs, track_input_names),
            ("output", track_outputs, track_output_names),
        ):
            for j, a in enumerate(arrays or []):
                key = self._add_array(a, f"{role}_{j}")
                self.roles[key] = role
                if names and j < len(names):
                    self.labels.setdefault(key, str(names[j]))

    def _add_array(self, a, param) -> tuple:
        key = _array_key(a)
        if key not in self.arrays:
            self.arrays[key] = {"array": a, "id": len(self.arrays), "param": param, "written": False, "names": set()}
        return key

    def _node(self, k, rec) -> _GraphNode:
        edges = []
        if isinstance(rec, FuncRecord):
            for a in rec.arrays:
                for x in a.arrays() if hasattr(a, "arrays") else [a]:
                    if _is_data_array(x):
                        edges.append((self._add_array(x, "record_func"), "", "func"))
            name = getattr(rec.backward, "__qualname__", None) or type(rec.backward).__name__
            return _GraphNode(k, f"record_func: {name}", None, tuple(edges), is_func=True)
        by_name = dict(zip(rec.kernel.arg_names, list(rec.inputs) + list(rec.outputs)))
        for path, kinds in sorted(rec.instance.access.items()):
            arr = _resolve(by_name, path)
            if not _is_data_array(arr):
                continue
            label = ".".join(path)
            key = self._add_array(arr, label)
            for kind in ("read", "write"):
                if kind in kinds:
                    edges.append((key, label, kind))
                    self.arrays[key]["written"] |= kind == "write"
        return _GraphNode(k, rec.kernel.key, rec.dim, tuple(edges))

    def name_arrays(self, frame, choose_longest):
        """Name arrays after the variables and attributes holding them in the calling frames."""
        wanted = {id(v["array"]): key for key, v in self.arrays.items()}
        by_key = {}
        while frame is not None:
            for name, value in list(frame.f_locals.items()):
                self._collect(name, value, wanted, by_key)
            frame = frame.f_back
        for key in self.arrays:
            names = by_key.get(key)
            if key in self.labels or not names:
                continue
            pick = max if choose_longest else min
            self.labels[key] = pick(sorted(names), key=len)

    def _collect(self, name, value, wanted, by_key):
        if _is_data_array(value):
            key = wanted.get(id(value)) or (_array_key(value) if _array_key(value) in self.arrays else None)
            if key is not None:
                by_key.setdefault(key, set()).add(name)
            return
        if name.startswith("__") or callable(value) and not hasattr(value, "_values"):
            return
        prefix = "" if name == "self" else name + "."
        for attr, v in _members(value):
            if _is_data_array(v):
                key = wanted.get(id(v)) or (_array_key(v) if _array_key(v) in self.arrays else None)
                if key is not None:
                    by_key.setdefault(key, set()).add(prefix + attr)

    def label(self, key) -> str:
        return self.labels.get(key) or self.arrays[key]["param"]

    # -- structure -----------------------------------------------------------------------------

    def scope_tree(self, ignore_scopes) -> _Scope:
        """The root scope; an item is a launch index or a child ``_Scope``."""
        root = _Scope(None, {}, [])
        stack = [root]
        events = [] if ignore_scopes else list(self.tape.scopes)
        e = 0
        for k in range(len(self.nodes) + 1):
            while e < len(events) and events[e][0] <= k:
                _, name, meta = events[e]
                if name is not None:
                    child = _Scope(name, meta or {}, [])
                    stack[-1].items.append(child)
                    stack.append(child)
                elif len(stack) > 1:
                    stack.pop()
                e += 1
            if k < len(self.nodes):
                stack[-1].items.append(k)
        return root

    def segments(self, items, simplify):
        """Split a scope's items into runs of launches (merged when simplifying) and child scopes."""
        out, run = [], []
        for item in items + [None]:
            if isinstance(item, int):
                run.append(self.nodes[item])
                continue
            if run:
                out.extend(_merge_repeats(run) if simplify else [([n], 1) for n in run])
                run = []
            if item is not None:
                out.append(item)
        return out

    # -- rendering -----------------------------------------------------------------------------

    def render(self, simplify, hide_readonly, ignore_scopes, direction) -> str:
        lines = [
            "digraph tape {",
            f'    graph [rankdir={direction}, fontname="Helvetica,Arial,sans-serif", compound=true];',
            '    node [fontname="Helvetica,Arial,sans-serif", fontsize=11];',
            '    edge [fontname="Helvetica,Arial,sans-serif", fontsize=9];',
        ]
        visible = {k for k, v in self.arrays.items() if not hide_readonly or v["written"] or k in self.roles}
        shown_nodes = []
        self._render_scope(self.scope_tree(ignore_scopes), simplify, lines, 1, shown_nodes, [0])
        used = {key for n in shown_nodes for key, _, _ in n.edges} | set(self.roles)
        for key in sorted(used & visible, key=lambda k: self.arrays[k]["id"]):
            lines.append("    " + self._array_line(key))
        for n in shown_nodes:
            lines.extend("    " + e for e in self._edge_lines(n, visible))
        lines.append("}")
        return "\n".join(lines) + "\n"

    def _render_scope(self, scope, simplify, lines, depth, shown, counter):
        pad = "    " * depth
        for seg in self.segments(scope.items, simplify):
            if isinstance(seg, _Scope):
                counter[0] += 1
                color = seg.metadata.get("color") or "#76b900"
                lines.append(f"{pad}subgraph cluster_{counter[0]} {{")
                lines.append(f'{pad}    label={_dot_str(seg.name)}; style="rounded"; color={_dot_str(color)};')
                self._render_scope(seg, simplify, lines, depth + 1, shown, counter)
                lines.append(f"{pad}}}")
                continue
            group, count = seg
            if len(group) > 1:
                counter[0] += 1
                lines.append(f"{pad}subgraph cluster_{counter[0]} {{")
                lines.append(f'{pad}    label="repeated {count}x"; style="dashed"; color="#888888";')
            for n in group:
                n.count = count if len(group) == 1 else 1
                lines.append(f"{pad}{'    ' if len(group) > 1 else ''}{self._node_line(n)}")
                shown.append(n)
            if len(group) > 1:
                lines.append(f"{pad}}}")

    def _node_line(self, n) -> str:
        if n.is_func:
            return f'func_{n.index} [label={_dot_str(n.kernel)}, shape=note, style="filled", fillcolor="#fff3c4"];'
        times = f" (repeated {n.count}x)" if n.count > 1 else ""
        label = f"{n.kernel}{times}\ndim={n.dim}"
        return f'launch_{n.index} [label={_dot_str(label)}, shape=box, style="rounded,filled", fillcolor="#d6e4f0"];'

    def _array_line(self, key) -> str:
        info = self.arrays[key]
        a = info["array"]
        role = self.roles.get(key) or ("grad" if getattr(a, "grad", None) is not None else "nograd")
        dtype = getattr(a.dtype, "__name__", a.dtype)
        tooltip = f"array: dtype={dtype}, shape={tuple(a.shape)}, requires_grad={a.grad is not None}"
        return (
            f"array_{info['id']} [label={_dot_str(self.label(key))}, shape=ellipse, style=filled, "
            f"fillcolor={_dot_str(_ARRAY_COLORS[role])}, tooltip={_dot_str(tooltip)}];"
        )

    def _edge_lines(self, n, visible) -> list:
        out = []
        node = f"func_{n.index}" if n.is_func else f"launch_{n.index}"
        for key, param, kind in n.edges:
            if key not in visible:
                continue
            arr = f"array_{self.arrays[key]['id']}"
            if kind == "read":
                out.append(f"{arr} -> {node} [label={_dot_str(param)}];")
            elif kind == "write":
                out.append(f'{node} -> {arr} [label={_dot_str(param)}, style="bold"];')
            else:
                out.append(f'{node} -> {arr} [style="dashed", arrowhead=none];')
        return out


def _merge_repeats(nodes) -> list:
    """``[(group, count), ...]``: consecutive repetitions of the same launch sequence (same
    kernels, grids and array edges) become one group with its repeat count."""
    out, i = [], 0
    sigs = [n.signature() for n in nodes]
    while i < len(nodes):
        best_p, best_c = 1, 1
        for p in range(1, min(_MAX_PERIOD, (len(nodes) - i) // 2) + 1):
            c = 1
            while sigs[i + c * p : i + (c + 1) * p] == sigs[i : i + p]:
                c += 1
            if c > 1 and p * c > best_p * best_c:
                best_p, best_c = p, c
        out.append((nodes[i : i + best_p], best_c))
        i += best_p * best_c
    return out
