"""2:4 sparse GEMM (T.gemm_sp, examples/gemm_sp.py) on the cuda target against
torch.matmul on the dense A (what the sparse kernel replaces) and, where torch has it,
torch's semi-structured sparse matmul (to_sparse_semi_structured: CUTLASS / cuSPARSELt
on the sparse tensor cores), same run, A/B interleaved medians.

T.gemm_sp runs on the sparse tensor cores: mma.sp m16n8k32 on sm_80 and later, and on
sm_90a wgmma.mma_async.sp (warp-specialized where E's tile rows are 16 bytes, i.e.
block_K = 128), its default since it measured 1.6-1.9x mma.sp at every config here on
an H100 (bench/RESULTS.md "gemm_sp_cuda — 2026-12-06"). Each config runs on both paths
(mma.sp under the pass config tl.gemm_sp_wgmma=False), the rows naming the path. Bytes: A/2 + E (A/8) + B + C. TFLOP/s
below count the dense 2*M*N*K, so ratios are times. Appends the table to
bench/RESULTS.md.

--b-kmajor takes B as [N, K] (a linear layer's weight; the references multiply by its
transpose), and --configs bMxbNxbKxSTAGESxTHREADS,... replaces the sweep with the configs
named, each config its own row (sm_90a's wgmma.sp reads a K-major B at any width that
is a multiple of 16, e.g. 96 or 160 columns as one m64nNk32 a k-step).

Run on a GPU machine: python bench/gemm_sp_cuda.py [--shapes 4096x4096x4096,...]
    [--b-kmajor] [--configs 128x160x128x3x256,...]
"""

import argparse
import pathlib
import statistics
import sys

import tilelang
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

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "examples"))
from gemm_sp import gemm_sp
from tilelang.utils.sparse import compress, randn_semi_sparse

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]
# (block_M, block_N, block_K, num_stages, threads)
CONFIGS = [
    (128, 128, 64, 3, 128),
    (128, 128, 64, 4, 256),
    (128, 256, 64, 3, 256),
    (128, 128, 128, 3, 256),
]
ROUNDS, CALLS = 11, 10
# The paths T.gemm_sp takes for float16 on sm_80+ (select_gemm_sp.h) and their pass configs.
PATHS = {"mma.sp": {"tl.gemm_sp_wgmma": False}, "wgmma.sp": {}}


def torch_sparse(a):
    """torch's semi-structured sparse A, or None where this torch or GPU lacks it."""
    try:
        from torch.sparse import to_sparse_semi_structured

        return to_sparse_semi_structured(a)
    except Exception as e:  # noqa: BLE001 - reported; the dense reference stays
        print(f"torch semi-structured sparse unavailable: {str(e).splitlines()[0]}")
        return None


def bench_shape(M, N, K, configs, b_kmajor, per_config):
    a = randn_semi_sparse(M, K, dtype=torch.float16, device="cuda")
    stored = torch.randn((N, K) if b_kmajor else (K, N), device="cuda", dtype=torch.float16)
    # The references multiply by the same operand: the transposed view of a K-major B.
    b = stored.t() if b_kmajor else stored
    a_sparse, e = compress(a)
    ref = a.float() @ b.float()
    tried = []
    for cfg in [(*c, path) for c in configs for path in PATHS]:
        bM, bN, bK, stages, threads, path = cfg
        try:
            func = gemm_sp.get_tir(
                M, N, K, bM, bN, bK, stages, threads, out_dtype="float16", trans_B=b_kmajor
            )
            kernel = tilelang.compile(func, out_idx=[-1], pass_configs=PATHS[path])
            got = kernel(a_sparse, e, stored)
        except Exception as err:  # noqa: BLE001 - a config that does not build is reported
            print(f"{M}x{N}x{K} {cfg}: failed: {str(err).splitlines()[0]}")
            continue
        torch.testing.assert_close(got.float(), ref, rtol=1e-2, atol=1e-1)
        secs = statistics.median(
            cuda_seconds(lambda k=kernel: k(a_sparse, e, stored), CALLS) for _ in range(3)
        )
        print(f"{M}x{N}x{K} {cfg}: {2 * M * N * K / secs / 1e12:.1f} TFLOP/s (dense-equivalent)")
        tried.append((secs, cfg, lambda k=kernel: k(a_sparse, e, stored)))
    if not tried:
        return []
    refs = [lambda: torch.matmul(a, b)]
    sparse_a = torch_sparse(a)
    if sparse_a is not None:
        # torch's sparse matmul is given B row-major, made before timing (its fast layout).
        b_rows = b.contiguous()
        torch.testing.assert_close(
            torch.matmul(sparse_a, b_rows).float(), ref, rtol=1e-2, atol=1e-1
        )
        refs.append(lambda: torch.matmul(sparse_a, b_rows))
    # One row per path (its best config), or per config, each timed against the same
    # references.
    groups = (
        [[t] for t in tried]
        if per_config
        else [[t for t in tried if t[1][-1] == path] for path in PATHS]
    )
    rows = []
    for mine in groups:
        if not mine:
            continue
        secs, cfg, theirs = best_interleaved(mine, refs, ROUNDS, CALLS)
        flop = 2 * M * N * K
        dense = theirs[0]
        layout = "B [N, K]" if b_kmajor else "B [K, N]"
        row = f"| {M}x{N}x{K} | {cfg} | {layout} | {flop / secs / 1e12:.1f} | {flop / dense / 1e12:.1f} | {dense / secs:.3f} |"
        if len(theirs) > 1:
            row += f" {flop / theirs[1] / 1e12:.1f} | {theirs[1] / secs:.3f} |"
        else:
            row += " - | - |"
        rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser()
    add_shapes_argument(parser, SHAPES)
    parser.add_argument("--b-kmajor", action="store_true", help="B stored as [N, K]")
    parser.add_argument(
        "--configs", help="bMxbNxbKxSTAGESxTHREADS,... timed one row each instead of the sweep"
    )
    args = parser.parse_args()
    shapes = parse_shapes(args.shapes)
    configs = CONFIGS
    if args.configs:
        configs = [tuple(int(v) for v in c.split("x")) for c in args.configs.split(",")]
        if any(len(c) != 5 for c in configs):
            parser.error(f"--configs wants bMxbNxbKxSTAGESxTHREADS items, got {args.configs!r}")
    rows = [
        row
        for shape in shapes
        for row in bench_shape(*shape, configs, args.b_kmajor, bool(args.configs))
    ]
    report(
        "gemm_sp_cuda",
        torch_device(),
        (
            "examples/gemm_sp.py (float16, 2:4 sparse A, int16 metadata, float32 accumulation, float16 out as torch's; "
            + (
                "each config named"
                if args.configs
                else "faster of the two best configs by burst, per path"
            )
            + ") vs torch.matmul on the dense A and "
            f"torch's semi-structured sparse matmul; {rounds_text(ROUNDS, CALLS)}; TFLOP/s "
            "count the dense 2*M*N*K"
        ),
        [
            "shape (MxNxK)",
            "config (bM, bN, bK, stages, threads, path)",
            "B",
            "tilelang sparse (TFLOP/s)",
            "torch dense (TFLOP/s)",
            "ratio dense/tilelang",
            "torch sparse (TFLOP/s)",
            "ratio torch sparse/tilelang",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
