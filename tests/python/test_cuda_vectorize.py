"""T.Parallel loops over memory on the cuda target: runs of consecutive elements
move as 16-byte vectors where the addresses allow, element by element elsewhere.
Run through the CUDA emulator and checked against numpy."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.utils.target import available_targets

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
    assert f"tl::AtomicAddx{width}(" in kernel.get_kernel_source()
    rng = np.random.default_rng(3)
    a = rng.integers(-8, 9, (M, N)).astype(dtype)  # whole numbers: exact in any order
    c = np.zeros((M, N), dtype)
    kernel(a, c)
    np.testing.assert_array_equal(c, 6 * a)


def p_times_v(dtype, arch):
    """O = cast(S * 0.5) @ V with S float32 in a fragment, cast to `dtype` by T.copy into a
    register fragment that the gemm reads as A (FlashAttention's P V); the row sums of
    the cast (a per-row fragment, one value per row: cast one at a time) go out too."""

    @T.prim_func
    def pv(
        S: T.Tensor((64, 32), "float32"),
        V: T.Tensor((32, 32), dtype),
        O: T.Tensor((64, 32), "float32"),
        R: T.Tensor((64,), dtype),
    ):
        with T.Kernel(1, threads=128):
            s = T.alloc_fragment((64, 32), "float32")
            p = T.alloc_fragment((64, 32), dtype)
            row = T.alloc_fragment((64,), "float32")
            row_cast = T.alloc_fragment((64,), dtype)
            v = T.alloc_shared((32, 32), dtype)
            o = T.alloc_fragment((64, 32), "float32")
            T.copy(S, s)
            T.copy(V, v)
            for i, j in T.Parallel(64, 32):
                s[i, j] = s[i, j] * 0.5
            T.reduce_sum(s, row, dim=1)
            T.copy(s, p)
            T.copy(row, row_cast)
            T.clear(o)
            T.gemm(p, v, o, policy=T.GemmWarpPolicy.FullRow)
            T.copy(o, O)
            T.copy(row_cast, R)

    return pv


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_float32_fragments_cast_to_16_bits_in_pairs(dtype, arch):
    """Two values per cvt into one 32-bit register (tl::cast_pair), so that P holds two
    values per register while it waits for its gemm (as 16-bit scalars ptxas gives each
    its own register: FlashAttention's P spilled); the gemm reads A two at a time
    (tl::load_pair), so the fragments are declared 4-byte aligned."""
    import ml_dtypes

    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
    kernel = tilelang.compile(p_times_v(dtype, arch), target=f"cuda -arch={arch} -emulate")
    source = kernel.get_kernel_source()
    assert "tl::cast_pair<tl::__float22" in source and "((&p[" in source, source
    assert "alignas(4) tl::" in source and "gemm_rs<" in source
    if "cuda" in available_targets():  # the device path (cvt.rn.*x2.f32) through NVRTC
        tilelang.compile(p_times_v(dtype, arch), target=f"cuda -arch={arch}")
    rng = np.random.default_rng(3)
    s = rng.standard_normal((64, 32)).astype(np.float32)
    v = rng.standard_normal((32, 32)).astype(np_dtype)
    o = np.zeros((64, 32), np.float32)
    r = np.zeros(64, np_dtype)
    kernel(s, v, o, r)
    p = (s * 0.5).astype(np_dtype)
    want = p.astype(np.float64) @ v.astype(np.float64)
    np.testing.assert_allclose(o, want, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(r.astype(np.float32), (s * 0.5).sum(axis=1), rtol=1e-2, atol=1e-2)
