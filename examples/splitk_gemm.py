"""Split-K GEMM: the K dimension is cut into `split_k` slices, a third grid
dimension runs one slice per block, and every block adds its partial tile into a
float32 C with atomics. C must start at zero, so it is an input here (as in
TileLang's split-K example) rather than an `out_idx` output.

Two ways to write the atomic update are shown:
* per element, inside T.Parallel: `T.atomic_add(C[row, col], C_local[i, j])`;
* per tile, on a region: `T.atomic_add(C[rows, cols], C_local)`.
Blocks run concurrently on the CPU's threads too, so the atomics really matter.
M, N, K are not multiples of the tiles (nor K of split_k * block_K).
"""

import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def splitk_matmul(
    M,
    N,
    K,
    split_k,
    block_M=32,
    block_N=32,
    block_K=32,
    tile_atomic=False,
    dtype="float16",
    accum_dtype="float32",
):
    # K tiles handled by each slice; tiles past K read zeros.
    tiles_per_split = T.ceildiv(T.ceildiv(K, block_K), split_k)

    @T.prim_func
    def gemm(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k, threads=128) as (
            bx,
            by,
            bz,
        ):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(tiles_per_split, num_stages=2):
                k = (bz * tiles_per_split + ko) * block_K
                T.copy(A[by * block_M, k], A_shared)
                T.copy(B[k, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            if tile_atomic:
                T.atomic_add(
                    C[by * block_M : (by + 1) * block_M, bx * block_N : (bx + 1) * block_N],
                    C_local,
                )
            else:
                for i, j in T.Parallel(block_M, block_N):
                    T.atomic_add(C[by * block_M + i, bx * block_N + j], C_local[i, j])

    return gemm


def main():
    M, N, K, split_k = 90, 70, 500, 4
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    for tile_atomic in (False, True):
        kernel = splitk_matmul(M, N, K, split_k, tile_atomic=tile_atomic)
        c = np.zeros((M, N), dtype=np.float32)
        kernel(a, b, c)
        np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)
        err = float(np.abs(c - ref).max())
        form = "region atomic_add" if tile_atomic else "element atomic_add"
        print(
            f"split-K gemm ({form}): {M}x{N}x{K}, split_k={split_k}, float16 -> float32 "
            f"matches numpy (max abs err {err:.3g})"
        )


if __name__ == "__main__":
    main()
