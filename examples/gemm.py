"""GEMM with float16 inputs and float32 accumulation, written both ways TileLang allows:
a @tilelang.jit factory returning a T.prim_func (lazy) and an eager @tilelang.jit
function with T.const sizes. Shapes are deliberately not multiples of the tile sizes;
both results are checked against numpy in float32."""

import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def gemm_lazy(M, N, K, block_M=64, block_N=64, block_K=32):
    @T.prim_func
    def gemm(
        A: T.Tensor((M, K), T.float16),
        B: T.Tensor((K, N), T.float16),
        C: T.Tensor((M, N), T.float32),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), T.float16)
            B_shared = T.alloc_shared((block_K, block_N), T.float16)
            C_local = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm


@tilelang.jit
def gemm_eager(A, B, block_M=64, block_N=64, block_K=32):
    M, N, K = T.const("M, N, K")
    A: T.Tensor((M, K), T.float16)
    B: T.Tensor((K, N), T.float16)
    C = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), T.float16)
        B_shared = T.alloc_shared((block_K, block_N), T.float16)
        C_local = T.alloc_fragment((block_M, block_N), T.float32)
        T.clear(C_local)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
            T.copy(A[by * block_M, k * block_K], A_shared)
            T.copy(B[k * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C[by * block_M, bx * block_N])
    return C


def main():
    M, N, K = 300, 200, 100
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    ref = a.astype(np.float32) @ b.astype(np.float32)

    for style, c in (
        ("lazy jit factory", gemm_lazy(M, N, K)(a, b)),
        ("eager jit", gemm_eager(a, b)),
    ):
        err = float(np.abs(c - ref).max())
        np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3)
        print(
            f"gemm ({style}): {M}x{N}x{K} float16 -> float32 matches numpy (max abs err {err:.3g})"
        )


if __name__ == "__main__":
    main()
