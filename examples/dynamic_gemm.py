"""Dynamic-shape GEMM: M is `T.dynamic("m")`, so one compiled kernel serves every
number of rows (a batch of tokens of any length, say). The grid size
T.ceildiv(m, block_M) and the edge guards are computed at run time from the
shape of A; N and K stay compile-time constants.

The same kernel object is called with several M, none a multiple of the tile,
and each result is checked against numpy.
"""

import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def matmul_dynamic_m(
    N, K, block_M=32, block_N=32, block_K=32, dtype="float16", accum_dtype="float32"
):
    M = T.dynamic("m")

    @T.prim_func
    def gemm(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm


def main():
    N, K = 72, 100
    kernel = matmul_dynamic_m(N, K)
    source = kernel.get_kernel_source()

    rng = np.random.default_rng(0)
    b = rng.standard_normal((K, N)).astype(np.float16)
    for m in (1, 45, 130, 257):
        a = rng.standard_normal((m, K)).astype(np.float16)
        c = kernel(a, b)
        assert c.shape == (m, N), c.shape
        ref = a.astype(np.float32) @ b.astype(np.float32)
        np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)
        err = float(np.abs(c - ref).max())
        print(f"dynamic gemm: M={m:3d}, N={N}, K={K} matches numpy (max abs err {err:.3g})")

    # Calling with new M values used the kernel compiled once, not a new one per M.
    assert matmul_dynamic_m(N, K) is kernel
    assert kernel.get_kernel_source() == source
    print("dynamic gemm: one compiled kernel served every M")


if __name__ == "__main__":
    main()
