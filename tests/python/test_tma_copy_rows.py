"""T.tma_copy of one contiguous run that TMA's tensor maps cannot describe (a row of
1024 float32, past the 256-element box): one bulk copy (`tl::bulk_load`,
cp.async.bulk without a tensor map) completing on the barrier; and
`leader_scope_threads`, one copy per group of threads (per warp) with that group's own
row, destination and barrier. TileLang's kernels from language/tma_copy, in the sm_90a
emulator; nvcc accepts the source. tests/gpu/test_tma_gpu.py runs them on a GPU."""

import os
import sys

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang import TileLangError

sys.path.insert(0, os.path.dirname(__file__))
from test_examples_cuda_source import nvcc, nvcc_compile  # noqa: F401  (the fixture)

SM90A = "cuda -arch=sm_90a -emulate"


def per_warp_rows(M=32, K=1024, threads=256, dtype="float32"):
    """Each warp loads its own row of A (TileLang's per_warp_tma_copy_kernel)."""
    warps = threads // 32

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((M, K), dtype)):
        with T.Kernel(T.ceildiv(M, warps), threads=threads) as pid:
            tid = T.get_thread_binding()
            warp = tid // 32
            row = pid * warps + warp
            a_shared = T.alloc_shared((warps, K), dtype)
            bars = T.alloc_barrier([32] * warps)
            T.tma_copy(
                A[row, 0:K], a_shared[warp, 0:K], barrier=bars[warp], leader_scope_threads=32
            )
            T.mbarrier_arrive(mbarrier=bars[warp])
            T.mbarrier_wait_parity(mbarrier=bars[warp], parity=0)
            for j in T.serial(K // 32):
                B[row, j * 32 + tid % 32] = a_shared[warp, j * 32 + tid % 32]

    return main


def block_rows(M=4, K=1024, rows=2, dtype="float32"):
    """`rows` whole rows of A, one contiguous run, into a plain shared tile."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((M, K), dtype)):
        with T.Kernel(M // rows, threads=128) as pid:
            a_shared = T.alloc_shared((rows, K), dtype)
            bar = T.alloc_barrier(128)
            T.tma_copy(A[pid * rows : pid * rows + rows, :], a_shared, barrier=bar)
            T.barrier_arrive(bar)
            T.barrier_wait(bar, 0)
            T.copy(a_shared, B[pid * rows : pid * rows + rows, :])

    return main


def test_per_warp_copies_of_rows_longer_than_a_tma_box():
    kernel = tilelang.compile(per_warp_rows(), target=SM90A)
    src = kernel.get_kernel_source()
    assert "tl::bulk_load((&a_shared[((warp * 1024) + 0)])" in src, src
    assert "% 32) == 0)" in src  # the first thread of every warp issues its copy
    a = np.random.default_rng(0).standard_normal((32, 1024)).astype(np.float32)
    b = np.zeros_like(a)
    kernel(a, b)
    np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("rows,dtype", [(1, "float32"), (2, "float32"), (4, "float16")])
def test_whole_rows_as_one_bulk_copy(rows, dtype):
    kernel = tilelang.compile(block_rows(rows=rows, dtype=dtype), target=SM90A)
    src = kernel.get_kernel_source()
    nbytes = rows * 1024 * np.dtype(dtype).itemsize
    assert f"tl::mbarrier_expect_tx((&bar[0]), {nbytes});" in src, src
    assert "tl::bulk_load(" in src and "CUtensorMap" not in src
    a = np.random.default_rng(rows).standard_normal((4, 1024)).astype(dtype)
    b = np.zeros_like(a)
    kernel(a, b)
    np.testing.assert_array_equal(b, a)


def test_a_run_of_an_odd_byte_size():
    """1001 float32 = 4004 bytes: no cp.async.bulk size; tl::bulk_load copies it with the
    issuing thread (on the GPU) and completes the bytes on the barrier."""
    kernel = tilelang.compile(block_rows(K=1001, rows=1), target=SM90A)
    assert "tl::bulk_load(" in kernel.get_kernel_source()
    a = np.random.default_rng(9).standard_normal((4, 1001)).astype(np.float32)
    b = np.zeros_like(a)
    kernel(a, b)
    np.testing.assert_array_equal(b, a)


def test_a_region_that_is_not_one_run_is_still_refused():
    @T.prim_func
    def main(A: T.Tensor((4, 1024), "float32"), B: T.Tensor((4, 512), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((2, 512), "float32")
            bar = T.alloc_barrier(128)
            T.tma_copy(A[0:2, 0:512], s, barrier=bar)
            T.barrier_arrive(bar)
            T.barrier_wait(bar, 0)
            T.copy(s, B[0:2, :])

    with pytest.raises(TileLangError, match="TMA cannot copy into 's' here"):
        tilelang.compile(main, target=SM90A)


def test_leader_scope_threads_must_be_whole_warps_dividing_the_block():
    with pytest.raises(
        TileLangError, match="leader_scope_threads must be a multiple of 32 that divides"
    ):
        _bad_scope(48)


def _bad_scope(n):
    @T.prim_func
    def main(A: T.Tensor((8, 1024), "float32")):
        with T.Kernel(1, threads=256):
            s = T.alloc_shared((1024,), "float32")
            bar = T.alloc_barrier(32)
            T.tma_copy(A[0, 0:1024], s, barrier=bar, leader_scope_threads=n)

    return main


def test_nvcc_accepts_the_bulk_copies(nvcc, tmp_path):  # noqa: F811
    source = tilelang.compile(per_warp_rows(), target="cuda -arch=sm_90a").get_kernel_source()
    cubin, log = nvcc_compile(nvcc, source, "sm_90a", tmp_path)
    assert cubin is not None, log
