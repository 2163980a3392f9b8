"""GEMM on the cuda target against cuBLAS through torch, same run, A/B interleaved
medians, both sides doing the same work. The kernel is the quickstart's GEMM
(examples/quickstart.py: T.Pipelined over K, T.gemm into a fragment) with its tile
sizes, threads and pipeline depth as parameters, in two forms (--epilogues):
"none", a bare GEMM against torch.matmul, and "bias_relu", C = relu(A B + bias) with
a bias per column, against cuBLASLt's fused epilogue (torch._addmm_activation, one
kernel). A few configurations are timed briefly; the two best are timed interleaved to
pick one, which is then timed afresh against the reference (bench/results.py,
best_interleaved). Every timed config is checked on its whole output.
Two paths: "wgmma" (target "cuda" on an H100/H200 is sm_90a: warpgroup wgmma,
kept in flight across pipeline steps) and "mma.sync" (the sm_80 path every GPU
from Ampere on runs; pass config tl.disable_wgmma). "wgmma+store" stages the
output through a shared tile, which TMA stores (sm_90's default for such epilogues);
"wgmma" is the kernel as written, whose fragment epilogue the compiler stages the same
way; "wgmma+unstaged" turns that off (tl.stage_fragment_stores: False); "wgmma+cluster"
launches clusters of 2 blocks along N, which multicast their common A tile.
FLOPs: 2*M*N*K per GEMM; floor at 4096^3: ~0.2 ms at the H200's 700 TFLOP/s.
Appends the table to bench/RESULTS.md.

Run on a GPU machine: python bench/gemm_cuda.py [--paths wgmma,mma.sync] [--epilogues none,bias_relu]
[--shapes 4096x4096x4096,...]
"""

import datetime
import itertools
import os
import statistics

import tilelang
import tilelang.language as T
import torch
from results import (
    add_shapes_argument,
    best_interleaved,
    clocks_text,
    commit,
    cuda_seconds,
    final_text,
    parse_shapes,
    spread_text,
)

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 7168, 2048), (8192, 8192, 1024)]
# (block_M, block_N, block_K, threads, num_stages, T.use_swizzle panel (0: off)
# [, cluster: blocks along N per thread block cluster, A multicast]) per path
CONFIGS = {
    "mma.sync": [
        (128, 128, 32, 128, 3, 8),
        (128, 128, 64, 128, 2, 8),
        (128, 256, 64, 256, 3, 8),
    ],
    "wgmma": [
        (128, 128, 64, 128, 3, 8),
        (128, 256, 64, 256, 3, 8),
        (128, 256, 64, 256, 4, 8),
        (256, 128, 64, 256, 3, 8),
    ],
}
CONFIGS["wgmma+store"] = [(128, 256, 64, 256, 3, 8), (128, 256, 64, 256, 4, 8)]
# Clusters of 2 blocks along N share A's tile (TMA multicast, one L2 read per cluster);
# multicast needs the block indices as launched, so no T.use_swizzle panel.
CONFIGS["wgmma+cluster"] = [(128, 256, 64, 256, 4, 0, 2), (128, 256, 64, 256, 3, 0, 2)]
# The quickstart kernel with its fragment epilogue stored element-wise from registers.
CONFIGS["wgmma+unstaged"] = CONFIGS["wgmma+store"]
PASS_CONFIGS = {
    "mma.sync": {"tl.disable_wgmma": True},
    "wgmma": {},
    "wgmma+store": {"tl.enable_tma_store": True},
    "wgmma+unstaged": {"tl.stage_fragment_stores": False},
    "wgmma+cluster": {},
}
# GEMM_CONFIGS="128,128,64,128,3,8;256,128,32,256,3,8" replaces every path's list (for sweeps).
if os.environ.get("GEMM_CONFIGS"):
    _sweep = [tuple(int(v) for v in c.split(",")) for c in os.environ["GEMM_CONFIGS"].split(";")]
    CONFIGS = {path: _sweep for path in CONFIGS}
DTYPES = ["float16", "bfloat16"]
ROUNDS, CALLS = 11, 10


def matmul(
    M,
    N,
    K,
    block_M,
    block_N,
    block_K,
    threads,
    stages,
    dtype,
    accum_dtype="float",
    panel=0,
    shared_epilogue=False,
    cluster=1,
    epilogue="none",
):
    @T.prim_func
    def gemm(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        bias: T.Tensor((N,), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(
            T.ceildiv(N, block_N),
            T.ceildiv(M, block_M),
            threads=threads,
            cluster_dims=(cluster, 1, 1) if cluster > 1 else None,
        ) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype) if shared_epilogue else None
            if panel:
                T.use_swizzle(panel)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            if epilogue == "bias_relu":
                for i, j in T.Parallel(block_M, block_N):
                    C_local[i, j] = T.max(C_local[i, j] + bias[bx * block_N + j], 0)
            if shared_epilogue:
                T.copy(C_local, C_shared)
                T.copy(C_shared, C[by * block_M, bx * block_N])
            else:
                T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm


def timed(fn):
    return cuda_seconds(fn, CALLS)


def main():
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--paths", default="wgmma,mma.sync")
    parser.add_argument("--epilogues", default="none,bias_relu")
    add_shapes_argument(parser, SHAPES)
    args = parser.parse_args()
    paths = args.paths.split(",")
    shapes = parse_shapes(args.shapes)
    rows = []
    for (M, N, K), dtype, epilogue in itertools.product(shapes, DTYPES, args.epilogues.split(",")):
        t = getattr(torch, dtype)
        a = torch.randn(M, K, device="cuda", dtype=t)
        b = torch.randn(K, N, device="cuda", dtype=t)
        bias = torch.randn(N, device="cuda", dtype=t)
        if epilogue == "none":

            def ref_fn(a=a, b=b):
                return torch.matmul(a, b)
        else:

            def ref_fn(a=a, b=b, bias=bias):
                return torch._addmm_activation(bias, a, b, use_gelu=False)

        expect = ref_fn().float()
        for path in paths:
            tried = []  # (burst seconds, config, fn)
            for cfg in CONFIGS[path]:
                try:
                    kernel = tilelang.compile(
                        matmul(
                            M,
                            N,
                            K,
                            *cfg[:5],
                            dtype,
                            panel=cfg[5],
                            shared_epilogue=path.endswith("+store"),
                            cluster=cfg[6] if len(cfg) > 6 else 1,
                            epilogue=epilogue,
                        ),
                        out_idx=[-1],
                        target="cuda",
                        pass_configs=PASS_CONFIGS[path],
                    )
                    got = kernel(a, b, bias).float()
                except Exception as e:  # noqa: BLE001 - a config that does not build is reported
                    print(f"{M}x{N}x{K} {dtype} {path} {cfg}: failed: {str(e).splitlines()[0]}")
                    continue
                torch.testing.assert_close(got, expect, rtol=2e-2, atol=2e-1)
                secs = statistics.median(
                    timed(lambda k=kernel, a=a, b=b, bias=bias: k(a, b, bias)) for _ in range(3)
                )
                print(
                    f"{M}x{N}x{K} {dtype} {epilogue} {path} {cfg}: "
                    f"{2 * M * N * K / secs / 1e12:.1f} TFLOP/s"
                )
                tried.append((secs, cfg, lambda k=kernel, a=a, b=b, bias=bias: k(a, b, bias)))
            if not tried:
                continue
            ours, cfg, ref = best_interleaved(tried, ref_fn, ROUNDS, CALLS)
            flop = 2 * M * N * K
            o, r = flop / ours / 1e12, flop / ref / 1e12
            rows.append(
                f"| {M}x{N}x{K} {dtype} | {epilogue} | {path} | {cfg} | {o:.1f} | {r:.1f} | {o / r:.3f} "
                f"| {spread_text()} | {clocks_text()} |"
            )
    table = "\n".join(
        [
            (
                f"### gemm_cuda — {datetime.date.today()} — commit {commit()} — "
                f"{torch.cuda.get_device_name()} (torch {torch.__version__})"
            ),
            "",
            (
                "quickstart GEMM on cuda, epilogue none vs torch.matmul, bias_relu (relu(A B + bias)) "
                "vs torch._addmm_activation (cuBLASLt's fused epilogue); the faster of the two best "
                "configs per path by burst, then "
                f"{final_text(ROUNDS, CALLS)}"
            ),
            "",
            (
                "| shape | epilogue | path | config (bM, bN, bK, threads, stages, swizzle panel[, cluster]) "
                "| tilelang (TFLOP/s) | torch (TFLOP/s) | ratio | spread | clocks |"
            ),
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
            *rows,
        ]
    )
    print(table)
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md"), "a") as f:
        f.write(table + "\n\n")


if __name__ == "__main__":
    main()
