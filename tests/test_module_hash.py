"""Module.hash_module(): a content hash of what a module's kernels compute (their code, the funcs
and constants they use, the build options), equal for the same code defined again; and closure
constants a kernel baked in make it rebuild when they change, like module globals."""

import importlib.util
import sys

import numpy as np

import weft as wp
from weft.codegen.source import Source

TEMPLATE = """
import weft as wp

@wp.func
def value():
    return {value}

@wp.kernel
def k(out: wp.array(dtype=int)):
    out[0] = value() + {offset}
"""


def load(tmp_path, name, value, offset=0):
    path = tmp_path / f"{name}.py"
    path.write_text(TEMPLATE.format(value=value, offset=offset))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module, wp.get_module(name)


def test_the_same_code_hashes_the_same_and_other_code_differently(tmp_path):
    a, ma = load(tmp_path, "hash_mod_a", 17)
    _, mb = load(tmp_path, "hash_mod_b", 42)
    _, mc = load(tmp_path, "hash_mod_c", 17)
    _, md = load(tmp_path, "hash_mod_d", 17, offset=1)
    h = ma.hash_module()
    assert isinstance(h, bytes) and len(h) == 32
    assert h == mc.hash_module()  # another module, same code
    assert h != mb.hash_module()  # a called func returns another value
    assert h != md.hash_module()  # the kernel itself differs
    assert h == ma.hash_module()  # stable
    out = wp.zeros(1, dtype=int)
    wp.launch(a.k, 1, [out])
    assert out.numpy()[0] == 17 and ma.hash_module() == h  # building does not change it


def test_options_change_the_hash(tmp_path):
    _, m = load(tmp_path, "hash_mod_opts", 3)
    before = m.hash_module()
    m.set_options({"mode": "release"})
    assert m.hash_module() != before
    m.set_options({"mode": None})
    assert m.hash_module() == before


def make_scaled_kernel():
    scale = 2.0

    @wp.kernel
    def k_scaled(a: wp.array(dtype=float)):
        a[0] = scale

    def set_scale(v):
        nonlocal scale
        scale = v

    return k_scaled, set_scale


def test_a_changed_closure_constant_rebuilds_the_kernel_and_changes_the_hash():
    k, set_scale = make_scaled_kernel()
    a = wp.zeros(1, dtype=float)
    wp.launch(k, 1, [a])
    assert a.numpy()[0] == 2.0
    module = wp.get_module(k.__module__)
    h2 = module.hash_module()
    set_scale(5.0)
    assert module.hash_module() != h2
    wp.launch(k, 1, [a])
    np.testing.assert_array_equal(a.numpy(), [5.0])
    set_scale(2.0)
    assert module.hash_module() == h2


def test_kernels_compile_the_code_python_ran_even_if_the_file_changes(tmp_path):
    module, m = load(tmp_path, "hash_mod_edited", 7, offset=1)
    path = tmp_path / "hash_mod_edited.py"
    path.write_text("# edited after import: other lines, other code\n\n\n" + TEMPLATE.format(value=99, offset=0))
    assert "value() + 1" in Source(module.k.pyfunc).text  # the text seen at import, not the file's
    out = wp.zeros(1, dtype=int)
    wp.launch(module.k, 1, [out])  # first launch: compiled now
    assert out.numpy()[0] == 8
    path.unlink()
    _, again = load_text(tmp_path, "hash_mod_same", TEMPLATE.format(value=7, offset=1))
    assert m.hash_module() == again.hash_module()


def load_text(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module, wp.get_module(name)


@wp.func
def double_it(x: float):
    return 2.0 * x


@wp.func
def triple_it(x: float):
    return 3.0 * x


@wp.func
def apply_target(f: wp.Function, x: float):
    return f(x)


TARGET = double_it


@wp.kernel
def k_through_alias(out: wp.array(dtype=float)):
    out[0] = apply_target(TARGET, 1.0)
    out[1] = TARGET(2.0)


def test_rebinding_a_global_func_alias_rebuilds_and_rehashes():
    global TARGET
    module = wp.get_module(k_through_alias.__module__)
    out = wp.zeros(2, dtype=float)
    try:
        wp.launch(k_through_alias, 1, [out])
        np.testing.assert_array_equal(out.numpy(), [2.0, 4.0])
        h_double = module.hash_module()
        TARGET = triple_it
        wp.launch(k_through_alias, 1, [out])
        np.testing.assert_array_equal(out.numpy(), [3.0, 6.0])
        assert module.hash_module() != h_double
        TARGET = wp.sin  # a builtin works too
        wp.launch(k_through_alias, 1, [out])
        np.testing.assert_allclose(out.numpy(), np.sin([1.0, 2.0]), rtol=1e-6)
    finally:
        TARGET = double_it
    assert module.hash_module() == h_double


BROKEN = """
import weft as wp

@wp.func
def fn(value: int):
    wp.print(value + {delta})

@wp.kernel
def k():
    fn(1)
    undefined_name_here(2)
"""


def test_modules_whose_kernels_do_not_compile_still_hash_their_code(tmp_path):
    _, a = load_text(tmp_path, "hash_broken_a", BROKEN.format(delta=0))
    _, b = load_text(tmp_path, "hash_broken_b", BROKEN.format(delta=0))
    _, c = load_text(tmp_path, "hash_broken_c", BROKEN.format(delta=1))
    assert a.hash_module() == b.hash_module()
    assert a.hash_module() != c.hash_module()  # only a func the broken kernel calls differs
