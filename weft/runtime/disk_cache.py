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


def _tree_files(root: str, suffixes: tuple, skip=()) -> list:
    """``(name relative to root, stat)`` of the files under ``root`` ending in ``suffixes``, in
    name order, folders named in ``skip`` left out (``os.scandir``: a warm load stats them all)."""
    out = []
    todo = [("", root)]
    while todo:
        rel, folder = todo.pop()
        with os.scandir(folder) as entries:
            for e in entries:
                if e.is_dir():
                    if e.name not in skip:
                        todo.append((rel + e.name + "/", e.path))
                elif e.name.endswith(suffixes):
                    out.append((rel + e.name, e.path, e.stat()))
    out.sort()
    return out


def _tree_digest(files: list, label: str) -> str:
    """The sha256 of ``files`` (``_tree_files``), memoised in the cache folder under a name keyed by
    each file's size and modification time: reading and hashing the headers costs about 2 ms, and
    weft's Python sources more, most of a warm load."""
    stamp = "".join(f"{rel}|{st.st_size}|{st.st_mtime_ns}\n" for rel, _, st in files)
    memo = os.path.join(cache_dir(), f"{label}_{hashlib.sha256(stamp.encode()).hexdigest()[:16]}.txt")
    try:
        with open(memo) as f:
            digest = f.read()
        if len(digest) == 64:
            return digest
    except OSError:
        pass
    h = hashlib.sha256()
    for rel, path, _ in files:
        with open(path, "rb") as f:
            h.update(rel.encode() + f.read())
    _write_atomic(memo, h.hexdigest().encode())
    return h.hexdigest()


_digest_cache: dict = {}


def headers_digest() -> str:
    """sha256 of the native headers (once per process): part of every cache key."""
    if "headers" not in _digest_cache:
        _digest_cache["headers"] = _tree_digest(_tree_files(cpu.NATIVE_DIR, (".h", ".cpp")), "headers")
    return _digest_cache["headers"]


def compiler_digest() -> str:
    """sha256 of weft's Python sources (once per process): part of the fast cache key
    (cache_key.py), which does not see the generated code, so a change to the compiler (a
    builtin's rule, a codegen pass) must change it."""
    if "compiler" not in _digest_cache:
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        # weft's own Python sources (its compiler and runtime), the demos excepted
        files = _tree_files(package, (".py",), skip=("examples", "__pycache__"))
        _digest_cache["compiler"] = _tree_digest(files, "compiler")
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
