"""Kernels follow the code and values they depend on: a module rewritten and reloaded
(``importlib.reload``) runs its new code, a reloaded dependency module's funcs reach the kernels
of other modules calling them, and a global constant read inside a func is followed like one
read by the kernel itself."""

import importlib
import sys

import numpy as np

import weft as wp

DEPENDENCY = """
import weft as wp

@wp.func
def magic():
    return {value}
"""

DEPENDENT = """
import weft as wp
import {dep} as dep

@wp.kernel
def k(out: wp.array(dtype=float)):
    out[0] = dep.magic() * 2.0
"""

SQUARE = """
import weft as wp

@wp.func
def {name}(x: float):
    return x * x

@wp.kernel
def k(out: wp.array(dtype=float)):
    out[0] = {name}({arg})
"""


def write_module(tmp_path, monkeypatch, name, text):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / f"{name}.py").write_text(text)
    importlib.invalidate_caches()


def run(module) -> float:
    out = wp.zeros(1, dtype=float)
    wp.launch(module.k, 1, [out])
    return float(out.numpy()[0])


def test_a_rewritten_and_reloaded_module_runs_its_new_code(tmp_path, monkeypatch):
    write_module(tmp_path, monkeypatch, "reload_square", SQUARE.format(name="sqr", arg="2.0"))
    module = importlib.import_module("reload_square")
    assert run(module) == 4.0
    (tmp_path / "reload_square.py").write_text(SQUARE.format(name="multiply", arg="4.0") + "\n# longer\n")
    importlib.reload(module)
    assert run(module) == 16.0
    del sys.modules["reload_square"]


def test_a_reloaded_dependency_reaches_the_kernels_calling_it(tmp_path, monkeypatch):
    write_module(tmp_path, monkeypatch, "reload_dep", DEPENDENCY.format(value="1.5"))
    write_module(tmp_path, monkeypatch, "reload_user", DEPENDENT.format(dep="reload_dep"))
    dep = importlib.import_module("reload_dep")
    user = importlib.import_module("reload_user")
    assert run(user) == 3.0
    (tmp_path / "reload_dep.py").write_text(DEPENDENCY.format(value="2.25") + "\n# edited\n")
    importlib.reload(dep)
    assert run(user) == 4.5
    del sys.modules["reload_dep"], sys.modules["reload_user"]


BOUND_LOCALLY = """
import weft as wp
import {dep} as dep
import {other} as other

@wp.kernel
def k(out: wp.array(dtype=float)):
    f = dep.magic
    g, h = other.magic, dep.magic
    out[0] = f() + 10.0 * g() + 100.0 * h()
"""


def test_funcs_bound_to_locals_are_module_references_and_follow_reloads(tmp_path, monkeypatch):
    write_module(tmp_path, monkeypatch, "bound_dep", DEPENDENCY.format(value="1.0"))
    write_module(tmp_path, monkeypatch, "bound_other", DEPENDENCY.format(value="2.0"))
    write_module(tmp_path, monkeypatch, "bound_user", BOUND_LOCALLY.format(dep="bound_dep", other="bound_other"))
    dep, other = importlib.import_module("bound_dep"), importlib.import_module("bound_other")
    user = importlib.import_module("bound_user")
    module = user.k.module
    assert module.references == {dep.magic.module, other.magic.module}
    assert module in dep.magic.module.dependents and module in other.magic.module.dependents
    assert module.dependents == set()  # nothing calls the user module's funcs
    before = module.get_module_hash()
    assert run(user) == 121.0
    (tmp_path / "bound_other.py").write_text(DEPENDENCY.format(value="3.0") + "\n# edited\n")
    importlib.reload(other)
    assert module.get_module_hash() != before  # the kernel calls the new code
    assert run(user) == 131.0
    del sys.modules["bound_dep"], sys.modules["bound_other"], sys.modules["bound_user"]


SCALE = 2.0


@wp.func
def scaled(x: float):
    return SCALE * x


@wp.kernel
def k_scaled(out: wp.array(dtype=float)):
    out[0] = scaled(1.0)


def test_a_changed_constant_read_in_a_func_is_followed():
    global SCALE
    out = wp.zeros(1, dtype=float)
    wp.launch(k_scaled, 1, [out])
    assert out.numpy()[0] == 2.0
    try:
        SCALE = 3.0
        wp.launch(k_scaled, 1, [out])
        np.testing.assert_array_equal(out.numpy(), [3.0])
    finally:
        SCALE = 2.0


class _Settings:
    gain = 2.0


SETTINGS = _Settings()


@wp.kernel
def k_static_attribute(out: wp.array(dtype=float)):
    out[0] = wp.static(SETTINGS.gain)


def test_mark_modified_rebuilds_after_an_in_place_change():
    out = wp.zeros(1, dtype=float)
    wp.launch(k_static_attribute, 1, [out])
    try:
        SETTINGS.gain = 5.0  # an attribute changed in place: the global itself is the same object
        wp.launch(k_static_attribute, 1, [out])
        assert out.numpy()[0] == 2.0
        k_static_attribute.module.mark_modified()
        wp.launch(k_static_attribute, 1, [out])
        assert out.numpy()[0] == 5.0
    finally:
        SETTINGS.gain = 2.0


TRANSIENT = """
import weft as wp

@wp.struct
class Data:
    x: wp.array(dtype=int)

@wp.func
def increment(x: int):
    return x + 123  # replaced by the definition below

@wp.func
def increment(x: int):
    return x + 1

@wp.kernel
def compute(data: Data):
    data.x[0] = increment(data.x[0])
"""


def test_a_module_executed_twice_lists_each_func_and_struct_once(tmp_path):
    import importlib.util

    path = tmp_path / "transient_code.py"
    path.write_text(TRANSIENT)
    for _ in range(2):  # the same code run again under the same module name
        spec = importlib.util.spec_from_file_location("weft_transient_code", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    weft_module = module.compute.module
    assert list(weft_module.structs) == ["Data"] and weft_module.structs["Data"] is module.Data
    assert list(weft_module.functions) == ["increment"]
    data = module.Data()
    data.x = wp.array([123], dtype=int)
    wp.launch(module.compute, dim=1, inputs=[data])
    assert data.x.numpy()[0] == 124
