"""Region extents written through let-bound variables: `H0 = g * 64; H1 = H0 + 64`,
then `Out[b, H0:H1, :]` (TileLang's DeepSeek sparse MLA examples). The slice's extent
is H1 - H0, which only the lets' values make the constant 64; the builder folds it
when the op is made, so the fragment copied there stays in registers (before, the
copy did not pair up with the 64-row fragment, which went to shared memory: 128 KB
more for the example's 64 x 512 float32 accumulator, past sm_90a's 227 KB), T.gemm
sees constant tile sizes and T.tma_copy a constant box."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

SM80 = "cuda -arch=sm_80 -emulate"
SM90A = "cuda -arch=sm_90a -emulate"


def let_sliced_copy(rows=64, cols=64):
    @T.prim_func
    def main(
        A: T.Tensor((4, 4 * rows, cols), "float32"), B: T.Tensor((4, 4 * rows, cols), "float32")
    ):
        with T.Kernel(4, 4, threads=128) as (bx, by):
            F = T.alloc_fragment((rows, cols), "float32")
            H0 = by * rows + 0
            H1 = H0 + rows
            T.copy(A[bx, H0:H1, :], F)
            for i, j in T.Parallel(rows, cols):
                F[i, j] = F[i, j] * 2 + 1
            T.copy(F, B[bx, H0:H1, :])

    return main


@pytest.mark.parametrize("target", ["cpu", SM80, SM90A])
def test_let_bound_slice_of_a_fragment_copy(target):
    kernel = tilelang.compile(let_sliced_copy(), target=target)
    a = np.random.default_rng(0).standard_normal((4, 256, 64)).astype(np.float32)
    b = np.zeros_like(a)
    kernel(a, b)
    np.testing.assert_array_equal(b, a * 2 + 1)
    if target != "cpu":
        src = kernel.get_kernel_source()
        assert "float F[32];" in src  # the thread's registers, not a shared tile
        assert "F = reinterpret_cast" not in src


def test_the_script_shows_the_folded_extent():
    script = let_sliced_copy().script()
    assert "H0:(H0 + 64)" in script and "H1 - H0" not in script


def let_sliced_gemm(K=64, kt=16):
    @T.prim_func
    def main(
        A: T.Tensor((64, K), "float16"),
        B: T.Tensor((64, K), "float16"),
        C: T.Tensor((64, 64), "float32"),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((64, K), "float16")
            B_s = T.alloc_shared((64, K), "float16")
            C_l = T.alloc_fragment((64, 64), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(C_l)
            for j in T.serial(K // kt):
                k0 = j * kt
                k1 = k0 + kt
                T.gemm(A_s[:, k0:k1], B_s[:, k0:k1], C_l, transpose_B=True)
            T.copy(C_l, C)

    return main


@pytest.mark.parametrize("target,call", [(SM80, "tl::gemm_ss<"), (SM90A, "tl::wgmma_gemm_ss<")])
def test_let_bound_k_slices_of_a_gemm(target, call):
    kernel = tilelang.compile(let_sliced_gemm(), target=target)
    assert call in kernel.get_kernel_source()
    rng = np.random.default_rng(1)
    a = rng.integers(-3, 4, (64, 64)).astype(np.float16)
    b = rng.integers(-3, 4, (64, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    kernel(a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32).T)


def test_an_extent_that_the_lets_do_not_fix_stays_symbolic():
    """A let read from memory is not substituted: its value may change before the op."""

    @T.prim_func
    def main(
        A: T.Tensor((256,), "float32"), N: T.Tensor((1,), "int32"), B: T.Tensor((256,), "float32")
    ):
        with T.Kernel(1, threads=128):
            n = N[0]
            S = T.alloc_shared((256,), "float32")
            T.clear(S)
            T.copy(A[0:n], S[0:n])
            T.copy(S, B)

    assert "A[0:(0 + n)]" in main.script()
