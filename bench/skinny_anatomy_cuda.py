"""Where skinny M = 128 (C = A @ B^T, N = K = 8192) spends its time on the H200: the
measurements behind docs/design/hopper_log.md ("Skinny M = 128 is bound by the power
cap"), one table against torch.matmul from the same run.

The rows take the GEMM apart, all with the example's best tiling (64 x 128 tiles of C,
K tiles of 64, 8 stages, clusters of 2 along M):
* `stream B`: TMA streams B into shared memory with no math (the DRAM floor of the
  shape: 128 MiB of B);
* `stream A + B`: the same plus A's tiles;
* `A once + gemm`: A's tile loaded once and reused (wrong products, the same wgmma and
  B traffic): what a free A path would give;
* `gemm, multicast` and `gemm, own loads`: the real kernel with B multicast in the
  cluster, and with each block loading B itself (tl.disable_tma_multicast).

Each side is timed in A/B interleaved rounds (medians), then run alone for 2.5 s while
nvidia-smi samples the SM clock and the board power every 100 ms: under the card's
700 W cap the clock, not DRAM, decides the GEMM's speed. Needs nvidia-smi on PATH for
the last two columns ("-" without it).

Run on a GPU machine: python bench/skinny_anatomy_cuda.py [--dtype bfloat16]
"""

import argparse
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

import tilelang
import tilelang.language as T
import torch
from results import cuda_seconds, interleaved_medians, report, rounds_text, torch_device

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from skinny_gemm import skinny_gemm

M, N, K = 128, 8192, 8192
BM, BN, BK, STAGES = 64, 128, 64, 8
ROUNDS, CALLS = 11, 20


@tilelang.jit(out_idx=[-1])
def probe(load_a, gemm, dtype):
    """The example's tiling with parts switched off: `load_a` False loads A's tile once
    before the loop; `gemm` False replaces the wgmma with one element read per thread
    (so the consumers still wait for every tile). Its C is only right with both on."""

    @T.prim_func
    def k(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(N // BN, M // BM, threads=128, cluster_dims=(1, 2, 1)) as (bx, by):
            A_s = T.alloc_shared((BM, BK), dtype)
            B_s = T.alloc_shared((BN, BK), dtype)
            acc = T.alloc_fragment((BM, BN), "float32")
            s = T.alloc_local((1,), "float32")
            tx = T.get_thread_binding()
            s[0] = 0
            T.clear(acc)
            if not load_a:
                T.copy(A[by * BM, 0], A_s)
            for ko in T.Pipelined(K // BK, num_stages=STAGES):
                if load_a:
                    T.copy(A[by * BM, ko * BK], A_s)
                T.copy(B[bx * BN, ko * BK], B_s)
                if gemm:
                    T.gemm(A_s, B_s, acc, transpose_B=True)
                else:
                    s[0] += T.cast(B_s[tx % BN, 0], "float32") + T.cast(A_s[tx % BM, 0], "float32")
            if gemm:
                T.copy(acc, C[by * BM, bx * BN])
            else:
                C[by * BM + tx % BM, bx * BN] = s[0]

    return k


@tilelang.jit(out_idx=[-1])
def stream_b(dtype):
    """B's tiles through TMA into shared memory, one element read per thread and tile."""

    @T.prim_func
    def k(B: T.Tensor((N, K), dtype), O: T.Tensor((N // BN * 2, 128), "float32")):
        with T.Kernel(N // BN, 2, threads=128, cluster_dims=(1, 2, 1)) as (bx, by):
            B_s = T.alloc_shared((BN, BK), dtype)
            s = T.alloc_local((1,), "float32")
            tx = T.get_thread_binding()
            s[0] = 0
            for ko in T.Pipelined(K // BK, num_stages=STAGES):
                T.copy(B[bx * BN, ko * BK], B_s)
                s[0] += T.cast(B_s[tx % BN, 0], "float32")
            O[bx * 2 + by, tx] = s[0]

    return k


def sustained(fn, seconds=2.5):
    """(median seconds per call, median SM MHz, median W) of `fn` run alone for
    `seconds`; the clock and power are None without nvidia-smi."""
    smi = shutil.which("nvidia-smi")
    query = ["--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits", "-lms", "100"]
    p = subprocess.Popen([smi, *query], stdout=subprocess.PIPE, text=True) if smi else None
    t0, times = time.time(), []
    while time.time() - t0 < seconds:
        times.append(cuda_seconds(fn, 200))
    if p is None:
        return statistics.median(times[2:]), None, None
    p.terminate()
    lines = p.communicate()[0].strip().splitlines()[5:]  # the first half second ramps up
    rows = [[float(v) for v in ln.split(",")] for ln in lines if ln.count(",") == 1]
    mhz = statistics.median(r[0] for r in rows) if rows else None
    watts = statistics.median(r[1] for r in rows) if rows else None
    return statistics.median(times[2:]), mhz, watts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
    dtype = parser.parse_args().dtype
    t = getattr(torch, dtype)
    a = torch.randn(M, K, device="cuda", dtype=t)
    b = torch.randn(N, K, device="cuda", dtype=t)
    expect = (a @ b.T).float()

    def gemm_kernel(multicast):
        f = skinny_gemm.get_tir(
            M, N, K, BM, BN, BK, STAGES, 128, 1, False, "nk", dtype, cluster=2, cluster_axis="m"
        )
        kernel = tilelang.compile(
            f, out_idx=[-1], pass_configs={"tl.disable_tma_multicast": not multicast}
        )
        torch.testing.assert_close(kernel(a, b).float(), expect, rtol=2e-2, atol=2e-1)
        return kernel

    mc, own = gemm_kernel(True), gemm_kernel(False)
    streamer, a_and_b, a_once = (
        stream_b(dtype),
        probe(True, False, dtype),
        probe(False, True, dtype),
    )
    sides = {
        "torch.matmul": lambda: torch.matmul(a, b.T),
        "stream B (no math)": lambda: streamer(b),
        "stream A + B (no math)": lambda: a_and_b(a, b),
        "A once + gemm (wrong C)": lambda: a_once(a, b),
        "gemm, multicast": lambda: mc(a, b),
        "gemm, own loads": lambda: own(a, b),
    }
    names = list(sides)
    secs = interleaved_medians([sides[n] for n in names], ROUNDS, CALLS)
    rows = []
    for name, s in zip(names, secs):
        alone, mhz, watts = sustained(sides[name])
        print(
            f"{name}: {s * 1e6:.1f} us interleaved, {alone * 1e6:.1f} us alone, {mhz} MHz, {watts} W"
        )
        rows.append(
            f"| {name} | {s * 1e6:.1f} | {N * K * b.element_size() / s / 1e12:.2f} | {secs[0] / s:.3f} "
            f"| {alone * 1e6:.1f} | {'-' if mhz is None else f'{mhz:.0f}'} | {'-' if watts is None else f'{watts:.0f}'} |"
        )
    report(
        "skinny_anatomy_cuda",
        f"{torch_device()[:-1]}, tilelang {tilelang.__version__})",
        (
            f"M = {M}, N = K = {N} {dtype}, the example's tiling ({BM} x {BN} x {BK}, {STAGES} stages, "
            f"clusters of 2 along M) with parts switched off (bench/skinny_anatomy_cuda.py); "
            f"{rounds_text(ROUNDS, CALLS)}; then each side alone for 2.5 s with nvidia-smi's SM clock and "
            "board power (medians of 100 ms samples); TB/s counts B only"
        ),
        [
            "side",
            "us (interleaved)",
            "B TB/s",
            "torch / side",
            "us (alone, 2.5 s)",
            "SM MHz",
            "board W",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
