"""Argument checking done in C++ (rank, shape, dtype, strides, symbolic bindings) and
the default predication of global accesses that may fall outside a tensor."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

rng = np.random.default_rng(1)


def unguarded_add(N, block=128):
    # No `if idx < N`: the tail block must neither write past C nor read past A/B.
    @T.prim_func
    def add(
        A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")
    ):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return add


def test_tail_of_unguarded_parallel_loop_is_predicated():
    n = 1000
    kernel = tilelang.compile(unguarded_add(n), out_idx=[-1], target="cpu")
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    np.testing.assert_allclose(kernel(a, b), a + b, rtol=1e-6)
    assert "if (" in kernel.get_kernel_source()


def test_predicate_disappears_when_tiles_divide_the_shape():
    kernel = tilelang.compile(unguarded_add(1024), out_idx=[-1], target="cpu")
    assert "if (" not in kernel.get_kernel_source()


def test_safe_memory_pass_config_turns_guards_off():
    kernel = tilelang.compile(
        unguarded_add(1000),
        out_idx=[-1],
        target="cpu",
        pass_configs={"tl.disable_safe_memory_legalize": True},
    )
    assert "if (" not in kernel.get_kernel_source()


def copy_rows(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=1):
            for i, j in T.Parallel(M, N):
                B[i, j] = A[i, j]

    return main


@pytest.fixture(scope="module")
def copier():
    return tilelang.compile(copy_rows(4, 8), target="cpu")


def test_rank_mismatch_names_parameter(copier):
    with pytest.raises(
        tilelang.TileLangError, match=r"argument 'A' .* 1 dimension\(s\).*expected 2"
    ):
        copier(np.zeros(32, np.float32), np.zeros((4, 8), np.float32))


def test_shape_mismatch_names_dimension(copier):
    with pytest.raises(
        tilelang.TileLangError, match=r"argument 'B' .*dimension 1 is 9, expected 8"
    ):
        copier(np.zeros((4, 8), np.float32), np.zeros((4, 9), np.float32))


def test_dtype_mismatch(copier):
    with pytest.raises(
        tilelang.TileLangError, match=r"argument 'A' .* has dtype float64, expected float32"
    ):
        copier(np.zeros((4, 8), np.float64), np.zeros((4, 8), np.float32))


def test_non_contiguous_tensor_is_refused(copier):
    a = np.zeros((8, 4), np.float32).T  # shape (4, 8), column-major
    with pytest.raises(tilelang.TileLangError, match=r"argument 'A' .* stride .* contiguous"):
        copier(a, np.zeros((4, 8), np.float32))


def test_symbolic_dim_must_agree_across_arguments():
    m = T.dynamic("m")
    kernel = tilelang.compile(copy_rows(m, 8), target="cpu")
    a = rng.standard_normal((5, 8)).astype(np.float32)
    b = np.zeros((5, 8), np.float32)
    kernel(a, b)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(tilelang.TileLangError, match=r"'m' was bound to 5"):
        kernel(a, np.zeros((6, 8), np.float32))


def test_scalar_where_tensor_expected(copier):
    with pytest.raises(tilelang.TileLangError, match=r"argument 'A' .* must be a tensor"):
        copier(3, np.zeros((4, 8), np.float32))


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
def test_an_empty_tensor_takes_any_strides(target):
    """A GEMM over K = 0 (TileLang issue 1697): torch gives the (M, 0) operand strides
    (1, 1), numpy (0, 2); with no element to address, any strides are accepted, and the
    product is zeros."""
    torch = pytest.importorskip("torch")
    M, N, K = 64, 32, T.dynamic("K")

    @T.prim_func
    def mm(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float16"),
    ):
        with T.Kernel(1, 1, threads=128) as (_bx, _by):
            A_s = T.alloc_shared((M, 32), "float16")
            B_s = T.alloc_shared((32, N), "float16")
            C_l = T.alloc_fragment((M, N), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, 32)):
                T.copy(A[0, k * 32], A_s)
                T.copy(B[k * 32, 0], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C)

    kernel = tilelang.compile(mm, out_idx=-1, target=target)
    c = kernel(torch.randn(M, 0, dtype=torch.float16), torch.randn(0, N, dtype=torch.float16))
    assert c.shape == (M, N) and not c.any()
    c = kernel(np.empty((M, 0), np.float16), np.empty((0, N), np.float16))
    assert c.shape == (M, N) and not c.any()
    a = np.random.default_rng(1).standard_normal((M, 64)).astype(np.float16)
    b = np.random.default_rng(2).standard_normal((64, N)).astype(np.float16)
    np.testing.assert_allclose(
        kernel(a, b), a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2, atol=2e-2
    )
