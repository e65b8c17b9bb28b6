"""The runtime's launch entry: the CPython-extension build of native/runtime.cpp, and the ctypes
library that stands in where no extension can be built. Both must run kernels and report errors."""

import os
import sysconfig

import numpy as np
import pytest

import weft as wp
from weft.runtime import launch as launch_mod
from weft.runtime import module as mod


@wp.kernel
def k_write_index(a: wp.array(dtype=float), idx: wp.array(dtype=int)):
    i = wp.tid()
    a[idx[i]] = float(i)


def _run_through(launch):
    saved = list(launch_mod._launch_fn)
    launch_mod._launch_fn[:] = [launch]
    try:
        n = 5000
        a = wp.zeros(n, dtype=float)
        wp.launch(k_write_index, dim=n, inputs=[a, wp.array(np.arange(n, dtype=np.int32)[::-1].copy(), dtype=int)])
        np.testing.assert_array_equal(a.numpy(), np.arange(n, dtype=np.float32)[::-1])
        bad = np.arange(n, dtype=np.int32)
        bad[-1] = n + 2
        with pytest.raises(IndexError, match=f"index {n + 2} is out of bounds"):
            wp.launch(k_write_index, dim=n, inputs=[a, wp.array(bad, dtype=int)])
        cmd = wp.launch(k_write_index, dim=n, inputs=[a, wp.array(bad, dtype=int)], record_cmd=True)
        with pytest.raises(IndexError):
            cmd.launch()
    finally:
        launch_mod._launch_fn[:] = saved


@pytest.mark.skipif(
    not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")), reason="no Python headers"
)
def test_extension_runtime_is_used_when_python_headers_exist():
    launch = mod.runtime_launch()
    assert type(launch).__name__ == "builtin_function_or_method"
    _run_through(launch)
    with pytest.raises(TypeError, match="6 integers"):
        launch(1, 2, 3)


def test_ctypes_runtime_runs_kernels_and_reports_errors():
    _run_through(mod.runtime_library().weft_launch)
