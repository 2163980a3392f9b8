"""A warp-specialized GEMM written by hand for Hopper (sm_90a), in TileLang's syntax.

The block has two warpgroups (256 threads). Warpgroup 0 is the producer: for each K
tile it waits until the consumer has freed a stage (`empty` barrier), then loads the A
and B tiles of that stage with T.tma_copy, which complete on the stage's `full` barrier.
Warpgroup 1 is the consumer: it waits for the stage's `full` barrier, multiplies on the
tensor cores (T.wgmma_gemm + T.wait_wgmma, or T.gemm), and arrives on the stage's `empty`
barrier so that the producer may load into it again. With num_stages stages the
producer runs up to num_stages tiles ahead.

Phases: the i-th use of a stage (i = ko // num_stages) waits for `full` parity i % 2 and
for `empty` parity (i + 1) % 2 -- the first wait on a fresh `empty` barrier (parity 1)
returns at once.

Run: python examples/gemm_ws_hopper.py  (on a machine without a GPU it runs in the CUDA
emulator; TILELANG_WS_TARGET picks another target, e.g. "cuda -arch=sm_90a").
"""

import os

import numpy as np
import tilelang
import tilelang.language as T


def gemm_ws(
    M,
    N,
    K,
    block_M=128,
    block_N=128,
    block_K=64,
    num_stages=2,
    dtype="float16",
    use_wgmma=True,
    accum_dtype="float32",
):
    """C = A @ B (A: M x K, B: K x N, C: M x N in `dtype`, accumulated in `accum_dtype`:
    float32, or float16 for float16 operands, which wgmma also accumulates in)."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_s = T.alloc_shared((num_stages, block_M, block_K), dtype)
            B_s = T.alloc_shared((num_stages, block_K, block_N), dtype)
            C_f = T.alloc_fragment((block_M, block_N), accum_dtype)
            # full[s]: the stage's two TMA copies landed (the producer's 128 threads
            # arrive after issuing them); empty[s]: the consumer's 128 threads are done
            # with the stage.
            full = T.alloc_barrier([128] * num_stages)
            empty = T.alloc_barrier([128] * num_stages)

            with T.ws(0):  # producer
                for ko in range(T.ceildiv(K, block_K)):
                    s = ko % num_stages
                    T.barrier_wait(empty[s], (ko // num_stages + 1) % 2)
                    T.tma_copy(A[by * block_M, ko * block_K], A_s[s, :, :], barrier=full[s])
                    T.tma_copy(B[ko * block_K, bx * block_N], B_s[s, :, :], barrier=full[s])
                    T.barrier_arrive(full[s])

            with T.ws(1):  # consumer
                T.clear(C_f)
                for ko in range(T.ceildiv(K, block_K)):
                    s = ko % num_stages
                    T.barrier_wait(full[s], (ko // num_stages) % 2)
                    if use_wgmma:
                        T.wgmma_gemm(A_s[s, :, :], B_s[s, :, :], C_f)
                        T.wait_wgmma(0)
                    else:
                        T.gemm(A_s[s, :, :], B_s[s, :, :], C_f)
                    T.barrier_arrive(empty[s])
                T.copy(C_f, C[by * block_M, bx * block_N])

    return main


def hopper_target():
    """A Hopper GPU when the default target is one, else the emulator;
    TILELANG_WS_TARGET names another."""
    from tilelang.utils.target import hopper_target as default

    return os.environ.get("TILELANG_WS_TARGET") or default()


def main():
    target = hopper_target()
    M, N, K = 256, 256, 512
    kernel = tilelang.compile(gemm_ws(M, N, K), out_idx=[2], target=target)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = kernel(a, b)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=1e-2, atol=5e-2)
    print(f"warp-specialized GEMM {M}x{N}x{K} on '{target}' matches numpy")


if __name__ == "__main__":
    main()
