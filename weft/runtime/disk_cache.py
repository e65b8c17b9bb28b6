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


def _headers_digest() -> str:
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(cpu.NATIVE_DIR)):  # subfolders too (native/geometry)
        dirs.sort()
        for name in sorted(files):
            if name.endswith((".h", ".cpp")):
                path = os.path.join(root, name)
                with open(path, "rb") as f:
                    h.update(os.path.relpath(path, cpu.NATIVE_DIR).encode() + f.read())
    return h.hexdigest()


_header_digest_cache: list = []


def headers_digest() -> str:
    """sha256 of the native headers (once per process): part of every cache key."""
    if not _header_digest_cache:
        _header_digest_cache.append(_headers_digest())
    return _header_digest_cache[0]


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
