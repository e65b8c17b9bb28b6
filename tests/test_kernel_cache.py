"""The fast cache key (runtime/cache_key.py), in new processes over one cache folder: a warm
process loads a module's library without lowering any kernel, and every change to what the
kernels compile to (a global or closure constant, an attribute chain into another module, a
called func's source, a struct's fields, the kernel's own source, the mode, enable_backward)
misses it, lowers, and computes the new numbers. A damaged entry is ignored."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.fixed_device("the host C++ build and its cache, in new processes")

MODULE = """
import os

import weft as wp

import kc_cfg

SCALE = float(os.environ.get("KC_SCALE", "2.0"))
if os.environ.get("KC_NOBACK"):
    wp.set_module_options({"enable_backward": False})


@wp.struct
class Params:
    {STRUCT_EXTRA}a: float


@wp.func
def bump(x: float):
    return x + {FUNC_ADD}


def make_scaled(c):
    @wp.kernel
    def k_closure(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = x[i] * c

    return k_closure


k_closure = make_scaled(float(os.environ.get("KC_CLOSURE", "5.0")))


@wp.kernel
def k_main(x: wp.array(dtype=float), p: Params, y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = bump(x[i]) * SCALE * p.a + kc_cfg.OFFSET{KERNEL_EXTRA}


def run(wp):
    x = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    z = wp.zeros(2, dtype=float)
    p = Params()
    p.a = 1.5
    tape = wp.Tape()
    with tape:
        wp.launch(k_main, dim=2, inputs=[x, p, y])
    wp.launch(k_closure, dim=2, inputs=[x, z])
    out = {"y": y.numpy().tolist(), "z": z.numpy().tolist()}
    if os.environ.get("KC_MUTATE"):  # a global changed after the warm load: rebuilt at the next launch
        global SCALE
        out["lowered_before_mutate"] = LOWERED[0]
        SCALE = 4.0
        y2 = wp.zeros(2, dtype=float)
        wp.launch(k_main, dim=2, inputs=[x, p, y2])
        out["y_mutated"] = y2.numpy().tolist()
    if os.environ.get("KC_BACKWARD"):
        out["lowered_before_backward"] = LOWERED[0]
        tape.backward(grads={y: wp.ones(2, dtype=float)})
        out["grad"] = x.grad.numpy().tolist()
    return out
"""

DRIVER = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import weft as wp
from weft.codegen import pipeline

wp.config.optimization_level = 0  # compiles faster; the same in every run
wp.config.mode = os.environ.get("KC_MODE", "debug")
LOWERED = [0]
real = pipeline.compile_function


def counting(*args, **kwargs):
    LOWERED[0] += 1
    return real(*args, **kwargs)


pipeline.compile_function = counting
import builtins

builtins.LOWERED = LOWERED  # kc_mod.run reads it (before a backward pass)
import kc_mod

out = kc_mod.run(wp)
out["lowered"] = LOWERED[0]
print("RESULT " + json.dumps(out))
"""


def write_module(folder, struct_extra="", func_add="1.0", kernel_extra=""):
    text = MODULE.replace("{STRUCT_EXTRA}", struct_extra).replace("{FUNC_ADD}", func_add)
    text = text.replace("{KERNEL_EXTRA}", kernel_extra)
    (folder / "kc_mod.py").write_text(text)
    (folder / "kc_cfg.py").write_text('import os\n\nOFFSET = float(os.environ.get("KC_OFFSET", "0.0"))\n')


def run(folder, cache, **env):
    """Run the driver in a new process; its results and how many functions it lowered."""
    full = dict(os.environ, WEFT_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1")
    full.pop("WEFT_CPU_THREADS", None)
    full.update({k: str(v) for k, v in env.items()})
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(DRIVER), str(folder)],
        capture_output=True,
        text=True,
        env=full,
        cwd=str(folder),
        timeout=300,
        check=False,
    )
    lines = [line for line in p.stdout.splitlines() if line.startswith("RESULT ")]
    assert p.returncode == 0 and lines, p.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT ") :])


def expected(scale=2.0, add=1.0, a=1.5, offset=0.0, closure=5.0):
    xs = [1.0, 2.0]
    return {"y": [(x + add) * scale * a + offset for x in xs], "z": [x * closure for x in xs]}


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """A module folder and a cache folder that a first process filled."""
    folder = tmp_path_factory.mktemp("kc_src")
    cache = tmp_path_factory.mktemp("kc_cache")
    write_module(folder)
    cold = run(folder, cache)
    assert cold["lowered"] > 0
    assert cold["y"] == pytest.approx(expected()["y"]) and cold["z"] == pytest.approx(expected()["z"])
    return folder, cache


def check(result, **values):
    want = expected(**values)
    assert result["y"] == pytest.approx(want["y"]) and result["z"] == pytest.approx(want["z"]), result


def test_warm_process_lowers_nothing(warm):
    folder, cache = warm
    result = run(folder, cache)
    assert result["lowered"] == 0
    check(result)


def test_global_changed_after_a_warm_load_rebuilds(warm):
    folder, cache = warm
    result = run(folder, cache, KC_MUTATE="1")
    assert result["lowered_before_mutate"] == 0 and result["lowered"] > 0
    check(result)
    assert result["y_mutated"] == pytest.approx(expected(scale=4.0)["y"])


@pytest.mark.parametrize(
    "env, values",
    [
        ({"KC_SCALE": "3.0"}, {"scale": 3.0}),  # a module global baked in as a constant
        ({"KC_OFFSET": "0.25"}, {"offset": 0.25}),  # an attribute chain into another module
        ({"KC_CLOSURE": "7.0"}, {"closure": 7.0}),  # a closure cell of a kernel factory
    ],
    ids=["global", "attribute", "closure"],
)
def test_changed_value_misses_the_fast_key(warm, env, values):
    folder, cache = warm
    result = run(folder, cache, **env)
    assert result["lowered"] > 0
    check(result, **values)
    if "KC_SCALE" in env:  # the new build is found by the next process, beside the first one
        again = run(folder, cache, **env)
        assert again["lowered"] == 0
        check(again, **values)
        assert run(folder, cache)["lowered"] == 0


@pytest.mark.parametrize(
    "edit, values",
    [
        ({"func_add": "0.5"}, {"add": 0.5}),  # a called func's source
        ({"struct_extra": "b: int\n    "}, {}),  # a struct field before `a`: another layout
        ({"kernel_extra": " - 1.0"}, {"offset": -1.0}),  # the kernel's own source
    ],
    ids=["func", "struct", "kernel"],
)
def test_changed_source_misses_the_fast_key(tmp_path, warm, edit, values):
    _, cache = warm
    write_module(tmp_path, **edit)
    result = run(tmp_path, cache)
    assert result["lowered"] > 0
    check(result, **values)


def test_mode_and_enable_backward_key_the_entry(warm):
    folder, cache = warm
    release = run(folder, cache, KC_MODE="release")
    assert release["lowered"] > 0
    check(release)
    assert run(folder, cache, KC_MODE="release")["lowered"] == 0
    no_backward = run(folder, cache, KC_NOBACK="1")
    assert no_backward["lowered"] > 0
    check(no_backward)


def test_backward_after_a_warm_load_lowers_then(warm):
    folder, cache = warm
    result = run(folder, cache, KC_BACKWARD="1")
    assert result["lowered_before_backward"] == 0 and result["lowered"] > 0
    check(result)
    assert result["grad"] == pytest.approx([2.0 * 1.5, 2.0 * 1.5])


def test_damaged_entry_is_ignored(warm):
    folder, cache = warm
    entries = [p for p in os.listdir(cache) if p.startswith("kc_mod_fast_")]
    assert entries
    for name in entries:
        path = os.path.join(cache, name)
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace('"tid_ndim": 1', '"tid_ndim": 2'))
    result = run(folder, cache)
    assert result["lowered"] > 0  # the checksum no longer matches: lowered, and the entry written again
    check(result)
    assert run(folder, cache)["lowered"] == 0
