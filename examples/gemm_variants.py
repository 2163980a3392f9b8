"""GEMM variants: every transpose combination of A and B, and mixed precision
(float16 -> float32, bfloat16 -> float32, int8 -> int32).

One @tilelang.jit factory covers all variants: `trans_A` stores A as (K, M) and
`trans_B` stores B as (N, K), as TileLang's T.gemm(transpose_A=, transpose_B=)
expects. The shapes are not multiples of the tiles, so the edge tiles read zeros
past the tensors and drop their writes. Each result is checked against numpy.
"""

import ml_dtypes
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def matmul(
    M,
    N,
    K,
    block_M,
    block_N,
    block_K,
    trans_A=False,
    trans_B=False,
    in_dtype="float16",
    accum_dtype="float32",
):
    A_shape = (K, M) if trans_A else (M, K)
    B_shape = (N, K) if trans_B else (K, N)
    A_tile = (block_K, block_M) if trans_A else (block_M, block_K)
    B_tile = (block_N, block_K) if trans_B else (block_K, block_N)

    @T.prim_func
    def gemm(
        A: T.Tensor(A_shape, in_dtype),
        B: T.Tensor(B_shape, in_dtype),
        C: T.Tensor((M, N), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared(A_tile, in_dtype)
            B_shared = T.alloc_shared(B_tile, in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                if trans_A:
                    T.copy(A[k * block_K, by * block_M], A_shared)
                else:
                    T.copy(A[by * block_M, k * block_K], A_shared)
                if trans_B:
                    T.copy(B[bx * block_N, k * block_K], B_shared)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_A=trans_A, transpose_B=trans_B)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm


NP_DTYPES = {
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "int8": np.int8,
}


def random_operand(rng, shape, dtype):
    if dtype == "int8":
        return rng.integers(-128, 128, size=shape, dtype=np.int8)
    return rng.standard_normal(shape).astype(NP_DTYPES[dtype])


def run_case(rng, M, N, K, trans_A, trans_B, in_dtype, accum_dtype):
    a = random_operand(rng, (K, M) if trans_A else (M, K), in_dtype)
    b = random_operand(rng, (N, K) if trans_B else (K, N), in_dtype)
    kernel = matmul(M, N, K, 32, 32, 32, trans_A, trans_B, in_dtype, accum_dtype)
    c = kernel(a, b)

    ref_type = np.int64 if in_dtype == "int8" else np.float64
    a_ref = a.astype(ref_type).T if trans_A else a.astype(ref_type)
    b_ref = b.astype(ref_type).T if trans_B else b.astype(ref_type)
    ref = a_ref @ b_ref
    if in_dtype == "int8":
        np.testing.assert_array_equal(c.astype(np.int64), ref)
        err = 0
    else:
        err = float(np.abs(c - ref).max())
        np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)
    layout = f"A{'^T' if trans_A else ''} @ B{'^T' if trans_B else ''}"
    print(
        f"gemm {layout:10s} {M}x{N}x{K} {in_dtype} -> {accum_dtype}: matches numpy "
        f"(max abs err {err:.3g})"
    )


def main():
    rng = np.random.default_rng(0)
    M, N, K = 70, 50, 90
    # Four kernels cover the four transpose combinations and the three input dtypes.
    run_case(rng, M, N, K, False, False, "float16", "float32")
    run_case(rng, M, N, K, False, True, "float16", "float32")
    run_case(rng, M, N, K, True, False, "bfloat16", "float32")
    run_case(rng, M, N, K, True, True, "int8", "int32")


if __name__ == "__main__":
    main()
