"""The kernel cache on disk: where it is, what every cache key starts with, and safe reads and writes.

Contract: ``cache_dir()`` is the cache folder (``config.kernel_cache_dir``, ``$WEFT_CACHE_DIR`` or
``~/.cache/weft/<VERSION>``), created on demand. ``VERSION`` and ``headers_digest()`` (a sha256 of
the native headers) enter every key, CPU and CUDA. ``write_atomic`` writes through a temp file and
``os.replace``, so no reader sees half a file; ``read_verified`` returns an entry's bytes only when
they match the checksum stored beside them. Used by the CPU build (``module``) and NVRTC (``nvrtc``).
"""

from __future__ import annotations

import hashlib
import os
import threading

from .. import config
from . import cpu

VERSION = "0.1.0"


def cache_dir() -> str:
    """The kernel cache folder (created on demand)."""
    d = (
        config.kernel_cache_dir
        or os.environ.get("WEFT_CACHE_DIR")
        or os.path.join(os.path.expanduser("~"), ".cache", "weft", VERSION)
    )
    os.makedirs(d, exist_ok=True)
    return d


def _header_files() -> list:
    paths = []
    for root, dirs, files in sorted(os.walk(cpu.NATIVE_DIR)):  # subfolders too (native/geometry)
        dirs.sort()
        paths += [os.path.join(root, name) for name in sorted(files) if name.endswith((".h", ".cpp"))]
    return paths


def _python_files() -> list:
    """weft's own Python sources (its compiler and runtime), the demos excepted."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = []
    for root, dirs, files in sorted(os.walk(package)):
        dirs[:] = sorted(d for d in dirs if d not in ("examples", "__pycache__"))
        paths += [os.path.join(root, name) for name in sorted(files) if name.endswith(".py")]
    return paths


def _tree_digest(paths: list, root: str, label: str) -> str:
    """The sha256 of the files ``paths`` (named relative to ``root``), memoised in the cache folder
    under a name keyed by each file's size and modification time: reading and hashing the headers
    costs about 2 ms, a fifth of a warm load."""
    stamp = hashlib.sha256()
    for path in paths:
        st = os.stat(path)
        stamp.update(f"{os.path.relpath(path, root)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    memo = os.path.join(cache_dir(), f"{label}_{stamp.hexdigest()[:16]}.txt")
    try:
        with open(memo) as f:
            digest = f.read()
        if len(digest) == 64:
            return digest
    except OSError:
        pass
    h = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            h.update(os.path.relpath(path, root).encode() + f.read())
    _write_atomic(memo, h.hexdigest().encode())
    return h.hexdigest()


_digest_cache: dict = {}


def headers_digest() -> str:
    """sha256 of the native headers (once per process): part of every cache key."""
    if "headers" not in _digest_cache:
        _digest_cache["headers"] = _tree_digest(_header_files(), cpu.NATIVE_DIR, "headers")
    return _digest_cache["headers"]


def compiler_digest() -> str:
    """sha256 of weft's Python sources (once per process): part of the fast cache key
    (cache_key.py), which does not see the generated code, so a change to the compiler (a
    builtin's rule, a codegen pass) must change it."""
    if "compiler" not in _digest_cache:
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        _digest_cache["compiler"] = _tree_digest(_python_files(), package, "compiler")
    return _digest_cache["compiler"]


def read_verified(path: str, sum_path: str):
    """The bytes of a cache entry, or None when it is missing or does not match its checksum
    (a damaged or half-written entry: the caller rebuilds it)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        with open(sum_path, "rb") as f:
            expected = f.read().decode().strip()
    except OSError:
        return None
    return data if hashlib.sha256(data).hexdigest() == expected else None


def _write_atomic(path, data: bytes):
    """Write ``data`` to ``path`` through a temp file and ``os.replace`` (no half-written file)."""
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
