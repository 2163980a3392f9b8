"""End-to-end CPU runs compared with numpy on random data, in both frontend styles,
including shapes that are not multiples of the tile sizes."""

import concurrent.futures

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T

rng = np.random.default_rng(0)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


@tilelang.jit(out_idx=[-1], target="cpu")
def add_lazy(N, block=128, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return main


@tilelang.jit(target="cpu")
def add_eager(A, B, block=128):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B: T.Tensor((N,), T.float32)
    C = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < N:
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return C


def gemm_factory(M, N, K, bM, bN, bK, trans_b=False, relu=False):
    b_shape = (N, K) if trans_b else (K, N)

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor(b_shape, "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bN, bK) if trans_b else (bK, bN), "float16")
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=3):
                T.copy(A[by * bM, k * bK], A_s)
                if trans_b:
                    T.copy(B[bx * bN, k * bK], B_s)
                else:
                    T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f, transpose_B=trans_b)
            if relu:
                for i, j in T.Parallel(bM, bN):
                    C_f[i, j] = T.max(C_f[i, j], 0)
            T.copy(C_f, C[by * bM, bx * bN])

    return main


def test_elementwise_add_lazy():
    a, b = rand(1000), rand(1000)
    np.testing.assert_allclose(add_lazy(1000)(a, b), a + b, rtol=1e-6)


def test_elementwise_add_eager_specializes_per_shape():
    for n in (300, 1000):
        a, b = rand(n), rand(n)
        np.testing.assert_allclose(add_eager(a, b), a + b, rtol=1e-6)
    a, b = rand(300), rand(300)
    np.testing.assert_allclose(add_eager(a, b), a + b, rtol=1e-6)
    assert len(add_eager._kernels) == 2


@pytest.mark.parametrize("trans_b", [False, True])
def test_gemm_shapes_not_multiple_of_tile(trans_b):
    M, N, K = 200, 130, 70
    kernel = tilelang.compile(gemm_factory(M, N, K, 64, 64, 32, trans_b), out_idx=-1, target="cpu")
    a = rand(M, K, dtype=np.float16)
    b = rand(N, K, dtype=np.float16) if trans_b else rand(K, N, dtype=np.float16)
    b_ref = b.astype(np.float32).T if trans_b else b.astype(np.float32)
    np.testing.assert_allclose(kernel(a, b), a.astype(np.float32) @ b_ref, rtol=1e-3, atol=1e-3)


def test_gemm_relu():
    M, N, K = 128, 96, 64
    kernel = tilelang.compile(gemm_factory(M, N, K, 64, 32, 32, relu=True), out_idx=[2])
    a, b = rand(M, K, dtype=np.float16), rand(K, N, dtype=np.float16)
    ref = np.maximum(a.astype(np.float32) @ b.astype(np.float32), 0)
    np.testing.assert_allclose(kernel(a, b), ref, rtol=1e-3, atol=1e-3)


def test_dynamic_rows_and_scalar_parameter():
    m = T.dynamic("m")

    @T.prim_func
    def scale(A: T.Tensor((m, 4), "float32"), B: T.Tensor((m, 4), "float32"), s: T.float32):
        with T.Kernel(T.ceildiv(m, 32), threads=32) as bx:
            for i, j in T.Parallel(32, 4):
                if bx * 32 + i < m:
                    B[bx * 32 + i, j] = A[bx * 32 + i, j] * s

    kernel = tilelang.compile(scale, out_idx=[1], target="cpu")
    for rows in (5, 77):
        a = rand(rows, 4)
        np.testing.assert_allclose(kernel(a, 3.0), a * 3.0, rtol=1e-6)


def test_bfloat16_arguments_and_outputs():
    @T.prim_func
    def twice(A: T.Tensor((64,), "bfloat16"), B: T.Tensor((64,), "bfloat16")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                B[i] = A[i] * 2

    a = rand(64).astype(ml_dtypes.bfloat16)
    out = tilelang.compile(twice, out_idx=-1)(a)
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(out.astype(np.float32), a.astype(np.float32) * 2, rtol=1e-2)


def test_control_flow_runs():
    @T.prim_func
    def count(A: T.Tensor((8,), "int32"), B: T.Tensor((8,), "int32")):
        with T.Kernel(8, threads=1) as bx:
            total = T.alloc_var(T.int32, init=0)
            for k in range(8):
                if A[k] < 0:
                    break
                if k == bx:
                    continue
                total += A[k]
            B[bx] = total

    a = rng.integers(0, 10, size=8).astype(np.int32)
    a[5] = -1
    out = tilelang.compile(count, out_idx=-1)(a)
    expect = np.array([a[:5].sum() - (a[i] if i < 5 else 0) for i in range(8)], dtype=np.int32)
    np.testing.assert_array_equal(out, expect)


def test_launches_from_several_python_threads():
    """Calls release the GIL; launches from several threads share the block pool,
    with per-thread fibers, and each sees exactly its own results."""

    @T.prim_func
    def shift(A: T.Tensor((77,), "float32"), B: T.Tensor((77,), "float32"), s: T.float32):
        with T.Kernel(T.ceildiv(77, 8), threads=8) as bx:
            tx = T.get_thread_binding(0)
            S = T.alloc_shared((8,), "float32")
            if bx * 8 + tx < 77:
                S[tx] = A[bx * 8 + tx]
            T.sync_threads()
            if bx * 8 + tx < 77:
                B[bx * 8 + tx] = S[(tx + 1) % 8] + s

    fibers = tilelang.compile(shift, out_idx=[1], target="cpu")
    idx = np.arange(77)
    tiles = add_lazy(77, block=8)

    def client(seed):
        r = np.random.default_rng(seed)
        for _ in range(40):
            a = r.standard_normal(77).astype(np.float32)
            b = r.standard_normal(77).astype(np.float32)
            np.testing.assert_allclose(tiles(a, b), a + b, rtol=1e-6)
            s = float(r.integers(-5, 5))
            got = fibers(a, s)
            # Thread tx of block bx reads its right neighbour's element; in the last,
            # partial block the threads whose neighbour lies past the end read nothing set.
            src = idx - idx % 8 + (idx % 8 + 1) % 8
            ok = src < 77
            np.testing.assert_allclose(got[ok], a[src[ok]] + s, rtol=1e-6)
        return seed

    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        assert sorted(pool.map(client, range(4))) == [0, 1, 2, 3]
