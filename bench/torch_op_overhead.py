"""Per-call host cost of a kernel registered as a PyTorch operator (tilelang.torch.op)
against calling the kernel directly, on the cpu target with torch CPU tensors: a tiny
kernel (C = A + B over 16 float32 elements, C allocated by the call), so the figures are
the call paths, not the work. Rows: a compiled kernel (T.dynamic size) and an eager
@tilelang.jit function, each A/B interleaved (medians of rounds in alternation), then
the time torch.compile(fullgraph=True) takes to capture a function of three such
operators (first call, cold inductor cache in a fresh directory). Prints a table and
appends it to bench/RESULTS.md (date, commit, "CPU").

Run: TILELANG_DEV_BUILD_DIR=build/dev PYTHONPATH=python python bench/torch_op_overhead.py
"""

import argparse
import os
import platform
import statistics
import tempfile
import time

import tilelang
import tilelang.language as T
import torch
from results import report


def add_kernel():
    n = T.dynamic("n")

    @T.prim_func
    def add(
        A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")
    ):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                C[i] = A[i] + B[i]

    return tilelang.compile(add, out_idx=[2], target="cpu")


@tilelang.jit(target="cpu")
def add_eager(A, B):
    N = T.const("N")
    A: T.Tensor((N,), "float32")
    B: T.Tensor((N,), "float32")
    C = T.empty((N,), "float32")
    with T.Kernel(1, threads=1):
        for i in T.serial(N):
            C[i] = A[i] + B[i]
    return C


def per_call_us(fn, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def interleaved(a_fn, b_fn, calls, rounds):
    """Medians of per-call microseconds of a_fn and b_fn, measured in alternation."""
    a_times, b_times = [], []
    for _ in range(rounds):
        a_times.append(per_call_us(a_fn, calls))
        b_times.append(per_call_us(b_fn, calls))
    return statistics.median(a_times), statistics.median(b_times)


def capture_seconds(ops, a, b):
    """Seconds of the first call of torch.compile(fullgraph=True) over three operators
    (dynamo tracing, the fake implementations, inductor), with a fresh inductor cache."""
    with tempfile.TemporaryDirectory(prefix="tl-bench-inductor-") as cache:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
        torch._dynamo.reset()

        def f(x, y):
            return ops(ops(ops(x, y), y), x)

        compiled = torch.compile(f, fullgraph=True)
        start = time.perf_counter()
        out = compiled(a, b)
        secs = time.perf_counter() - start
    torch.testing.assert_close(out, a * 2 + b * 2)
    return secs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()

    kernel = add_kernel()
    op = tilelang.torch.op(kernel, "tl_bench::add")
    eager_op = tilelang.torch.op("tl_bench::add_eager")(add_eager)
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(16, generator=gen), torch.randn(16, generator=gen)
    for fn in (kernel, op, add_eager, eager_op):
        torch.testing.assert_close(fn(a, b), a + b)

    rows = []
    for label, direct, wrapped in (
        ("compiled kernel (T.dynamic n)", "kernel(a, b)", "op(a, b)"),
        ("eager @tilelang.jit function", "add_eager(a, b)", "eager_op(a, b)"),
    ):
        fns = {
            "kernel(a, b)": lambda: kernel(a, b),
            "op(a, b)": lambda: op(a, b),
            "add_eager(a, b)": lambda: add_eager(a, b),
            "eager_op(a, b)": lambda: eager_op(a, b),
        }
        ours, theirs = interleaved(fns[wrapped], fns[direct], args.calls, args.rounds)
        rows.append(
            f"| {label} | {direct}: {theirs:.2f} µs | {wrapped}: {ours:.2f} µs "
            f"| {ours / theirs:.2f}x | +{ours - theirs:.2f} µs |"
        )
        print(rows[-1])
    capture = capture_seconds(op, a, b)
    rows.append(
        f"| torch.compile(fullgraph=True) capture, 3 ops | | first call: {capture:.2f} s | | |"
    )
    device = f"CPU ({platform.processor() or platform.machine()}, torch {torch.__version__})"
    report(
        "torch_op_overhead",
        device,
        f"per-call host cost of a kernel as a PyTorch operator (torch.library.custom_op) "
        f"against the direct call, C = A + B over 16 float32 torch CPU tensors, C allocated "
        f"by the call; medians of {args.rounds} interleaved rounds of {args.calls} calls",
        ["what", "direct call", "registered operator", "ratio", "added"],
        rows,
    )


if __name__ == "__main__":
    main()
