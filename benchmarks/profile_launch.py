"""Where the time of one ``wp.launch`` goes, for the trivial dim=1 kernels of the suite.

    python benchmarks/profile_launch.py [--cprofile]

Prints the end-to-end cost per launch (device="cpu" and device=None), then times each stage of
``weft/runtime/launch.py`` in isolation by calling its pieces the way ``launch()`` does. This is
a diagnostic that reaches into weft's internals: when ``launch.py`` is restructured, update the
stage list (stages that no longer exist are reported as unavailable, the rest still runs).
"""

import argparse
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import weft as wp

N = 50_000


@wp.kernel
def trivial_4arrays(
    a: wp.array(dtype=float), b: wp.array(dtype=float), c: wp.array(dtype=float), d: wp.array(dtype=float)
):
    i = wp.tid()  # noqa: F841 (the trivial kernel)


@wp.kernel
def trivial_float(s: float):
    i = wp.tid()  # noqa: F841 (the trivial kernel)


def per_call(fn, n=N, repeat=5):
    """Best-of-``repeat`` seconds per call of ``fn()`` (loop overhead subtracted)."""

    def loop(f):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        return time.perf_counter() - t0

    empty = min(loop(lambda: None) for _ in range(repeat))
    return max(min(loop(fn) for _ in range(repeat)) - empty, 0.0) / n


def us(t):
    return f"{t * 1e6:7.3f} us"


def stages(kernel, params):
    """(stage, seconds) for each step launch() takes, measured separately."""
    from weft import config
    from weft.runtime import launch as L
    from weft.runtime import module as M
    from weft.runtime import recording

    inst = L._instance_for(kernel, params)
    bounds = L.make_bounds(1)
    launcher = inst.launcher
    s = launcher.pack(params)
    ctx = L.launch_context_t()
    fn = M.runtime_launch()
    ptr = inst.forward_ptr
    a_ctx, a_args = ctypes.addressof(ctx), ctypes.addressof(s)
    arrays = [p for p in params if hasattr(p, "kernel_type")]

    def entry():
        if getattr(kernel, "_weft_kind", None) != "kernel":
            raise TypeError
        p = list(params)
        if len(p) != len(kernel.arg_names):
            raise TypeError

    def misc():  # launcher lookup, tid_ndim check
        la = inst.launcher or L.prepare(inst)
        if la.tid_ndim > 1:
            raise ValueError

    def pack_fresh():  # arguments other than the previous launch's: no reuse of its struct
        launcher._cached.clear()
        launcher.pack(params)

    def ctx_setup():
        c = L.launch_context_t()
        c.bounds = bounds

    def native_call():
        fn(ptr, a_ctx, a_args, bounds.size, config.cpu_threads, config.cpu_min_tasks_per_thread, config.cpu_adaptive)

    plain = ctypes.CDLL(None).getpid  # a no-argument libc call: the floor of any ctypes call
    rows = [
        ("entry checks + params list", entry),
        ("_check_device('cpu')", lambda: L._check_device("cpu")),
        ("_instance_for", lambda: L._instance_for(kernel, params)),
        ("make_bounds(1)", lambda: L.make_bounds(1)),
        ("launcher/tid checks", misc),
        ("Launcher.pack, same arguments as last launch", lambda: launcher.pack(params)),
        ("Launcher.pack, new arguments (total)", pack_fresh),
        ("  new args struct", launcher.struct),
    ]
    if arrays:
        a = arrays[0]
        ct = a.__ctype__()
        name = launcher.names[0]
        rows += [
            ("  per array: kernel_type()", a.kernel_type),
            ("  per array: __ctype__()", a.__ctype__),
            ("  per array: setattr struct field", lambda: setattr(s, name, ct)),
        ]
    else:
        name = launcher.names[0]
        conv = launcher.fields[0][2]
        rows += [
            ("  per scalar: converter", lambda: conv(1.5)),
            ("  per scalar: setattr struct field", lambda: setattr(s, name, 1.5)),
        ]
    rows += [
        ("active_tape()", recording.active_tape),
        ("run: context struct + bounds copy", ctx_setup),
        ("run: runtime_launch()", M.runtime_launch),
        ("run: ctypes.addressof x2", lambda: (ctypes.addressof(ctx), ctypes.addressof(s))),
        ("run: runtime launch call (kernel runs)", native_call),
        ("  floor: ctypes call of libc getpid()", plain),
        ("run (total)", lambda: L.run(inst, bounds, s, False)),
    ]
    out = []
    for label, f in rows:
        try:
            out.append((label, per_call(f, n=N // 2)))
        except Exception as e:  # noqa: BLE001 (internals moved: report, keep going)
            out.append((label, f"unavailable ({type(e).__name__}: {e})"))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cprofile", action="store_true", help="also print a cProfile of 20k launches")
    args = p.parse_args()
    arrs = [wp.zeros(16, dtype=float) for _ in range(4)]
    cases = [("4 array args", trivial_4arrays, arrs), ("1 float arg", trivial_float, [1.5])]
    print(f"weft {wp.__version__}, {wp.config.cpu_threads} threads, mode {wp.config.mode}; best of 5 x {N} launches\n")
    for title, k, params in cases:
        wp.launch(k, dim=1, inputs=params)  # build
        t_cpu = per_call(lambda k=k, params=params: wp.launch(k, dim=1, inputs=params, device="cpu"))
        t_none = per_call(lambda k=k, params=params: wp.launch(k, dim=1, inputs=params))
        cmd = wp.launch(k, dim=1, inputs=params, record_cmd=True)
        t_replay = per_call(cmd.launch)
        print(
            f"== {title}: wp.launch {us(t_cpu)} (device='cpu'), {us(t_none)} (device=None); wp.Launch replay {us(t_replay)}"
        )
        try:
            rows = stages(k, params)
        except Exception as e:  # noqa: BLE001
            print(f"   stage timing unavailable: {type(e).__name__}: {e}")
            continue
        for label, t in rows:
            print(f"   {label:<44} {us(t) if isinstance(t, float) else t}")
        print()
    if args.cprofile:
        import cProfile
        import pstats

        pr = cProfile.Profile()
        pr.enable()
        for _ in range(20_000):
            wp.launch(trivial_4arrays, dim=1, inputs=arrs, device="cpu")
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
