"""GEMM with a 2:4 structured-sparse A: C = A @ B, in TileLang's sparse-gemm form.

A [M, K] keeps at most 2 of every 4 consecutive elements along K (the pattern pruned
weights follow). tilelang.utils.sparse.compress stores it as its kept values A_sparse
[M, K // 2] and metadata E [M, K // 16] (int16; one 4-bit code per group of 4: the
positions of its two kept values). The kernel copies the three tiles of each step
(E, A_sparse, B) through a T.Pipelined loop and calls T.gemm_sp, which runs on the
sparse tensor cores on sm_80 and later, sm_90a included (mma.sp m16n8k32 on the kept
values and the metadata), and elsewhere decodes the A tile and multiplies it with
T.gemm's path (simdgroup matrices on Metal, loops on the CPU). E is row-major, as
compress writes it by default, so it carries no layout annotation (metadata in CUTLASS's
order, torch's semi-structured `.meta` for example, would be annotated with
tilelang.layout.make_cutlass_metadata_layout; docs/guide/language.md, "Sparse GEMM").

The accumulator is float32; C is float32 unless out_dtype names another type (float16
for the bench against torch.matmul, whose output is float16). trans_B=True takes B as
[N, K] (K-major, a linear layer's weight), which sm_90a's wgmma.sp reads at widths
that are no multiple of 64 as well (96, 160 columns: one m64nNk32 a k-step).

The tiles do not divide M and N: the tails' copies read zeros, which contribute zeros.
"""

import numpy as np
import tilelang
import tilelang.language as T
from tilelang.utils.sparse import compress


@tilelang.jit(out_idx=[-1])
def gemm_sp(
    M,
    N,
    K,
    block_M=128,
    block_N=128,
    block_K=64,
    num_stages=3,
    threads=128,
    dtype="float16",
    out_dtype="float32",
    trans_B=False,
):
    e_factor, e_dtype = 16, "int16"  # 16 elements of K per int16 of metadata

    @T.prim_func
    def main(
        A_sparse: T.Tensor((M, K // 2), dtype),
        E: T.Tensor((M, K // e_factor), e_dtype),
        B: T.Tensor((N, K) if trans_B else (K, N), dtype),
        C: T.Tensor((M, N), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K // 2), dtype)
            E_shared = T.alloc_shared((block_M, block_K // e_factor), e_dtype)
            B_shared = T.alloc_shared((block_N, block_K) if trans_B else (block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A_sparse[by * block_M, k * block_K // 2], A_shared)
                T.copy(E[by * block_M, k * block_K // e_factor], E_shared)
                if trans_B:
                    T.copy(B[bx * block_N, k * block_K], B_shared)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm_sp(A_shared, E_shared, B_shared, C_local, transpose_B=trans_B)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def semi_sparse(M, K, rng):
    """A random float16 [M, K] with 2 zeros in every group of 4 along K."""
    a = rng.standard_normal((M, K // 4, 4)).astype(np.float16)
    drop = np.argsort(rng.random((M, K // 4, 4)), axis=-1)[..., :2]
    np.put_along_axis(a, drop, 0, axis=-1)
    return a.reshape(M, K)


def main():
    M, N, K = 200, 136, 256
    rng = np.random.default_rng(0)
    a = semi_sparse(M, K, rng)
    b = rng.standard_normal((K, N)).astype(np.float16)
    a_sparse, e = compress(a)
    kernel = gemm_sp(M, N, K, block_M=64, block_N=64, block_K=64, num_stages=2)
    c = kernel(a_sparse, e, b)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)
    err = float(np.abs(c - ref).max())
    print(
        f"2:4 sparse gemm: {M}x{N}x{K} float16 (A stored as {a_sparse.shape} values + "
        f"{e.shape} int16 metadata) matches numpy (max abs err {err:.3g})"
    )


if __name__ == "__main__":
    main()
