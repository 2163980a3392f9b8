"""GEMM on the cuda target against torch.matmul, same run, A/B interleaved
medians. The kernel is the quickstart's (examples/quickstart.py: 128x128x32
tiles, T.Pipelined, ReLU epilogue); the reference is torch.relu(torch.matmul).
FLOPs: 2*M*N*K per GEMM. Appends the table to bench/RESULTS.md.

Run on a GPU machine: python bench/gemm_cuda.py
"""

import datetime
import importlib.util
import os
import statistics
import subprocess

import tilelang
import torch

SHAPES = [(4096, 4096, 4096)]
DTYPES = ["float16", "bfloat16"]
ROUNDS, CALLS = 11, 10


def _load_quickstart():
    path = os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "examples", "quickstart.py"
    )
    spec = importlib.util.spec_from_file_location("quickstart", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(fn):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(CALLS):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / CALLS / 1e3


def commit():
    out = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], check=False, capture_output=True, text=True
    )
    return out.stdout.strip() or "unknown"


def main():
    quickstart = _load_quickstart()
    rows = []
    for M, N, K in SHAPES:
        for dtype in DTYPES:
            func = quickstart.matmul.get_tir(M, N, K, 128, 128, 32, dtype=dtype)
            kernel = tilelang.compile(func, out_idx=[-1], target="cuda")
            t = getattr(torch, dtype)
            a = torch.randn(M, K, device="cuda", dtype=t)
            b = torch.randn(K, N, device="cuda", dtype=t)

            def ours_fn(kernel=kernel, a=a, b=b):
                return kernel(a, b)

            def ref_fn(a=a, b=b):
                return torch.relu(torch.matmul(a, b))

            torch.testing.assert_close(ours_fn().float(), ref_fn().float(), rtol=2e-2, atol=2e-1)
            ours, ref = [], []
            for _ in range(ROUNDS):  # interleaved: both see the same clocks
                ours.append(timed(ours_fn))
                ref.append(timed(ref_fn))
            flop = 2 * M * N * K
            o, r = flop / statistics.median(ours) / 1e12, flop / statistics.median(ref) / 1e12
            rows.append(f"| {M}x{N}x{K} {dtype} | {o:.1f} | {r:.1f} | {o / r:.3f} |")
    table = "\n".join(
        [
            f"### gemm_cuda — {datetime.date.today()} — commit {commit()} — {torch.cuda.get_device_name()}",
            "",
            (
                "quickstart GEMM+ReLU on cuda vs torch.relu(torch.matmul); TFLOP/s from medians "
                f"of {ROUNDS} interleaved rounds of {CALLS} calls"
            ),
            "",
            "| shape | tilelang (TFLOP/s) | torch (TFLOP/s) | ratio |",
            "| --- | --- | --- | --- |",
            *rows,
        ]
    )
    print(table)
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md"), "a") as f:
        f.write(table + "\n\n")


if __name__ == "__main__":
    main()
