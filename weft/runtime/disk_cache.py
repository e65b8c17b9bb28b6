"""The kernel cache on disk: where it is, what every cache key starts with, and safe reads and writes.

Contract: ``cache_dir()`` is the cache folder (``config.kernel_cache_dir``, ``$WEFT_CACHE_DIR`` or
``~/.cache/weft/<VERSION>``), created on demand. ``VERSION`` and ``headers_digest()`` (a sha256 of
the native headers) enter every key, CPU and CUDA. ``write_atomic`` writes through a temp file and
``os.replace``, so no reader sees half a file; ``read_verified`` returns an entry's bytes only when
they match the checksum stored beside them. Used by the CPU build (``module``) and NVRTC (``nvrtc``).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading

from .. import config
from . import cpu
from .runtime_source import runtime_source_hash

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


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _scan_sources() -> tuple:
    """``(folders, files)`` under the weft package: ``{relative folder: mtime_ns}`` and the relative
    names of its Python sources and native headers, the demos left out (``os.scandir``)."""
    folders, files = {}, []
    todo = [""]
    while todo:
        rel = todo.pop()
        path = os.path.join(_PACKAGE, rel)
        folders[rel] = os.stat(path).st_mtime_ns
        with os.scandir(path) as entries:
            for e in entries:
                if e.name.endswith((".py", ".h", ".cpp")):
                    files.append(rel + e.name)
                elif e.name not in ("examples", "__pycache__") and e.is_dir():
                    todo.append(rel + e.name + "/")
    return folders, sorted(files)


def _source_files() -> list:
    """``(relative name, stat)`` of weft's Python sources and native headers. The list of names is
    memoised in the cache folder with the modification times of their folders (a file added,
    removed or renamed changes its folder's): a warm load then stats each file once instead of
    listing the folders, about half the time."""
    listing = os.path.join(cache_dir(), f"sources_{hashlib.sha256(_PACKAGE.encode()).hexdigest()[:16]}.json")
    fd = os.open(_PACKAGE, os.O_RDONLY)
    try:  # (stat relative to the package's folder: a third faster than by full path)
        try:
            with open(listing) as f:
                folders, files = json.load(f)
            if any(os.stat(rel or ".", dir_fd=fd).st_mtime_ns != t for rel, t in folders.items()):
                raise OSError("changed")
            stats = [os.stat(rel, dir_fd=fd) for rel in files]
        except (OSError, ValueError, TypeError, AttributeError):
            folders, files = _scan_sources()
            _write_atomic(listing, json.dumps([folders, files]).encode())
            stats = [os.stat(rel, dir_fd=fd) for rel in files]
    finally:
        os.close(fd)
    return list(zip(files, stats))


_digest_cache: dict = {}


def _digests() -> dict:
    """sha256 digests of the native headers and of weft's Python sources (once per process),
    memoised in the cache folder under a name keyed by each file's size and modification time:
    reading and hashing them costs several milliseconds, most of a warm load."""
    if _digest_cache:
        return _digest_cache
    files = _source_files()
    stamp = "".join(f"{rel}|{st.st_size}|{st.st_mtime_ns}\n" for rel, st in files)
    memo = os.path.join(cache_dir(), f"digests_{hashlib.sha256(stamp.encode()).hexdigest()[:16]}.txt")
    try:
        with open(memo) as f:
            headers, compiler, runtime = f.read().split()
        if len(headers) == len(compiler) == 64:
            _digest_cache.update(headers=headers, compiler=compiler, runtime=runtime)
            return _digest_cache
    except (OSError, ValueError):
        pass
    native = os.path.relpath(cpu.NATIVE_DIR, _PACKAGE) + "/"
    h, c = hashlib.sha256(), hashlib.sha256()
    for rel, _ in files:
        with open(os.path.join(_PACKAGE, rel), "rb") as f:
            if rel.endswith(".py"):
                c.update(rel.encode() + f.read())
            elif rel.startswith(native):  # named as before: relative to the headers' folder
                h.update(rel[len(native) :].encode() + f.read())
    _digest_cache.update(headers=h.hexdigest(), compiler=c.hexdigest(), runtime=runtime_source_hash())
    _write_atomic(memo, " ".join(_digest_cache[k] for k in ("headers", "compiler", "runtime")).encode())
    return _digest_cache


def headers_digest() -> str:
    """sha256 of the native headers (once per process): part of every cache key."""
    return _digests()["headers"]


def compiler_digest() -> str:
    """sha256 of weft's Python sources (once per process): part of the fast cache key
    (cache_key.py), which does not see the generated code, so a change to the compiler (a
    builtin's rule, a codegen pass) must change it."""
    return _digests()["compiler"]


def runtime_digest() -> str:
    """``runtime_source.runtime_source_hash()`` (the CPU runtime's source, stamped on the runtime
    extension built at install), memoised with the other digests: the files are stat'ed anyway."""
    return _digests()["runtime"]


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
