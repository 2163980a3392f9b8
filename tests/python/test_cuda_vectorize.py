"""T.Parallel loops over memory on the cuda target: runs of consecutive elements
move as 16-byte vectors where the addresses allow, element by element elsewhere.
Run through the CUDA emulator and checked against numpy."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

EMU = "cuda -arch=sm_90 -emulate"


def direct_add(n, block, dtype):
    @T.prim_func
    def add(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                idx = bx * block + i
                if idx < n:
                    C[idx] = A[idx] + B[idx]

    return add


@pytest.mark.parametrize("dtype, width", [("float16", 8), ("float32", 4)])
def test_guarded_elementwise_loop_uses_vectors_and_handles_the_tail(dtype, width):
    n = 1003  # the last run of the last block straddles the end
    kernel = tilelang.compile(direct_add(n, 256, dtype), out_idx=[-1], target=EMU)
    source = kernel.get_kernel_source()
    assert f"tl::load_vec<{width}>" in source and f"tl::store_vec<{width}>" in source
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    np.testing.assert_array_equal(kernel(a, b), a + b)


def test_transposed_access_stays_element_by_element():
    @T.prim_func
    def transpose(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            for i, j in T.Parallel(64, 64):
                B[j, i] = A[i, j] * 2.0

    kernel = tilelang.compile(transpose, out_idx=[-1], target=EMU)
    assert "tl::load_vec" not in kernel.get_kernel_source()
    a = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    np.testing.assert_array_equal(kernel(a), (a * 2.0).T)


def test_two_dim_loop_with_broadcast_row_vector():
    @T.prim_func
    def scale(
        X: T.Tensor((96, 40), "float16"),
        W: T.Tensor((40,), "float16"),
        s: T.float32,
        Y: T.Tensor((96, 40), "float16"),
    ):
        with T.Kernel(T.ceildiv(96, 16), threads=64) as bx:
            for i, j in T.Parallel(16, 40):
                Y[bx * 16 + i, j] = X[bx * 16 + i, j] * W[j] * s

    kernel = tilelang.compile(scale, out_idx=[-1], target=EMU)
    assert "tl::load_vec<8>" in kernel.get_kernel_source()
    rng = np.random.default_rng(2)
    x = rng.standard_normal((96, 40)).astype(np.float16)
    w = rng.standard_normal(40).astype(np.float16)
    ref = (x.astype(np.float32) * w.astype(np.float32) * np.float32(0.5)).astype(np.float16)
    np.testing.assert_allclose(
        kernel(x, w, 0.5).astype(np.float32), ref.astype(np.float32), rtol=1e-3, atol=1e-3
    )


def fragment_atomic_add(M, N, dtype):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 32), 3, threads=128) as (bx, by, bz):
            F = T.alloc_fragment((32, 64), dtype)
            T.copy(A[by * 32, bx * 64], F)
            for i, j in T.Parallel(32, 64):
                F[i, j] = F[i, j] * (bz + 1)
            T.atomic_add(C[by * 32, bx * 64], F)

    return main


@pytest.mark.parametrize("dtype, width", [("float32", 4), ("float16", 2)])
def test_region_atomic_adds_of_a_fragment_go_in_vectors(dtype, width):
    # Three blocks add A, 2A and 3A into every element: C = 6A. The last tile hangs
    # over the end of C (100 rows), so its vectors are guarded like a copy's.
    M, N = 100, 128
    kernel = tilelang.compile(fragment_atomic_add(M, N, dtype), target=EMU)
    assert f"tl::atomic_add_vec<{width}, 0>" in kernel.get_kernel_source()
    rng = np.random.default_rng(3)
    a = rng.integers(-8, 9, (M, N)).astype(dtype)  # whole numbers: exact in any order
    c = np.zeros((M, N), dtype)
    kernel(a, c)
    np.testing.assert_array_equal(c, 6 * a)
