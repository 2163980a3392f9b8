"""Per-column fragments (src/layout/fragment.h, Cols): a T.reduce over dim 0 of a 2-d
fragment whose columns divide over the threads keeps both in registers, each thread
holding whole columns and folding them in a loop of its own (no shuffles, no shared
memory), and a 2-d fragment read [k, j] in a loop over j reads the thread's own
registers; a vector indexed by the last variable of a 2-d T.Parallel loop (a mask over
the columns of a score tile) holds the columns each thread's part of the tile covers,
in registers. These are the combine and split kernels of TileLang's flash_decoding
example (example_gqa_decode.py), which ran both through shared memory before."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate", "metal -emulate"]
rng = np.random.default_rng(4102)


def lse_combine(S, C, threads, kind="max", clear=True):
    """out[j] = log2(sum_k 2^(x[k, j] - m[j])) + m[j] with m = T.reduce_<kind>(x, dim=0),
    and red[j] = the reduction itself (after an initial 1.0 when not clear)."""

    @T.prim_func
    def main(
        X: T.Tensor((S, C), "float16"),
        Out: T.Tensor((C,), "float32"),
        Red: T.Tensor((C,), "float32"),
    ):
        with T.Kernel(1, threads=threads):
            x = T.alloc_fragment((S, C), "float16")
            m = T.alloc_fragment((C,), "float32")
            acc = T.alloc_fragment((C,), "float32")
            for k, j in T.Parallel(S, C):
                x[k, j] = X[k, j]
            T.fill(m, 1.0)
            if kind == "max":
                T.reduce_max(x, m, dim=0, clear=clear)
            elif kind == "min":
                T.reduce_min(x, m, dim=0, clear=clear)
            elif kind == "sum":
                T.reduce_sum(x, m, dim=0, clear=clear)
            else:
                T.reduce_absmax(x, m, dim=0, clear=clear)
            T.clear(acc)
            for k in T.serial(S):
                for j in T.Parallel(C):
                    acc[j] += T.exp2(x[k, j] - m[j])
            for j in T.Parallel(C):
                Out[j] = T.log2(acc[j]) + m[j]
            T.copy(m, Red)

    return main


REDUCE = {
    "max": np.max,
    "min": np.min,
    "sum": np.sum,
    "absmax": lambda a, axis: np.abs(a).max(axis),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "kind,clear", [("max", True), ("min", True), ("sum", False), ("absmax", True), ("max", False)]
)
def test_reduce_over_dim_0_stays_in_registers_and_matches_numpy(target, kind, clear):
    S, C, threads = 8, 256, 128
    kernel = tilelang.compile(
        lse_combine(S, C, threads, kind, clear), out_idx=[1, 2], target=target
    )
    src = kernel.get_kernel_source()
    if target.startswith("cuda"):
        # Two columns per thread, all 8 rows of each: 16 registers of x, no shared memory,
        # no shuffle.
        assert "tl::half_t x[16];" in src and "float m[2];" in src, src
        assert "TL_DYNAMIC_SHARED" not in src and "__shared__" not in src, src
        assert "AllReduce<" not in src and "__syncthreads" not in src, src
    x = (rng.standard_normal((S, C)) * 4).astype(np.float16)
    out, red = kernel(x)
    xd = x.astype(np.float64)
    m = REDUCE[kind](xd, axis=0)
    if not clear:
        m = m + 1.0 if kind == "sum" else np.maximum(m, 1.0)
    np.testing.assert_allclose(red, m, rtol=1e-6, atol=1e-6)
    ref = np.log2(np.exp2(xd - m).sum(0)) + m
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_reduce_over_dim_0_of_too_few_columns_still_matches_numpy(target):
    """64 columns over 128 threads: no thread can hold whole columns alone, so the
    fragments stay block-wide, as before; the results are the same."""
    S, C = 8, 64
    kernel = tilelang.compile(lse_combine(S, C, 128), out_idx=[1, 2], target=target)
    x = (rng.standard_normal((S, C)) * 4).astype(np.float16)
    out, red = kernel(x)
    xd = x.astype(np.float64)
    m = xd.max(0)
    np.testing.assert_allclose(red, m, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out, np.log2(np.exp2(xd - m).sum(0)) + m, rtol=1e-5, atol=1e-5)


def masked_scores(M, N, K, use_gemm, via_shared=True):
    """S = A @ B^T (or A itself) with the columns whose mask byte is 0 set to -inf,
    then each column's mask copied out (Mo) from the per-column vector; the mask is
    copied into the vector from a shared copy (via_shared) or from global memory."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((N, K), "float16"),
        Mask: T.Tensor((N,), "uint8"),
        S: T.Tensor((M, N), "float32"),
        Mo: T.Tensor((N,), "uint8"),
    ):
        with T.Kernel(1, threads=128):
            a_s = T.alloc_shared((M, K), "float16")
            b_s = T.alloc_shared((N, K), "float16")
            s = T.alloc_fragment((M, N), "float32")
            mask = T.alloc_fragment((N,), "uint8")
            if via_shared:
                mask_s = T.alloc_shared((N,), "uint8")
                T.copy(Mask, mask_s)
                T.copy(mask_s, mask)
            else:
                T.copy(Mask, mask)
            if use_gemm:
                T.copy(A, a_s)
                T.copy(B, b_s)
                T.clear(s)
                T.gemm(a_s, b_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
            else:
                for i, j in T.Parallel(M, N):
                    s[i, j] = A[i, j]
            for i, j in T.Parallel(M, N):
                s[i, j] = T.if_then_else(mask[j] != 0, s[i, j], -T.infinity("float32"))
            T.copy(s, S)
            T.copy(mask, Mo)

    return main


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("use_gemm", [True, False], ids=["gemm_tile", "blocked_tile"])
@pytest.mark.parametrize("via_shared", [True, False], ids=["from_shared", "from_global"])
def test_per_column_mask_is_read_from_registers_and_matches_numpy(target, use_gemm, via_shared):
    M, N, K = 64, 64, 64
    kernel = tilelang.compile(
        masked_scores(M, N, K, use_gemm, via_shared), out_idx=[3, 4], target=target
    )
    src = kernel.get_kernel_source()
    if target.startswith("cuda"):
        if via_shared or not use_gemm:
            # The mask is a per-thread register array, each thread's columns (from
            # global memory: one 4-byte load per thread on the blocked tile).
            assert "uint8_t mask[" in src, src
            assert "TL_SMEM(mask," not in src, src
        else:
            # Loaded from global memory over an accumulator's columns (16 bytes per
            # thread, 2 at a time, each column held by 32 threads): one shared copy,
            # each element loaded once.
            assert "uint8_t mask[" not in src, src
            assert "TL_SMEM(mask," in src, src
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    mask = (rng.random(N) < 0.6).astype(np.uint8)
    s, mo = kernel(a, b, mask)
    ref = a.astype(np.float64) @ b.astype(np.float64).T if use_gemm else a.astype(np.float64)
    ref = np.where(mask[None, :] != 0, ref, -np.inf)
    np.testing.assert_allclose(s, ref, rtol=1e-3, atol=1e-3)
    np.testing.assert_array_equal(mo, mask)
