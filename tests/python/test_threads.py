"""Kernels that read thread indices run each thread of a block (fibers on the CPU):
per-thread locals, barriers, thread layouts as lists, mixed with block-wide tile ops;
and T.gemm with operands in shared or fragment memory, transposes and mixed dtypes."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

rng = np.random.default_rng(7)


def neighbour_sum(N, threads=64):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            tx = T.get_thread_binding(0)
            S = T.alloc_shared((threads,), "float32")
            acc = T.alloc_local((1,), "float32")
            acc[0] = A[bx * threads + tx] * 2
            S[tx] = acc[0]
            T.sync_threads()
            B[bx * threads + tx] = S[(tx + 1) % threads] + acc[0]

    return main


def test_barrier_orders_shared_memory_between_threads():
    n = 200  # not a multiple of the block: the tail is predicated
    kernel = tilelang.compile(neighbour_sum(n), out_idx=[-1], target="cpu")
    a = rng.standard_normal(n).astype(np.float32)
    out = kernel(a)
    padded = np.zeros(256, np.float32)
    padded[:n] = a * 2
    blocks = padded.reshape(-1, 64)
    ref = (np.roll(blocks, -1, axis=1) + blocks).reshape(-1)[:n]
    np.testing.assert_allclose(out, ref, rtol=1e-6)


def two_dim_threads(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=[N, M]) as _:
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            B[ty, tx] = A[ty, tx] + ty * 100 + tx

    return main


def test_threads_as_a_list_give_each_dimension_its_index():
    kernel = tilelang.compile(two_dim_threads(4, 8), out_idx=[-1], target="cpu")
    a = rng.standard_normal((4, 8)).astype(np.float32)
    ref = a + np.arange(4)[:, None] * 100 + np.arange(8)[None, :]
    np.testing.assert_allclose(kernel(a), ref, rtol=1e-6)


def mixed_tile_ops_and_threads(M, N, threads=32):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, 8), threads=threads) as bx:
            tile = T.alloc_shared((8, N), "float32")
            T.copy(A[bx * 8, 0], tile)  # block-wide
            tx = T.get_thread_binding()
            if tx < 8:  # per thread: one row each
                for j in T.serial(N):
                    tile[tx, j] = tile[tx, j] * (tx + 1)
            T.sync_threads()
            for i, j in T.Parallel(8, N):  # block-wide again
                tile[i, j] += 1
            T.copy(tile, B[bx * 8, 0])

    return main


def test_block_wide_ops_and_per_thread_code_interleave():
    kernel = tilelang.compile(mixed_tile_ops_and_threads(20, 16), out_idx=[-1], target="cpu")
    a = rng.standard_normal((20, 16)).astype(np.float32)
    scale = (np.arange(20) % 8 + 1)[:, None]
    np.testing.assert_allclose(kernel(a), a * scale + 1, rtol=1e-5, atol=1e-5)


def gemm_variant(M, N, K, a_scope, b_scope, trans_a, trans_b, in_dtype, acc_dtype):
    a_shape = (K, M) if trans_a else (M, K)
    b_shape = (N, K) if trans_b else (K, N)
    alloc = {"shared": T.alloc_shared, "fragment": T.alloc_fragment}

    @T.prim_func
    def main(
        A: T.Tensor(a_shape, in_dtype),
        B: T.Tensor(b_shape, in_dtype),
        C: T.Tensor((M, N), acc_dtype),
    ):
        with T.Kernel(1, threads=128):
            A_t = alloc[a_scope](a_shape, in_dtype)
            B_t = alloc[b_scope](b_shape, in_dtype)
            C_f = T.alloc_fragment((M, N), acc_dtype)
            T.copy(A, A_t)
            T.copy(B, B_t)
            T.gemm(
                A_t,
                B_t,
                C_f,
                transpose_A=trans_a,
                transpose_B=trans_b,
                policy=T.GemmWarpPolicy.FullRow,
                clear_accum=True,
                k_pack=2,
            )
            T.copy(C_f, C)

    return main


@pytest.mark.parametrize(
    "a_scope,b_scope,trans_a,trans_b,in_dtype,acc_dtype",
    [
        ("shared", "shared", False, False, "float16", "float32"),
        ("fragment", "shared", True, False, "bfloat16", "float32"),
        ("shared", "fragment", False, True, "float32", "float32"),
        ("fragment", "fragment", True, True, "int8", "int32"),
    ],
)
def test_gemm_operand_scopes_transposes_and_dtypes(
    a_scope, b_scope, trans_a, trans_b, in_dtype, acc_dtype
):
    M, N, K = 32, 48, 24
    kernel = tilelang.compile(
        gemm_variant(M, N, K, a_scope, b_scope, trans_a, trans_b, in_dtype, acc_dtype),
        out_idx=[-1],
        target="cpu",
    )
    np_in = T.dtype(in_dtype).as_numpy()
    if in_dtype == "int8":
        a = rng.integers(-8, 8, (K, M) if trans_a else (M, K)).astype(np.int8)
        b = rng.integers(-8, 8, (N, K) if trans_b else (K, N)).astype(np.int8)
    else:
        a = rng.standard_normal((K, M) if trans_a else (M, K)).astype(np_in)
        b = rng.standard_normal((N, K) if trans_b else (K, N)).astype(np_in)
    a32 = a.astype(np.float64).T if trans_a else a.astype(np.float64)
    b32 = b.astype(np.float64).T if trans_b else b.astype(np.float64)
    out = kernel(a, b)
    if in_dtype == "int8":
        np.testing.assert_array_equal(out, (a32 @ b32).astype(np.int32))
    else:
        np.testing.assert_allclose(out, a32 @ b32, rtol=2e-2, atol=2e-2)


def test_gemm_shape_mismatch_names_both_operands():
    def bad():
        @T.prim_func
        def main(A: T.Tensor((16, 8), "float16"), B: T.Tensor((16, 8), "float16")):
            with T.Kernel(1, threads=32):
                A_s = T.alloc_shared((16, 8), "float16")
                B_s = T.alloc_shared((16, 8), "float16")
                C_f = T.alloc_fragment((16, 8), "float32")
                T.gemm(A_s, B_s, C_f)

        return main

    with pytest.raises(
        tilelang.TileLangError, match=r"K extent of A 'A_s'.*differs.*B 'B_s'.*\(8 vs 16\)"
    ):
        bad()
