"""T.vectorized copies between shared memory and registers on the cuda target
(src/transform/vectorize_loops.cpp): where the shared offsets, swizzle included, are
proven contiguous and aligned, each run of up to 16 bytes is one vector access
(tl::load_vec / tl::store_vec / tl::copy_vec; LDS.128 / STS.128 in the SASS), as in
the dequantizing loop of TileLang's fp4 GEMM example; elsewhere the loop stays element
by element. Run through the CUDA emulator and checked against numpy."""

import re
import subprocess

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_examples_cuda_source import nvcc, nvcc_compile  # noqa: F401  (the fixture)
from test_gemm_sp_mma import require_cuobjdump
from tilelang.layout import make_swizzled_layout

EMU = "cuda -arch=sm_90a -emulate"


def round_trip(M, N, dtype, local, threads=128, shift=0, swizzle=True, hoist=False):
    """B = A * 2 + 1 through two (swizzled) shared tiles: each thread reads `local`
    consecutive elements of the first into registers (T.vectorized), updates them and
    writes them to the second (T.vectorized), as the fp4 example's dequantizing loop
    does. `shift` moves each thread's run off its alignment; `hoist` computes the run's
    start in a let before the loops, as the mxfp4 example does."""
    steps = M * N // threads // local

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(1, threads=threads):
            S = T.alloc_shared((M, N), dtype)
            D = T.alloc_shared((M, N), dtype)
            if swizzle:
                T.annotate_layout({S: make_swizzled_layout(S), D: make_swizzled_layout(D)})
            T.copy(A, S)
            tx = T.get_thread_binding()
            r = T.alloc_local((local,), dtype)
            for i in T.serial(steps):
                if hoist:
                    base = i * threads * local + tx * local
                for v in T.vectorized(local):
                    if hoist:
                        index = (base + v + shift) % (M * N)
                    else:
                        index = (i * threads * local + tx * local + v + shift) % (M * N)
                    r[v] = S[index // N, index % N]
                for v in T.serial(local):
                    r[v] = r[v] * T.cast(2, dtype) + T.cast(1, dtype)
                for v in T.vectorized(local):
                    index = (i * threads * local + tx * local + v + shift) % (M * N)
                    D[index // N, index % N] = r[v]
            T.copy(D, B)

    return main


def check(kernel, M, N, dtype):
    rng = np.random.default_rng(41)
    if dtype == "uint8":
        a = rng.integers(0, 100, (M, N)).astype(np.uint8)
        ref = (a.astype(np.int64) * 2 + 1).astype(np.uint8)
        np.testing.assert_array_equal(kernel(a), ref)
        return
    a = rng.standard_normal((M, N)).astype(dtype)
    ref = a.astype(np.float64) * 2 + 1
    np.testing.assert_allclose(kernel(a).astype(np.float64), ref, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize(
    "dtype, local, vector",
    [
        ("float16", 8, "<8>"),  # one 16-byte run per thread and step
        ("float16", 16, "<8>"),  # two runs
        ("float32", 4, "<4>"),
        ("uint8", 4, "<4>"),  # the fp4 example's packed bytes: one 4-byte access
    ],
)
def test_swizzled_runs_move_as_vectors(dtype, local, vector):
    M, N = 32, 64
    kernel = tilelang.compile(round_trip(M, N, dtype, local), out_idx=[-1], target=EMU)
    src = kernel.get_kernel_source()
    assert f"tl::load_vec{vector}((&r[" in src, src
    assert f"tl::store_vec{vector}((&D[" in src, src
    assert "r[v] = TL_SMEM" not in src, src
    check(kernel, M, N, dtype)


@pytest.mark.parametrize("dtype, local", [("uint8", 4), ("float16", 8)])
def test_alignment_from_a_let_before_the_loop(dtype, local):
    # The run's start is a let outside the loop: its alignment (a multiple of `local`)
    # still carries the proof, through the uint8 tile's swizzle of 16-byte chunks too.
    M, N = 32, 64
    kernel = tilelang.compile(round_trip(M, N, dtype, local, hoist=True), out_idx=[-1], target=EMU)
    src = kernel.get_kernel_source()
    assert "const int32_t base = " in src, src
    assert f"tl::load_vec<{local}>((&r[" in src, src
    check(kernel, M, N, dtype)


def test_unaligned_runs_stay_element_by_element():
    M, N = 32, 64
    kernel = tilelang.compile(round_trip(M, N, "float16", 8, shift=1), out_idx=[-1], target=EMU)
    src = kernel.get_kernel_source()
    assert "tl::load_vec" not in src and "tl::store_vec" not in src, src
    check(kernel, M, N, "float16")


def test_runs_that_wrap_around_the_tile_move_as_vectors():
    # index = (... - 8) % (M * N): thread 0's first run wraps to the tile's end, whole.
    M, N = 32, 64
    kernel = tilelang.compile(round_trip(M, N, "float16", 8, shift=-8), out_idx=[-1], target=EMU)
    src = kernel.get_kernel_source()
    assert "tl::load_vec<8>((&r[" in src and "tl::store_vec<8>((&D[" in src, src
    check(kernel, M, N, "float16")


def test_half_aligned_runs_use_the_widest_proven_width():
    # A run of 8 halves starting 4 elements into its chunk: two 8-byte accesses.
    M, N = 32, 64
    kernel = tilelang.compile(round_trip(M, N, "float16", 8, shift=4), out_idx=[-1], target=EMU)
    src = kernel.get_kernel_source()
    assert "tl::load_vec<4>((&r[" in src and "tl::store_vec<4>((&D[" in src, src
    check(kernel, M, N, "float16")


def test_plain_shared_tiles_vectorize_too():
    M, N = 32, 64
    kernel = tilelang.compile(
        round_trip(M, N, "float16", 8, swizzle=False), out_idx=[-1], target=EMU
    )
    assert "tl::store_vec<8>((&D[" in kernel.get_kernel_source()
    check(kernel, M, N, "float16")


def test_sass_has_16_byte_shared_accesses(nvcc, tmp_path):  # noqa: F811
    tool = require_cuobjdump()
    kernel = tilelang.compile(
        round_trip(64, 64, "float16", 8), out_idx=[-1], target="cuda -arch=sm_90a"
    )
    cubin, log = nvcc_compile(nvcc, kernel.get_kernel_source(), "sm_90a", tmp_path)
    assert cubin is not None, log
    sass = subprocess.run(
        [tool, "-sass", str(tmp_path / "kernel.cubin")], capture_output=True, text=True, check=True
    ).stdout
    assert re.search(r"\bLDS\.128\b", sass) and re.search(r"\bSTS\.128\b", sass), sass[:4000]
    # The element-wise loop read and wrote 2-byte halves.
    assert not re.search(r"\b(LDS|STS)\.U16\b", sass), sass[:4000]


def gemv(N, K, tile_k, threads_k, dtype="float16"):
    """C = B @ A one row per thread group, as TileLang's gemv example: each thread loads
    `tile_k` consecutive elements of A and of its row of B from global memory with one
    T.vectorized loop of two copies."""
    block_k = tile_k * threads_k

    @T.prim_func
    def main(A: T.Tensor((K,), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((N,), "float32")):
        with T.Kernel(N, threads=threads_k) as bn:
            tk = T.get_thread_binding()
            a = T.alloc_local((tile_k,), dtype)
            b = T.alloc_local((tile_k,), dtype)
            acc = T.alloc_local((1,), "float32")
            part = T.alloc_shared((threads_k,), "float32")
            acc[0] = 0
            for bk in T.serial(K // block_k):
                for k in T.vectorized(tile_k):
                    a[k] = A[bk * block_k + tk * tile_k + k]
                    b[k] = B[bn, bk * block_k + tk * tile_k + k]
                for k in T.serial(tile_k):
                    acc[0] += T.cast(a[k], "float32") * T.cast(b[k], "float32")
            part[tk] = acc[0]
            T.sync_threads()
            if tk == 0:
                total = T.alloc_local((1,), "float32")
                total[0] = 0
                for t in T.serial(threads_k):
                    total[0] += part[t]
                C[bn] = total[0]

    return main


def test_global_runs_of_tensor_parameters_move_as_vectors():
    N, K = 16, 256
    kernel = tilelang.compile(gemv(N, K, 8, 16), out_idx=[-1], target=EMU)
    src = kernel.get_kernel_source()
    assert "tl::load_vec<8>((&a[0]), (&A[" in src and "tl::load_vec<8>((&b[0]), (&B[" in src, src
    rng = np.random.default_rng(7)
    a = rng.standard_normal(K).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    ref = b.astype(np.float64) @ a.astype(np.float64)
    np.testing.assert_allclose(kernel(a, b), ref, rtol=1e-4, atol=1e-4)


def test_copies_that_feed_each_other_stay_element_by_element():
    # The second copy reads what the first writes: the loop is left whole.
    @T.prim_func
    def main(A: T.Tensor((128, 8), "float16"), B: T.Tensor((128, 8), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((128, 8), "float16")
            D = T.alloc_shared((128, 8), "float16")
            T.copy(A, S)
            tx = T.get_thread_binding()
            r = T.alloc_local((8,), "float16")
            for v in T.vectorized(8):
                r[v] = S[tx, v]
                D[tx, v] = r[v]
            T.copy(D, B)

    kernel = tilelang.compile(main, out_idx=[-1], target=EMU)
    src = kernel.get_kernel_source()
    assert "r[v] = TL_SMEM(S" in src, src
    a = np.random.default_rng(8).standard_normal((128, 8)).astype(np.float16)
    np.testing.assert_array_equal(kernel(a), a)


def test_unaligned_global_runs_stay_element_by_element():
    # Each thread's run of B starts one element past a multiple of 8: not provably
    # aligned, so B is read element by element while the aligned store to S is widened.
    @T.prim_func
    def main(B: T.Tensor((1032,), "float16"), C: T.Tensor((128, 8), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((128, 8), "float16")
            tx = T.get_thread_binding()
            r = T.alloc_local((8,), "float16")
            for v in T.vectorized(8):
                r[v] = B[tx * 8 + v + 1]
            for v in T.vectorized(8):
                S[tx, v] = r[v]
            T.copy(S, C)

    kernel = tilelang.compile(main, out_idx=[-1], target=EMU)
    src = kernel.get_kernel_source()
    assert "(&B[" not in src and "tl::store_vec<8>((&S[" in src, src
    b = np.random.default_rng(9).standard_normal(1032).astype(np.float16)
    np.testing.assert_array_equal(kernel(b), b[1:1025].reshape(128, 8))


def fill_rows(dtype, from_buffer):
    """Each of 128 threads fills its row of 8 elements of B (a tensor parameter) and of a
    shared tile with one value the same in every iteration of a T.vectorized loop: a
    scalar parameter, or an element of V read in the loop (`from_buffer`)."""

    @T.prim_func
    def main(
        V: T.Tensor((128,), dtype),
        x: getattr(T, dtype),
        B: T.Tensor((128, 8), dtype),
        C: T.Tensor((128, 8), dtype),
    ):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((128, 8), dtype)
            tx = T.get_thread_binding()
            for v in T.vectorized(8):
                if from_buffer:
                    B[tx, v] = V[tx]
                    S[tx, v] = V[127 - tx]
                else:
                    B[tx, v] = x
                    S[tx, v] = x + x
            T.copy(S, C)

    return main


@pytest.mark.parametrize("dtype, width", [("float16", 8), ("float32", 4), ("int8", 8)])
@pytest.mark.parametrize("from_buffer", [False, True])
def test_fills_move_as_vectors(dtype, width, from_buffer):
    # `A[i] = value` in a T.vectorized loop (TileLang's fill of a broadcast value): one
    # vector store per run of up to 16 bytes, the value written `width` times.
    kernel = tilelang.compile(fill_rows(dtype, from_buffer), target=EMU)
    src = kernel.get_kernel_source()
    assert f"tl::fill_vec<{width}>((&B[" in src and f"tl::fill_vec<{width}>((&S[" in src, src
    rng = np.random.default_rng(12)
    if dtype == "int8":
        v = rng.integers(-60, 60, 128).astype(np.int8)
        x = int(rng.integers(-60, 60))
    else:
        v = rng.standard_normal(128).astype(dtype)
        x = float(np.asarray(rng.standard_normal(), dtype=dtype))
    b = np.zeros((128, 8), dtype)
    c = np.zeros((128, 8), dtype)
    kernel(v, x, b, c)
    if from_buffer:
        ref_b = np.repeat(v[:, None], 8, axis=1)
        ref_c = np.repeat(v[::-1, None], 8, axis=1)
    else:
        ref_b = np.full((128, 8), x, np.float64)
        ref_c = np.full((128, 8), np.asarray(x, dtype).astype(np.float64) * 2, np.float64)
    np.testing.assert_array_equal(b.astype(np.float64), np.asarray(ref_b, np.float64).astype(dtype))
    np.testing.assert_array_equal(c.astype(np.float64), np.asarray(ref_c, np.float64).astype(dtype))


def test_fill_of_a_value_the_loop_writes_stays_element_by_element():
    # D's value is S[tx, 0], which the loop's first store writes: iteration 0 stores it
    # before D reads it, so the loop is left whole (element order).
    @T.prim_func
    def main(A: T.Tensor((128, 8), "float16"), B: T.Tensor((128, 8), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((128, 8), "float16")
            D = T.alloc_shared((128, 8), "float16")
            tx = T.get_thread_binding()
            for v in T.vectorized(8):
                S[tx, v] = A[tx, v]
                D[tx, v] = S[tx, 0]
            T.copy(D, B)

    kernel = tilelang.compile(main, out_idx=[-1], target=EMU)
    src = kernel.get_kernel_source()
    assert "tl::fill_vec" not in src and "tl::copy_vec" not in src, src
    a = np.random.default_rng(13).standard_normal((128, 8)).astype(np.float16)
    np.testing.assert_array_equal(kernel(a), np.repeat(a[:, :1], 8, axis=1))


def test_sass_of_an_fp8_fill_is_one_8_byte_store(nvcc, tmp_path):  # noqa: F811
    # TileLang's issue 1601 kernel: `A[i] = 0` over T.vectorized(8) of float8_e4m3fn.
    tool = require_cuobjdump()

    @T.prim_func
    def main(A: T.Tensor((8,), T.float8_e4m3fn)):
        with T.Kernel(1, threads=32):
            for i in T.vectorized(8):
                A[i] = 0

    kernel = tilelang.compile(main, target="cuda -arch=sm_80")
    assert "tl::fill_vec<8>((&A[" in kernel.get_kernel_source()
    cubin, log = nvcc_compile(nvcc, kernel.get_kernel_source(), "sm_80", tmp_path)
    assert cubin is not None, log
    sass = subprocess.run(
        [tool, "-sass", str(tmp_path / "kernel.cubin")], capture_output=True, text=True, check=True
    ).stdout
    assert re.search(r"\bSTG\.E\.64\b", sass), sass[:4000]
    assert not re.search(r"\bSTG\.E\.U8\b", sass), sass[:4000]
