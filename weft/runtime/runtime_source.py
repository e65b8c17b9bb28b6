"""The identity of the CPU runtime's source (native/runtime.cpp and the headers it includes).

Shared by setup.py, which compiles the runtime into the ``weft._runtime`` extension at install
time and stamps it with this hash, and by module.py, which uses that extension only when the
stamp matches the source it would build (an editable install whose runtime.cpp changed since
``pip install`` builds a fresh one into the kernel cache instead). No imports beyond the standard
library: setup.py loads this file before weft's dependencies are installed.
"""

import hashlib
import os

NATIVE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "native")
FILES = ("runtime.cpp", "core.h", "sort.h")


def runtime_source_hash(native_dir: str = NATIVE_DIR) -> str:
    h = hashlib.sha256()
    for name in FILES:
        with open(os.path.join(native_dir, name), "rb") as f:
            h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()[:32]
