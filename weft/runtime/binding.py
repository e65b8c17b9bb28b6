"""What the runtime attaches to a compiled kernel instance: its native code and how to launch it.

Contract: every ``kernel.KernelInstance`` holds one ``Binding`` (``inst.binding``), empty until
the runtime builds or loads the instance's code. The compiler's part of an instance (its IR,
access facts, adjoint program: ``inst.compiled``) never changes; everything here is filled, and
reset when a definition changes, by the runtime alone:

- ``library``, ``forward_ptr``, ``backward_ptr``: the CPU library and entry-point addresses
  (``runtime/module.py``), with ``module_locs`` / ``loc_base`` mapping error ids to source
  locations and ``source`` the C++ the library was built from (read from ``source_path`` when
  first asked for, for a library loaded from the cache by its fast key);
- ``launcher``: the argument packer of the instance's signature (``runtime/launch.py``);
- ``cuda_functions``: per device ordinal, ``(module, forward, backward, locs)``
  (``runtime/cuda.py``).
"""

from __future__ import annotations


class Binding:
    """The runtime state of one kernel instance (see the module doc)."""

    __slots__ = (
        "backward_ptr",
        "cuda_functions",
        "forward_ptr",
        "launcher",
        "library",
        "loc_base",
        "module_locs",
        "_source",
        "source_path",
    )

    def __init__(self):
        self.library = None
        self.forward_ptr = None
        self.backward_ptr = None
        self.module_locs = None
        self.loc_base = 0
        self._source = None
        self.source_path = None
        self.launcher = None
        self.cuda_functions: dict = {}

    @property
    def source(self):
        """The C++ of the CPU library (None before it is built or loaded)."""
        if self._source is None and self.source_path is not None:
            with open(self.source_path) as f:
                self._source = f.read()
        return self._source

    @source.setter
    def source(self, text):
        self._source, self.source_path = text, None

    def reset_cpu(self):
        """Forget the CPU code (its module is rebuilt after a definition changed)."""
        self.forward_ptr = None
        self.backward_ptr = None
        self.launcher = None
