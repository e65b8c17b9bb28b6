"""Build step of the package: the CPU runtime (weft/native/runtime.cpp, the thread pool every CPU
launch goes through) compiled as the extension module ``weft._runtime``, so that a first kernel
build does not also compile the runtime. Optional: without a C++ compiler or Python headers the
install still succeeds, and weft builds the runtime into its kernel cache on first use, as it
also does when runtime.cpp changed after an editable install (the source hash below no longer
matches). Everything else is declared in pyproject.toml."""

import os
import runpy

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
NATIVE = os.path.join("weft", "native")
source_hash = runpy.run_path(os.path.join(HERE, "weft", "runtime", "runtime_source.py"))["runtime_source_hash"]

runtime = Extension(
    "weft._runtime",
    sources=[os.path.join(NATIVE, "runtime.cpp")],
    depends=[os.path.join(NATIVE, name) for name in ("core.h", "sort.h")],
    include_dirs=[NATIVE],
    define_macros=[
        ("WEFT_PYTHON_MODULE", "1"),
        ("WEFT_RUNTIME_INIT", "PyInit__runtime"),
        ("WEFT_RUNTIME_NAME", '"weft._runtime"'),
        ("WEFT_RUNTIME_SOURCE_HASH", f'"{source_hash(os.path.join(HERE, NATIVE))}"'),
    ],
    extra_compile_args=["-std=c++17", "-O2"],
    language="c++",
    optional=True,
)

setup(ext_modules=[runtime])
