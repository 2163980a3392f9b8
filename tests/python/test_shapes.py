"""Symbolic shapes: one compiled T.dynamic kernel serves every runtime size (no
recompilation), dims are bound from argument shapes, `T.dynamic("m, n", dtype)` and the
old `T.symbolic` name, and eager `T.const` specialization."""

import importlib

import numpy as np
import pytest
import tilelang
import tilelang.language as T

jit_kernel = importlib.import_module("tilelang.jit.kernel")

rng = np.random.default_rng(11)


@pytest.fixture
def compile_counter(monkeypatch):
    calls = []
    real = jit_kernel.native_compile

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(jit_kernel, "native_compile", counting)
    return calls


def dynamic_gemm(N, K, bM=32, bN=32, bK=16):
    M = T.dynamic("M")

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float32"),
        B: T.Tensor((K, N), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float32")
            B_s = T.alloc_shared((bK, bN), "float32")
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * bM, bx * bN])

    return main


def test_one_dynamic_gemm_kernel_serves_every_m(compile_counter):
    N, K = 40, 24
    kernel = tilelang.compile(dynamic_gemm(N, K), out_idx=[-1], target="cpu")
    assert len(compile_counter) == 1
    source = kernel.get_kernel_source()
    b = rng.standard_normal((K, N)).astype(np.float32)
    for m in (1, 17, 100, 256):
        a = rng.standard_normal((m, K)).astype(np.float32)
        c = kernel(a, b)
        assert c.shape == (m, N)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    assert len(compile_counter) == 1, "calling with a new M must not recompile"
    assert kernel.get_kernel_source() == source


def test_dynamic_dims_bound_from_arguments_and_checked():
    m, n = T.dynamic("m, n", "int64")
    assert (m.name, n.name, str(m.dtype)) == ("m", "n", "int64")
    rows = T.symbolic("rows")

    @T.prim_func
    def main(
        A: T.Tensor((m, n), "float32"),
        B: T.Tensor((n, m), "float32"),
        R: T.Tensor((rows,), "int32"),
    ):
        with T.Kernel(T.ceildiv(m, 8), threads=1) as bx:
            for i, j in T.Parallel(8, n):
                if bx * 8 + i < m:
                    B[j, bx * 8 + i] = A[bx * 8 + i, j]
            if bx == 0:
                for r in T.serial(rows):
                    R[r] = m * 1000 + n * 10 + rows

    kernel = tilelang.compile(main, target="cpu")
    for shape in ((5, 3), (19, 11)):
        a = rng.standard_normal(shape).astype(np.float32)
        b = np.zeros(shape[::-1], np.float32)
        r = np.zeros(4, np.int32)
        kernel(a, b, r)
        np.testing.assert_array_equal(b, a.T)
        np.testing.assert_array_equal(r, shape[0] * 1000 + shape[1] * 10 + 4)
    with pytest.raises(Exception, match="B"):
        kernel(np.zeros((5, 3), np.float32), np.zeros((5, 3), np.float32), np.zeros(4, np.int32))


def test_dynamic_needs_integer_dtype_and_names():
    with pytest.raises(ValueError, match="needs an integer dtype"):
        T.dynamic("m", "float32")
    with pytest.raises(ValueError, match="expected names such as 'm' or 'm, n'"):
        T.dynamic("1m")


@tilelang.jit(target="cpu")
def scale_rows(A, factor=2.0):
    M, N = T.const("M, N")
    A: T.Tensor((M, N), T.float32)
    B = T.empty((M, N), T.float32)
    with T.Kernel(M, threads=1) as bx:
        for j in T.serial(N):
            B[bx, j] = A[bx, j] * factor + bx
    return B


def test_eager_const_specializes_per_shape(compile_counter):
    for shape in ((3, 5), (7, 2), (3, 5)):
        a = rng.standard_normal(shape).astype(np.float32)
        ref = a * 2 + np.arange(shape[0], dtype=np.float32)[:, None]
        np.testing.assert_allclose(scale_rows(a), ref, rtol=1e-6)
    assert len(compile_counter) == 2  # (3, 5) is served from the first specialization
    kernel = scale_rows.compile(M=4, N=6)
    assert "6" in kernel.prim_func.script()


def gemm_of_k_slices(M, N, K, parts):
    """The tiles held whole, multiplied in `parts` K slices at offsets of the loop
    variable (TileLang's language/test_tilelang_language_wgmma_gemm.py slicing, with
    T.gemm): a slice's extent (j + 1) * k - j * k is the constant k."""
    k = K // parts

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((N, K), "float16"),
        D: T.Tensor((M, N), "float16"),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared((N, K), "float16")
            C = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(C)
            for j in T.serial(parts):
                T.gemm(
                    A_s[:, j * k : (j + 1) * k], B_s[:, j * k : (j + 1) * k], C, transpose_B=True
                )
            T.copy(C, D)

    return main


@pytest.mark.parametrize(
    "target", ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate"]
)
def test_gemm_operands_sliced_at_a_loop_offset(target):
    kernel = tilelang.compile(gemm_of_k_slices(64, 64, 128, 2), target=target)
    a = rng.standard_normal((64, 128)).astype(np.float16)
    b = rng.standard_normal((64, 128)).astype(np.float16)
    d = np.zeros((64, 64), np.float16)
    kernel(a, b, d)
    np.testing.assert_allclose(
        d.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32).T, rtol=1e-2, atol=5e-2
    )
