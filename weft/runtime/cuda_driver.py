"""Access to the CUDA driver API through cuda-python, imported lazily and guarded.

Contract: nothing here runs at import time. ``probe()`` imports ``cuda.bindings.driver``, calls
``cuInit`` and counts the devices, once per process; it never raises and returns the number of
devices together with the reason there are none (cuda-python missing, no driver library, ``cuInit``
failing...). ``api()`` returns the driver module after a successful probe. Every driver function of
cuda-python returns a tuple ``(CUresult, *values)``; ``check`` turns a failing result into a
``CudaError`` naming the call and the driver's message, and returns the values otherwise (one value
as itself, none as None).

At interpreter exit (``cuda._at_exit``, registered when GPUs are found) the devices are synchronised and
``exiting()`` turns true: the objects owning driver resources (memory, streams, events, modules,
graphs) then leave them to the end of the process instead of releasing them one by one while the
interpreter tears down, in whatever order, the objects those calls need. The driver library (and
NVRTC, ``pin_loaded_library``) stays loaded until the process ends, so no handler or destructor of
theirs can run after their code was unmapped.
"""

from __future__ import annotations

import ctypes
import os
import threading

_lock = threading.Lock()
_state: list = []  # [(driver module or None, device count, reason)] once probed
_exiting = [False]


class CudaError(RuntimeError):
    """A CUDA driver call failed."""


def probe() -> tuple[int, str]:
    """Initialise the driver once; return ``(device_count, reason_if_zero)``."""
    if not _state:
        with _lock:
            if not _state:
                _state.append(_probe())
    _, count, reason = _state[0]
    return count, reason


def _probe():
    try:
        from cuda.bindings import driver
    except ImportError as e:
        return None, 0, f"cuda-python is not installed ({e}); install it with `pip install cuda-python`"
    try:
        (err,) = driver.cuInit(0)
    except Exception as e:  # cuda-python raises when the driver library (libcuda) cannot be loaded
        return None, 0, f"the NVIDIA driver could not be loaded ({e})"
    if err != driver.CUresult.CUDA_SUCCESS:
        return None, 0, f"cuInit failed: {_error_text(driver, err)}"
    pin_loaded_library("libcuda.so")
    err, count = driver.cuDeviceGetCount()
    if err != driver.CUresult.CUDA_SUCCESS:
        return None, 0, f"cuDeviceGetCount failed: {_error_text(driver, err)}"
    if count == 0:
        return driver, 0, "the NVIDIA driver reports no CUDA device"
    return driver, count, ""


def driver_version() -> tuple[int, int] | None:
    """``(major, minor)`` of the installed CUDA driver (``cuDriverGetVersion``), or None where
    none could be loaded and initialised."""
    probe()
    driver = _state[0][0]
    if driver is None:
        return None
    err, version = driver.cuDriverGetVersion()
    if err != driver.CUresult.CUDA_SUCCESS:
        return None
    return int(version) // 1000, (int(version) % 1000) // 10


def pin_loaded_library(stem: str) -> str | None:
    """Keep an already loaded shared library (``libcuda.so``, ``libnvrtc.so``...) mapped until the
    process ends, whoever loaded it (Linux: reopened with RTLD_NOLOAD | RTLD_NODELETE). Returns its
    path, or None where it is not loaded or the platform has no such flags."""
    flags = getattr(os, "RTLD_NOLOAD", 0) | getattr(os, "RTLD_NODELETE", 0)
    if os.name != "posix" or not flags:
        return None
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "/" + stem in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            ctypes.CDLL(path, mode=flags)
            return path
        except OSError:
            continue
    return None


def exiting() -> bool:
    """True once the interpreter is exiting: driver resources are then left to the process's end."""
    return _exiting[0]


def mark_exiting() -> None:
    """From here on, objects owning driver resources do not release them (see the module doc)."""
    _exiting[0] = True


def api():
    """The ``cuda.bindings.driver`` module (after a successful ``probe``).

    Raises:
        RuntimeError: CUDA is not available, with the reason.
    """
    count, reason = probe()
    if count == 0:
        raise RuntimeError(f"CUDA is not available: {reason}")
    return _state[0][0]


def _error_text(driver, err) -> str:
    try:
        _, name = driver.cuGetErrorName(err)
        _, text = driver.cuGetErrorString(err)
        return f"{name.decode()} ({text.decode()})"
    except Exception:  # the error strings are a courtesy; the code itself is always shown
        return str(err)


def check(result, what: str):
    """Unpack a cuda-python result tuple, raising ``CudaError`` if the call failed.

    Args:
        result: The tuple a driver function returned.
        what: The call, for the message (e.g. ``"cuMemAlloc(1024 bytes) on cuda:0"``).

    Returns:
        None, the single value, or a tuple of the values.
    """
    err = result[0]
    if err != 0:  # CUresult is an int enum; CUDA_SUCCESS is 0
        driver = _state[0][0] if _state else None
        text = _error_text(driver, err) if driver is not None else str(err)
        raise CudaError(f"CUDA error in {what}: {text}")
    n = len(result)
    if n == 1:
        return None
    return result[1] if n == 2 else result[1:]
