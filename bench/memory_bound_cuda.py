"""Memory-bound kernels on the cuda target against torch, all figures from one run
(A/B interleaved rounds, medians of CUDA-event timings):

* elementwise add (float16, bfloat16; >= 384 MB of traffic) against torch.add into a
  preallocated output. Target: >= 0.95x torch.add's bandwidth.
* row softmax and RMSNorm (bfloat16, rows of 4096 and 8192, 16384 rows), their achieved
  bandwidth (bytes read + written) against torch's copy bandwidth (`y.copy_(x)` of a
  tensor of the same size). Target: >= 0.85x. torch.softmax and torch's RMSNorm are
  timed in the same rounds for information.

The kernels are plain TileLang (T.Parallel over the tile; the rows held whole in a
fragment with T.reduce_max / T.reduce_sum over dim=1). Each is built in a few
configurations (elements or rows per block, threads per block); every configuration is
checked against the reference before it is timed, the fastest is measured against the
reference, and the table names it. A configuration that fails to compile or launch is
listed; one that computes wrong values is listed and makes the script exit with 1.
Appends the table to bench/RESULTS.md (date, commit, GPU).

Run on a GPU machine:  python bench/memory_bound_cuda.py
Without a GPU (checks this script's logic and the kernels on small shapes; numpy stands
in for torch, nothing is appended):
    python bench/memory_bound_cuda.py --target cpu
    python bench/memory_bound_cuda.py --target "cuda -emulate"
"""

import argparse
import datetime
import math
import os
import platform
import sys
import time

import numpy as np
from results import commit, cuda_seconds, rotated_medians, rounds_text, segment_calls

HERE = os.path.dirname(os.path.abspath(__file__))
LOG2E = math.log2(math.e)
EPS = 1e-6
ROUNDS, CALLS = 11, 20
SEARCH_ROUNDS = 3  # per configuration, to pick the fastest

# (dtype, elements); traffic is 3 * elements * 2 bytes.
ADD_CASES = [("float16", 1 << 26), ("float16", 1 << 28), ("bfloat16", 1 << 28)]
# (style, elements per block, threads): "direct" reads and writes global memory in a
# T.Parallel loop; "fragment" stages the operands through fragments with T.copy.
ADD_CONFIGS = [
    (style, block, threads)
    for style in ("direct", "fragment")
    for block, threads in ((1024, 128), (2048, 256), (4096, 256), (4096, 512), (8192, 1024))
]
# (op, rows, row length), bfloat16.
ROW_CASES = [
    ("softmax", 16384, 4096),
    ("softmax", 16384, 8192),
    ("rms_norm", 16384, 4096),
    ("rms_norm", 16384, 8192),
]
# (rows per block, threads)
ROW_CONFIGS = [(1, 128), (1, 256), (1, 512), (1, 1024), (2, 256), (2, 512), (4, 256), (4, 512)]

# Small shapes for the host check: the same code paths, seconds instead of minutes.
HOST_ADD_CASES = [("float16", 1 << 16), ("bfloat16", 1 << 16)]
HOST_ADD_CONFIGS = [("direct", 1024, 128), ("fragment", 2048, 256)]
HOST_ROW_CASES = [("softmax", 8, 512), ("rms_norm", 8, 256)]
HOST_ROW_CONFIGS = [(1, 128), (2, 64)]


# ---- kernels


def add_kernel(N, dtype, style, block, threads):
    import tilelang.language as T

    @T.prim_func
    def add(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(N // block, threads=threads) as bx:
            if style == "direct":
                for i in T.Parallel(block):
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
            else:
                a = T.alloc_fragment((block,), dtype)
                b = T.alloc_fragment((block,), dtype)
                T.copy(A[bx * block], a)
                T.copy(B[bx * block], b)
                for i in T.Parallel(block):
                    a[i] = a[i] + b[i]
                T.copy(a, C[bx * block])

    return add


def softmax_kernel(M, N, dtype, block_M, threads):
    import tilelang.language as T

    @T.prim_func
    def softmax(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(M // block_M, threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            row_max = T.alloc_fragment((block_M,), "float32")
            row_sum = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.exp2(x[i, j] * LOG2E - row_max[i] * LOG2E)
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, Y[bx * block_M, 0])

    return softmax


def rms_norm_kernel(M, N, dtype, block_M, threads):
    import tilelang.language as T

    @T.prim_func
    def rms_norm(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(M // block_M, threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            sq = T.alloc_fragment((block_M, N), "float32")
            scale = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            for i, j in T.Parallel(block_M, N):
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(sq, scale, dim=1)
            for i in T.Parallel(block_M):
                scale[i] = T.rsqrt(scale[i] / N + EPS)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] * scale[i] * T.cast(W[j], "float32")
            T.copy(x, Y[bx * block_M, 0])

    return rms_norm


# ---- where the tensors live: torch on the GPU, or numpy on the host


class TorchCuda:
    """torch CUDA tensors, CUDA-event timing."""

    rounds, calls = ROUNDS, CALLS

    def __init__(self):
        import torch

        self.torch = torch
        self.names = {
            "add": "torch.add",
            "copy": "y.copy_(x)",
            "softmax": "torch.softmax",
            "rms_norm": "F.rms_norm",
        }
        self.device = (
            f"{torch.cuda.get_device_name()} (torch {torch.__version__}, CUDA {torch.version.cuda})"
        )

    def randn(self, shape, dtype, seed):
        g = self.torch.Generator(device="cuda").manual_seed(seed)
        return self.torch.randn(shape, generator=g, device="cuda").to(getattr(self.torch, dtype))

    def empty_like(self, x):
        return self.torch.empty_like(x)

    def poison(self, x):
        x.fill_(float("nan"))

    def itemsize(self, x):
        return x.element_size()

    def seconds_per_call(self, fn, calls=None):
        return cuda_seconds(fn, calls or self.calls)

    def calls_for(self, fn):
        """Calls that take at least SEGMENT_SECONDS (bench/results.py: the power cap
        sets the clock over about 100 ms, so a shorter side runs at the clock the
        previous one left)."""
        return segment_calls(self.seconds_per_call(fn), self.calls)

    def timing_text(self):
        return rounds_text(self.rounds, self.calls)

    def assert_close(self, got, want, rtol, atol):
        self.torch.testing.assert_close(got.float(), want.float(), rtol=rtol, atol=atol)

    # references: the op into a preallocated output where torch offers one
    def add(self, a, b, c):
        self.torch.add(a, b, out=c)

    def copy(self, y, x):
        y.copy_(x)

    def softmax(self, x):
        return self.torch.softmax(x, dim=-1)

    def rms_norm(self, x, w):
        f = getattr(self.torch.nn.functional, "rms_norm", None)
        if f is not None:
            return f(x, (x.shape[-1],), w, EPS)
        xf = x.float()
        return (xf * self.torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).to(
            x.dtype
        )

    def softmax_float(self, x):
        return self.torch.softmax(x.float(), dim=-1)

    def rms_norm_float(self, x, w):
        xf = x.float()
        return xf * self.torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()


class NumpyHost:
    """numpy arrays (ml_dtypes for bfloat16), wall-clock timing: the host check."""

    rounds, calls = 3, 2

    def __init__(self, target):
        self.names = {
            "add": "np.add",
            "copy": "np.copyto",
            "softmax": "numpy softmax",
            "rms_norm": "numpy rms_norm",
        }
        self.device = (
            f"{platform.machine()} host, target {target!r} (script check, not a measurement)"
        )

    def randn(self, shape, dtype, seed):
        import ml_dtypes

        np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
        return np.random.default_rng(seed).standard_normal(shape).astype(np_dtype)

    def empty_like(self, x):
        return np.empty_like(x)

    def poison(self, x):
        x.fill(np.nan)

    def itemsize(self, x):
        return x.itemsize

    def seconds_per_call(self, fn, calls=None):
        calls = calls or self.calls
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - start) / calls

    def calls_for(self, fn):
        return self.calls

    def timing_text(self):
        return f"median time of {self.rounds} interleaved rounds of {self.calls} calls"

    def assert_close(self, got, want, rtol, atol):
        np.testing.assert_allclose(
            np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol
        )

    def add(self, a, b, c):
        np.add(a, b, out=c)

    def copy(self, y, x):
        np.copyto(y, x)

    def softmax(self, x):
        return self.softmax_float(x).astype(x.dtype)

    def rms_norm(self, x, w):
        return self.rms_norm_float(x, w).astype(x.dtype)

    def softmax_float(self, x):
        x = x.astype(np.float64)
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def rms_norm_float(self, x, w):
        x = x.astype(np.float64)
        return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + EPS) * w.astype(np.float64)


# ---- measuring


def interleaved(backend, fns, rounds=None, sustained=True):
    """Median seconds per call of each fn, the fns timed in alternation (the order
    rotating from round to round) so that all see the same drift of clocks; sustained:
    each side runs backend.calls_for(fn) calls per round (on the GPU at least
    SEGMENT_SECONDS), else backend.calls (the brief timing of the config search)."""
    counts = [backend.calls_for(fn) if sustained else backend.calls for fn in fns]
    return rotated_medians(fns, counts, rounds or backend.rounds, backend.seconds_per_call)


class Outcome:
    """What happened to the configurations of one case."""

    def __init__(self):
        self.failed, self.wrong = [], []


def summary(e, lines=1):
    """The first lines of an exception's message, on one line."""
    text = "; ".join(t.strip() for t in str(e).strip().splitlines()[:lines] if t.strip())
    return f"{type(e).__name__}: {text[:300]}"


def pick_fastest(backend, target, configs, build, run, output, check, outcome):
    """Compiles `build(config)` for each config, runs it on an `output` filled with NaN,
    checks it, and times it briefly; returns (config, kernel) of the fastest correct
    one, or (None, None)."""
    import tilelang

    best, best_time = (None, None), None
    for config in configs:
        backend.poison(output)
        try:
            kernel = tilelang.compile(build(config), target=target)
            run(kernel)
            check()
        except AssertionError as e:  # the check: wrong values
            outcome.wrong.append(f"{config}: {summary(e, lines=4)}")
            continue
        except Exception as e:  # noqa: BLE001 - a configuration the compiler or driver refuses
            outcome.failed.append(f"{config}: {summary(e)}")
            continue
        (t,) = interleaved(backend, [lambda k=kernel: run(k)], SEARCH_ROUNDS, sustained=False)
        if best_time is None or t < best_time:
            best, best_time = (config, kernel), t
    return best


def gbps(nbytes, seconds):
    return nbytes / seconds / 1e9


def bench_add(backend, target, dtype, n, configs):
    a, b = backend.randn((n,), dtype, 1), backend.randn((n,), dtype, 2)
    c, want = backend.empty_like(a), backend.empty_like(a)
    backend.add(a, b, want)
    ulp = 2.0**-10 if dtype == "float16" else 2.0**-7
    outcome = Outcome()
    config, kernel = pick_fastest(
        backend,
        target,
        configs,
        lambda cfg: add_kernel(n, dtype, *cfg),
        lambda k: k(a, b, c),
        c,
        lambda: backend.assert_close(c, want, rtol=ulp, atol=0),
        outcome,
    )
    nbytes = 3 * n * backend.itemsize(a)
    row = {"what": f"add {dtype} [2^{n.bit_length() - 1}]", "outcome": outcome, "config": config}
    if kernel is None:
        return row
    ours, ref = interleaved(backend, [lambda: kernel(a, b, c), lambda: backend.add(a, b, want)])
    row.update(
        config=f"{config[0]}, {config[1]} elements/block, {config[2]} threads",
        ours=gbps(nbytes, ours),
        reference=backend.names["add"],
        ref=gbps(nbytes, ref),
        target=0.95,
    )
    return row


def bench_rows(backend, target, op, m, n, configs):
    dtype = "bfloat16"
    x = backend.randn((m, n), dtype, 3)
    y, copy_dst = backend.empty_like(x), backend.empty_like(x)
    itemsize = backend.itemsize(x)
    outcome = Outcome()
    if op == "softmax":
        args, want = (x, y), backend.softmax_float(x)
        build, library_op, atol = softmax_kernel, (lambda: backend.softmax(x)), 1e-5
        nbytes = 2 * m * n * itemsize
    else:
        w = backend.randn((n,), dtype, 4)
        args, want = (x, w, y), backend.rms_norm_float(x, w)
        build, library_op, atol = rms_norm_kernel, (lambda: backend.rms_norm(x, w)), 2e-2
        nbytes = (2 * m * n + n) * itemsize
    config, kernel = pick_fastest(
        backend,
        target,
        configs,
        lambda cfg: build(m, n, dtype, *cfg),
        lambda k: k(*args),
        y,
        lambda: backend.assert_close(y, want, rtol=2e-2, atol=atol),  # bfloat16 output
        outcome,
    )
    row = {"what": f"{op} bfloat16 {m}x{n}", "outcome": outcome, "config": config}
    if kernel is None:
        return row
    ours, copy, theirs = interleaved(
        backend,
        [lambda: kernel(*args), lambda: backend.copy(copy_dst, x), library_op],
    )
    row.update(
        config=f"{config[0]} row(s)/block, {config[1]} threads",
        ours=gbps(nbytes, ours),
        reference=backend.names["copy"],
        ref=gbps(2 * m * n * itemsize, copy),
        target=0.85,
        info=f"{backend.names[op]}: {gbps(nbytes, theirs):.1f}",
    )
    return row


# ---- reporting


def table(rows, backend):
    lines = [
        f"### memory_bound_cuda — {datetime.date.today()} — commit {commit()} — {backend.device}",
        "",
        (
            f"bandwidth = bytes read + written / {backend.timing_text()}; the fastest "
            f"correct configuration of each kernel"
        ),
        "",
        "| kernel | best configuration | tilelang (GB/s) | reference (GB/s) | ratio | target | library op (GB/s) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    notes = []
    for r in rows:
        o = r["outcome"]
        if "ours" in r:
            ratio = r["ours"] / r["ref"]
            mark = "" if ratio >= r["target"] else " (below)"
            lines.append(
                f"| {r['what']} | {r['config']} | {r['ours']:.1f} | {r['reference']}: {r['ref']:.1f} "
                f"| {ratio:.3f}{mark} | ≥ {r['target']} | {r.get('info', '')} |"
            )
        else:
            lines.append(f"| {r['what']} | no configuration ran correctly | | | | | |")
        notes += [f"- {r['what']}: failed {f}" for f in o.failed]
        notes += [f"- {r['what']}: WRONG RESULT {w}" for w in o.wrong]
    if notes:
        lines += ["", "Configurations left out:", *notes]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--target",
        default="cuda",
        help='"cuda" (default: torch on the GPU) or a host target ("cpu", "cuda -emulate") '
        "that checks the script on small shapes with numpy",
    )
    parser.add_argument("--no-append", action="store_true", help="print only; leave RESULTS.md")
    args = parser.parse_args(argv)
    on_gpu = args.target.split()[0] == "cuda" and "-emulate" not in args.target.split()
    if on_gpu:
        backend = TorchCuda()
        add_cases, add_configs, row_cases, row_configs = (
            ADD_CASES,
            ADD_CONFIGS,
            ROW_CASES,
            ROW_CONFIGS,
        )
    else:
        backend = NumpyHost(args.target)
        add_cases, add_configs = HOST_ADD_CASES, HOST_ADD_CONFIGS
        row_cases, row_configs = HOST_ROW_CASES, HOST_ROW_CONFIGS

    rows = []
    for dtype, n in add_cases:
        rows.append(bench_add(backend, args.target, dtype, n, add_configs))
        print(f"done: {rows[-1]['what']}", flush=True)
    for op, m, n in row_cases:
        rows.append(bench_rows(backend, args.target, op, m, n, row_configs))
        print(f"done: {rows[-1]['what']}", flush=True)

    text = table(rows, backend)
    print(text)
    if on_gpu and not args.no_append:
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write("\n" + text)
    wrong = any(r["outcome"].wrong for r in rows)
    missing = any("ours" not in r for r in rows)
    return 1 if wrong or missing else 0


if __name__ == "__main__":
    sys.exit(main())
