"""``kernel.adj``: what a kernel does with its parameters, as Warp's ``Kernel.adj`` shows it.

``kernel.adj.args`` lists the kernel's parameters with the compiler's access analysis
(``codegen/access.py``): ``is_read`` / ``is_write`` tell whether the kernel (or a func it calls)
reads or writes the array a parameter names (an atomic both reads and writes; struct
parameters count their array fields). It describes the kernel's most recently compiled
specialisation, compiling the default one if none is.
"""

from __future__ import annotations


class ParamAccess:
    """One kernel parameter: ``label`` (its name), ``type``, ``is_read``, ``is_write``."""

    __slots__ = ("is_read", "is_write", "label", "type")

    def __init__(self, label: str, type_, is_read: bool, is_write: bool):
        self.label, self.type, self.is_read, self.is_write = label, type_, is_read, is_write

    def __repr__(self):
        return f"ParamAccess({self.label!r}, read={self.is_read}, write={self.is_write})"


class KernelAccess:
    """``kernel.adj``: ``args`` (a ``ParamAccess`` per parameter, in order) and ``key``."""

    def __init__(self, kernel):
        self.key = kernel.key
        instances = list(kernel._instances.values())
        inst = instances[-1] if instances else kernel.default_instance()
        access = inst.access
        self.args = []
        for p in inst.ir.params:
            modes = set()
            for path, used in access.items():  # paths: (parameter, field, ...)
                if path[0] == p.name:
                    modes |= set(used)
            self.args.append(ParamAccess(p.name, p.var.type, "read" in modes, "write" in modes))
