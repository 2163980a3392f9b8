"""Host cost around a kernel on the CPU target: calling a tiny kernel with three numpy
arrays against numpy's own `np.add(a, b, out=c)` (A/B interleaved, medians), in-process
cache hits (the @tilelang.jit factory's dict, tilelang.compile of the same PrimFunc,
and of another PrimFunc object with the same IR, which reaches the core's memory
layer) and a disk-cache hit in a fresh process. Prints a table and appends it to
bench/RESULTS.md (date, commit, "CPU").

Run: TILELANG_DEV_BUILD_DIR=build/dev PYTHONPATH=python python bench/launch_overhead.py
"""

import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import tilelang
import tilelang.language as T
from results import commit
from tilelang.language.prim_func import PrimFunc

HERE = os.path.dirname(os.path.abspath(__file__))
ROUNDS, CALLS = 31, 2000


@tilelang.jit(target="cpu")
def vadd(n=16):
    @T.prim_func
    def vadd_kernel(
        A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")
    ):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                C[i] = A[i] + B[i]

    return vadd_kernel


def per_call_us(fn, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def interleaved(a_fn, b_fn, calls=CALLS, rounds=ROUNDS):
    """Medians of per-call microseconds of a_fn and b_fn, measured in alternation."""
    a_times, b_times = [], []
    for _ in range(rounds):
        a_times.append(per_call_us(a_fn, calls))
        b_times.append(per_call_us(b_fn, calls))
    return statistics.median(a_times), statistics.median(b_times)


DISK_HIT = r"""
import sys, time
t0 = time.perf_counter()
import tilelang
sys.path.insert(0, sys.argv[1])
import launch_overhead as lo
t1 = time.perf_counter()
k = lo.vadd.factory(16)
t2 = time.perf_counter()
kernel = tilelang.compile(k, target="cpu")
t3 = time.perf_counter()
assert tilelang._C.compile_count() == 0, "expected a disk hit"
print((t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3)
"""


def disk_hit_ms(cache_dir, runs=7):
    env = dict(os.environ, TILELANG_CACHE_DIR=cache_dir)
    rows = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", DISK_HIT, HERE],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append([float(x) for x in out.stdout.split()])
    return [statistics.median(col) for col in zip(*rows)]


def main():
    with tempfile.TemporaryDirectory(prefix="tl-bench-cache-") as cache_dir:
        os.environ["TILELANG_CACHE_DIR"] = cache_dir
        kernel = vadd(16)  # compiles and fills the disk cache
        a = np.random.default_rng(0).standard_normal(16).astype(np.float32)
        b = np.random.default_rng(1).standard_normal(16).astype(np.float32)
        c = np.empty_like(a)
        kernel(a, b, c)
        np.testing.assert_allclose(c, a + b, rtol=1e-6)

        ours, numpy_add = interleaved(lambda: kernel(a, b, c), lambda: np.add(a, b, out=c))
        func = vadd.factory(16)
        jit_hit, compile_hit = interleaved(
            lambda: vadd(16), lambda: tilelang.compile(func, target="cpu"), calls=200, rounds=11
        )
        core_hit, _ = interleaved(
            lambda: tilelang.compile(PrimFunc(func.core), target="cpu"),
            lambda: None,
            calls=200,
            rounds=11,
        )
        import_ms, trace_ms, disk_ms = disk_hit_ms(cache_dir)

    rows = [
        (
            "kernel(a, b, c), 3 numpy float32[16]",
            f"{ours:.2f} µs",
            f"np.add(a, b, out=c): {numpy_add:.2f} µs",
            f"{ours / numpy_add:.2f}x",
        ),
        ("in-process hit: @tilelang.jit factory call", f"{jit_hit:.2f} µs", "", ""),
        ("in-process hit: tilelang.compile (same PrimFunc)", f"{compile_hit:.2f} µs", "", ""),
        ("  another PrimFunc, same IR (core memory layer)", f"{core_hit:.2f} µs", "", ""),
        (
            "disk-cache hit, fresh process (compile call)",
            f"{disk_ms:.2f} ms",
            "5 ms (H200 target)",
            f"{disk_ms / 5:.2f}x",
        ),
        (
            "  fresh process: import tilelang / trace",
            f"{import_ms:.0f} ms / {trace_ms:.1f} ms",
            "",
            "",
        ),
    ]
    lines = [
        (
            f"### launch_overhead — {datetime.date.today()} — commit {commit()} — CPU "
            f"({platform.machine()}, {os.cpu_count()} cores)"
        ),
        "",
        f"medians of {ROUNDS} interleaved rounds of {CALLS} calls",
        "",
        "| what | ours | reference | ratio ours/reference |",
        "| --- | --- | --- | --- |",
    ]
    lines += [f"| {w} | {o} | {r} | {x} |" for w, o, r, x in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
        f.write("\n" + text)


if __name__ == "__main__":
    main()
