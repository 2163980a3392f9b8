"""Register gemms on slices of shared tiles (T.gemm(A_s[:, j*w:(j+1)*w], B_s[j*w:(j+1)*w, :],
C)), the form MLA and sparse-attention kernels use to walk a resident tile, against the
same kernel with one T.gemm on the whole tile and torch.matmul, same run, A/B interleaved
medians.

Each pipelined step copies a block_M x block_K tile of A and a block_K x block_N tile of
B to shared memory; the sliced kernel multiplies them in `slices` gemms of block_K /
slices columns each at a loop offset (wgmma descriptors from the tile start plus the
offset on sm_90a, mma.sync on sm_80), the whole-tile kernel in one. Both accumulate in
float32 registers and write float16 C, as torch.matmul does. FLOPs: 2*M*N*K; the sliced
and whole-tile kernels do the same work, so their ratio isolates what slicing costs.
Every timed config is checked on the whole output against float32 torch.

Run on a GPU machine: python bench/sliced_gemm_cuda.py [--shapes 4096x4096x4096,...]
"""

import argparse
import statistics

import tilelang
import tilelang.language as T
import torch
from results import (
    add_shapes_argument,
    best_interleaved,
    cuda_seconds,
    parse_shapes,
    report,
    rounds_text,
    torch_device,
)

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]
# (block_M, block_N, block_K, slices, num_stages, threads)
CONFIGS = [
    (128, 256, 64, 2, 3, 256),
    (128, 256, 64, 4, 3, 256),
    (128, 128, 128, 2, 3, 256),
    (128, 128, 128, 4, 3, 256),
]
ROUNDS, CALLS = 11, 10


@tilelang.jit(out_idx=[-1])
def gemm(M, N, K, block_M, block_N, block_K, slices, num_stages, threads):
    """C = A @ B through shared tiles, each tile's product as `slices` K-slice gemms (one
    T.gemm on the whole tile where slices is 1)."""
    width = block_K // slices

    @T.prim_func
    def main(
        A: T.Tensor((M, K), T.float16),
        B: T.Tensor((K, N), T.float16),
        C: T.Tensor((M, N), T.float16),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_K, block_N), T.float16)
            C_l = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                if slices == 1:
                    T.gemm(A_s, B_s, C_l)
                else:
                    for j in T.unroll(slices):
                        T.gemm(
                            A_s[:, j * width : (j + 1) * width],
                            B_s[j * width : (j + 1) * width, :],
                            C_l,
                        )
            T.copy(C_l, C[by * block_M, bx * block_N])

    return main


def bench_shape(M, N, K):
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    ref = a.float() @ b.float()
    ref_fn = lambda: torch.matmul(a, b)
    torch.testing.assert_close(ref_fn().float(), ref, rtol=1e-2, atol=1e-1)
    rows = []
    for bM, bN, bK, slices, stages, threads in CONFIGS:
        fns = {}
        for s in (slices, 1):
            try:
                kernel = gemm(M, N, K, bM, bN, bK, s, stages, threads)
                got = kernel(a, b)
            except Exception as err:  # noqa: BLE001 - a config that does not build is reported
                print(
                    f"{M}x{N}x{K} {(bM, bN, bK, s, stages, threads)}: failed: {str(err).splitlines()[0]}"
                )
                continue
            torch.testing.assert_close(got.float(), ref, rtol=1e-2, atol=1e-1)
            fns[s] = lambda k=kernel: k(a, b)
            secs = statistics.median(cuda_seconds(fns[s], CALLS) for _ in range(3))
            print(
                f"{M}x{N}x{K} {(bM, bN, bK, s, stages, threads)}: {2 * M * N * K / secs / 1e12:.1f} TFLOP/s"
            )
        if slices not in fns or 1 not in fns:
            continue
        # The sliced kernel timed against the whole-tile kernel and torch, interleaved.
        secs, _, (whole, dense) = best_interleaved(
            [(0.0, slices, fns[slices])], [fns[1], ref_fn], ROUNDS, CALLS
        )
        flop = 2 * M * N * K
        rows.append(
            f"| {M}x{N}x{K} | {(bM, bN, bK, slices, stages, threads)} | {flop / secs / 1e12:.1f} | "
            f"{flop / whole / 1e12:.1f} | {whole / secs:.3f} | {flop / dense / 1e12:.1f} | "
            f"{dense / secs:.3f} |"
        )
    return rows


def main():
    parser = argparse.ArgumentParser()
    add_shapes_argument(parser, SHAPES)
    args = parser.parse_args()
    rows = [row for shape in parse_shapes(args.shapes) for row in bench_shape(*shape)]
    report(
        "sliced_gemm_cuda",
        torch_device(),
        (
            "float16 GEMM, float32 accumulation, float16 C: each shared tile's product as "
            "`slices` register gemms on K slices at a loop offset, against the same kernel "
            "with one T.gemm on the whole tile and torch.matmul; "
            f"{rounds_text(ROUNDS, CALLS)}; TFLOP/s count 2*M*N*K"
        ),
        [
            "shape (MxNxK)",
            "config (bM, bN, bK, slices, stages, threads)",
            "sliced (TFLOP/s)",
            "whole tile (TFLOP/s)",
            "ratio whole/sliced",
            "torch.matmul (TFLOP/s)",
            "ratio torch/sliced",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
