"""TileLang language names that kernels write and TVM spells (T.Select, T.align_up,
T.atan and the inverse trigonometric functions, T.func_attr, T.clamp's keywords,
T.StridedTensor[...], T.Kernel without a grid, T.warp_reduce_*): what each computes on
the cpu target and in the CUDA emulator (sm_80), against numpy on random data, and the
frontend's errors."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate"]
rng = np.random.default_rng(5)


@pytest.mark.parametrize("target", TARGETS)
def test_select_align_up_clamp(target):
    n = 128

    @T.prim_func
    def main(
        A: T.Tensor((n,), "float32"),
        I: T.Tensor((n,), "int32"),
        S: T.Tensor((n,), "float32"),
        U: T.Tensor((n,), "int32"),
        C: T.Tensor((n,), "float32"),
    ):
        T.func_attr({"tir.noalias": True})
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            S[tx] = T.Select(A[tx] > 0, A[tx] * 2, T.Select(True, -A[tx], 5.0))
            U[tx] = T.align_up(I[tx], 16) + T.align_up(7, 4)
            C[tx] = T.clamp(A[tx], min_val=-0.5, max_val=0.25) + T.clamp(A[tx], -1.0, 1.0)

    kernel = tilelang.compile(main, out_idx=[2, 3, 4], target=target)
    a = rng.standard_normal(n).astype(np.float32)
    i = rng.integers(-100, 100, n).astype(np.int32)
    s, u, c = kernel(a, i)
    np.testing.assert_array_equal(s, np.where(a > 0, a * 2, -a))
    np.testing.assert_array_equal(u, -(-i // 16) * 16 + 8)
    np.testing.assert_allclose(c, np.clip(a, -0.5, 0.25) + np.clip(a, -1, 1), rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_inverse_trigonometric(target):
    n = 64

    @T.prim_func
    def main(
        A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), O: T.Tensor((7, n), "float32")
    ):
        with T.Kernel(threads=n):
            tx = T.get_thread_binding()
            O[0, tx] = T.atan(A[tx] * 4)
            O[1, tx] = T.asin(A[tx])
            O[2, tx] = T.acos(A[tx])
            O[3, tx] = T.atan2(A[tx], B[tx])
            O[4, tx] = T.asinh(A[tx] * 3)
            O[5, tx] = T.acosh(B[tx] + 2)
            O[6, tx] = T.atanh(A[tx] * 0.9)

    kernel = tilelang.compile(main, out_idx=[2], target=target)
    a = rng.uniform(-1, 1, n).astype(np.float32)
    b = rng.uniform(-1, 1, n).astype(np.float32)
    out = kernel(a, b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = [
        np.arctan(a64 * 4),
        np.arcsin(a64),
        np.arccos(a64),
        np.arctan2(a64, b64),
        np.arcsinh(a64 * 3),
        np.arccosh(b64 + 2),
        np.arctanh(a64 * np.float32(0.9)),
    ]
    np.testing.assert_allclose(out, np.stack(ref), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_strided_tensor_subscript(target):
    m, n = 8, 16

    @T.prim_func
    def main(A: T.StridedTensor[(m, n), (2 * n, 1), T.float32], B: T.Tensor((m, n), "float32")):
        with T.Kernel(m, threads=n) as bx:
            tx = T.get_thread_binding()
            B[bx, tx] = A[bx, tx] + 1

    kernel = tilelang.compile(main, out_idx=[1], target=target)
    base = rng.standard_normal((m, 2 * n)).astype(np.float32)
    np.testing.assert_array_equal(kernel(base[:, :n]), base[:, :n] + 1)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "int32", "int64"])
def test_warp_reduce(target, dtype):
    n = 64

    @T.prim_func
    def main(A: T.Tensor((n,), dtype), O: T.Tensor((5, n), dtype)):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            v = A[tx]
            O[0, tx] = T.warp_reduce_sum(v)
            O[1, tx] = T.warp_reduce_max(v)
            O[2, tx] = T.warp_reduce_min(v)
            if dtype != "float32":
                O[3, tx] = T.warp_reduce_bitand(v)
                O[4, tx] = T.warp_reduce_bitor(v)

    kernel = tilelang.compile(main, out_idx=[1], target=target)
    if dtype == "float32":
        a = rng.standard_normal(n).astype(np.float32)
    else:
        a = rng.integers(1, 1 << 20, n).astype(dtype)
    out = kernel(a)
    warps = a.reshape(2, 32)
    expect = [warps.sum(1), warps.max(1), warps.min(1)]
    if dtype != "float32":
        expect += [np.bitwise_and.reduce(warps, 1), np.bitwise_or.reduce(warps, 1)]
    for row, e in enumerate(expect):
        ref = np.repeat(e, 32).astype(dtype)
        if dtype == "float32":
            np.testing.assert_allclose(out[row], ref, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(out[row], ref)


def test_errors():
    with pytest.raises(Exception, match="T.func_attr takes a dict with string keys"):

        @T.prim_func
        def f1(A: T.Tensor((4,), "float32")):
            T.func_attr(["tir.noalias"])
            with T.Kernel(1):
                A[0] = 1.0

    with pytest.raises(
        Exception, match=r"T.warp_reduce_bitor value must be an integer, got float32"
    ):

        @T.prim_func
        def f2(A: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=32):
                tx = T.get_thread_binding()
                A[tx] = T.warp_reduce_bitor(A[tx])

    with pytest.raises(Exception, match=r"T.clamp\(x, min_val, max_val\): max_val not given"):

        @T.prim_func
        def f3(A: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=32):
                tx = T.get_thread_binding()
                A[tx] = T.clamp(A[tx], min_val=0.0)

    with pytest.raises(
        Exception, match=r"T.StridedTensor\[...\] takes a shape, strides and a dtype"
    ):
        T.StridedTensor[(4, 4), "float32"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("threads", [32, 96])
def test_block_votes_and_pdl(target, threads):
    @T.prim_func
    def main(A: T.Tensor((threads,), "float32"), O: T.Tensor((4, threads), "int32")):
        with T.Kernel(1, threads=threads):
            T.pdl_sync()
            tx = T.get_thread_binding()
            O[0, tx] = T.syncthreads_count(A[tx] > 0)
            O[1, tx] = T.syncthreads_and(A[tx] > -10)
            O[2, tx] = T.syncthreads_or(A[tx] > 100)
            O[3, tx] = T.syncthreads_count(1)
            T.pdl_trigger()

    kernel = tilelang.compile(main, out_idx=[1], target=target)
    a = rng.standard_normal(threads).astype(np.float32)
    out = kernel(a)
    np.testing.assert_array_equal(out[0], np.full(threads, (a > 0).sum()))
    np.testing.assert_array_equal(out[1], np.ones(threads))
    np.testing.assert_array_equal(out[2], np.zeros(threads))
    np.testing.assert_array_equal(out[3], np.full(threads, threads))


def test_block_vote_in_parallel_is_an_error():
    with pytest.raises(
        Exception, match=r"T.syncthreads_count cannot be used inside a T.Parallel loop"
    ):

        @T.prim_func
        def main(A: T.Tensor((32,), "int32")):
            with T.Kernel(1, threads=32):
                for i in T.Parallel(32):
                    A[i] = T.syncthreads_count(A[i] > 0)


@pytest.mark.parametrize("target", TARGETS)
def test_assume_and_var(target):
    """T.assume is a promise that changes no result; T.Var is a symbolic size."""
    n = T.Var("n", "int32")

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), lo: T.int32):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            T.assume(n % 4 == 0)
            for i in T.serial(T.ceildiv(n, 32)):
                T.assume(lo + i * 32 + tx >= 0)
                if i * 32 + tx < n:
                    B[i * 32 + tx] = A[i * 32 + tx] * 3

    kernel = tilelang.compile(main, target=target)
    a = rng.standard_normal(96).astype(np.float32)
    b = np.zeros(96, np.float32)
    kernel(a, b, 0)
    np.testing.assert_array_equal(b, a * 3)
    with pytest.raises(Exception, match="T.assume takes a condition such as `i < N`, got int32"):

        @T.prim_func
        def bad(A: T.Tensor((4,), "int32")):
            with T.Kernel(1, threads=4):
                T.assume(A[0] + 1)


@pytest.mark.parametrize("target", [*TARGETS, "metal -emulate"])
def test_tvm_storage_sync_is_the_barrier_of_its_scope(target):
    @T.prim_func
    def rev(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            S = T.alloc_shared((64,), "float32")
            S[tx] = A[tx]
            T.tvm_storage_sync("shared")
            B[tx] = S[63 - tx]

    a = rng.standard_normal(64).astype(np.float32)
    b = np.zeros(64, np.float32)
    tilelang.compile(rev, target=target)(a, b)
    np.testing.assert_array_equal(b, a[::-1])
    with pytest.raises(
        tilelang.TileLangError,
        match='takes "shared", "shared.dyn", "warp" or "global", got \'local\'',
    ):

        @T.prim_func
        def bad(A: T.Tensor((1,), "float32")):
            with T.Kernel(1):
                T.tvm_storage_sync("local")
