"""GEMM written with tilelang.intrinsics' TensorCoreIntrinEmitter (upstream's
example_gemm_intrinsics style: ldmatrix_a / ldmatrix_b / mma / stmatrix by hand) on the
cuda target, against torch.matmul in the same run, A/B interleaved medians.

What bounds it: 2 M N K FLOPs of fp16 mma.sync (m16n8k16, fp32 accumulators); the
emitter's operand loads go through shared memory, so the ratio to torch says how far
a hand-written mma.sync kernel in this style is from cuBLAS's wgmma kernels.

Run on a GPU machine: python bench/intrinsics_gemm_cuda.py [--shapes 4096x4096x4096]
"""

import argparse
import pathlib
import sys

import tilelang
import torch
from results import best_interleaved, cuda_seconds, report, rounds_text, torch_device

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python"))
from test_intrinsics_mma import intrinsics_gemm

# (block_row_warps, block_col_warps, warp_row_tiles, warp_col_tiles, chunk, stages)
CONFIGS = [
    (2, 2, 64, 64, 32, 2),
    (2, 2, 64, 64, 32, 3),
    (2, 2, 64, 64, 64, 2),
    (2, 2, 64, 64, 64, 3),
]
ROUNDS, CALLS = 11, 10


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", default="4096x4096x4096,8192x8192x8192")
    args = parser.parse_args()
    rows = []
    for shape in args.shapes.split(","):
        M, N, K = (int(v) for v in shape.split("x"))
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        b = torch.randn(N, K, device="cuda", dtype=torch.float16)
        c = torch.empty(M, N, device="cuda", dtype=torch.float32)
        expect = a.float() @ b.float().T

        def ref_fn(a=a, b=b):
            return torch.matmul(a, b.T)

        tried = []
        for rw, cw, wr, wc, chunk, stages in CONFIGS:
            cfg = (rw, cw, wr, wc, chunk, stages)
            try:
                kernel = tilelang.compile(
                    intrinsics_gemm(
                        M,
                        N,
                        K,
                        "float16",
                        "float32",
                        "float32",
                        False,
                        True,
                        block_row_warps=rw,
                        block_col_warps=cw,
                        warp_row_tiles=wr,
                        warp_col_tiles=wc,
                        chunk=chunk,
                        stage=stages,
                    ),
                    target="cuda",
                )
                kernel(a, b, c)
            except Exception as e:  # noqa: BLE001 - a config that does not build is reported
                print(f"{shape} {cfg}: failed: {str(e).splitlines()[0]}")
                continue
            torch.testing.assert_close(c, expect, rtol=1e-2, atol=1e-1)
            secs = cuda_seconds(lambda k=kernel, a=a, b=b, c=c: k(a, b, c), CALLS)
            print(f"{shape} {cfg}: {2 * M * N * K / secs / 1e12:.1f} TFLOP/s (burst)")
            tried.append((secs, cfg, lambda k=kernel, a=a, b=b, c=c: k(a, b, c)))
        if not tried:
            continue
        ours, cfg, ref = best_interleaved(tried, ref_fn, ROUNDS, CALLS)
        flop = 2 * M * N * K
        o, r = flop / ours / 1e12, flop / ref / 1e12
        rows.append(f"| {shape} float16 | {cfg} | {o:.1f} | {r:.1f} | {o / r:.3f} |")
    report(
        "intrinsics_gemm_cuda",
        torch_device(),
        "tilelang.intrinsics TensorCoreIntrinEmitter GEMM (fp16 in, fp32 out, B stored (N, K); "
        "the faster of the two best configs by burst) vs torch.matmul(a, b.T); TFLOP/s from "
        + rounds_text(ROUNDS, CALLS),
        [
            "shape",
            "config (row warps, col warps, warp rows, warp cols, chunk, stages)",
            "tilelang (TFLOP/s)",
            "torch (TFLOP/s)",
            "ratio",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
