"""T.copy_cluster (TileLang's SM-to-SM copy, distributed shared memory on sm_90): a
block's shared tile or region into another block of its cluster (`dst_block`),
completing on that block's T.alloc_cluster_barrier (`remote_barrier`) or ordered by
T.cluster_sync; and its `cluster_mask` form, T.tma_copy's multicast. The kernels are
TileLang's own regression kernels (testing/python/cuda/test_tma_dsmem.py), run in the
emulator, whose blocks of a cluster share one scheduler; nvcc accepts the sm_90a source
(mapa, mbarrier.arrive.release.cluster); tests/gpu/test_clusters_gpu.py runs them on a
GPU."""

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


def store_with_barrier(N, dtype="float32"):
    @T.prim_func
    def kernel(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        with T.ClusterKernel(2, threads=128, cluster_dims=(2, 1, 1)) as pid:
            s_src = T.alloc_shared((N,), dtype)
            s_dst = T.alloc_shared((N,), dtype)
            s_barrier = T.alloc_cluster_barrier([1])
            T.fill(s_src, 0)
            T.fill(s_dst, 0)
            T.cluster_sync()
            if pid == 0:
                for i in T.Parallel(N):
                    s_src[i] = A[i]
                T.copy_cluster(s_src, s_dst, dst_block=1, remote_barrier=s_barrier[0])
            if pid == 1:
                T.mbarrier_wait_parity(s_barrier[0], 0)
                for i in T.Parallel(N):
                    B[i] = s_dst[i]

    return kernel


def store_then_cluster_sync(N):
    @T.prim_func
    def kernel(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.ClusterKernel(2, threads=128, cluster_dims=(2, 1, 1)) as pid:
            s_src = T.alloc_shared((N,), "float32")
            s_dst = T.alloc_shared((N,), "float32")
            T.fill(s_src, 0.0)
            T.fill(s_dst, 0.0)
            T.cluster_sync()
            if pid == 0:
                for i in T.Parallel(N):
                    s_src[i] = A[i]
                T.copy_cluster(s_src, s_dst, dst_block=1)
            T.cluster_sync()
            if pid == 1:
                for i in T.Parallel(N):
                    B[i] = s_dst[i]

    return kernel


def slice_with_barrier(M, N_full, N_tile):
    """The first N_tile columns of an M x N_full tile, into the other block's tile."""

    @T.prim_func
    def kernel(A: T.Tensor((M, N_full), "float32"), B: T.Tensor((M, N_full), "float32")):
        with T.ClusterKernel(2, threads=128, cluster_dims=(2, 1, 1)) as pid:
            s_src = T.alloc_shared((M, N_full), "float32")
            s_dst = T.alloc_shared((M, N_full), "float32")
            s_barrier = T.alloc_cluster_barrier([1])
            T.fill(s_src, 0.0)
            T.fill(s_dst, 0.0)
            T.cluster_sync()
            if pid == 0:
                for i, j in T.Parallel(M, N_full):
                    s_src[i, j] = A[i, j]
                T.copy_cluster(
                    s_src[0:M, 0:N_tile],
                    s_dst[0:M, 0:N_tile],
                    dst_block=1,
                    remote_barrier=s_barrier[0],
                )
            if pid == 1:
                T.mbarrier_wait_parity(s_barrier[0], 0)
                for i, j in T.Parallel(M, N_full):
                    B[i, j] = s_dst[i, j]

    return kernel


def test_copy_into_the_other_block_completes_on_its_barrier():
    N = 128
    kernel = tilelang.compile(store_with_barrier(N), target=SM90A)
    src = kernel.get_kernel_source()
    assert "tl::store_cluster(" in src and "tl::mbarrier_arrive_cluster_release(" in src
    a = np.arange(N, dtype=np.float32) + 1
    b = np.zeros_like(a)
    kernel(a, b)
    np.testing.assert_array_equal(b, a)


def test_copy_ordered_by_the_cluster_barrier():
    N = 256
    a = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    b = np.zeros_like(a)
    tilelang.compile(store_then_cluster_sync(N), target=SM90A)(a, b)
    np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("M,N_full,N_tile", [(8, 64, 32), (4, 32, 8)])
def test_copy_of_a_region(M, N_full, N_tile):
    a = np.random.default_rng(1).standard_normal((M, N_full)).astype(np.float32)
    b = np.full_like(a, 7.0)
    tilelang.compile(slice_with_barrier(M, N_full, N_tile), target=SM90A)(a, b)
    expect = np.zeros_like(a)
    expect[:, :N_tile] = a[:, :N_tile]
    np.testing.assert_array_equal(b, expect)


def test_float16_tile():
    N = 64
    a = (np.arange(N) - 20).astype(np.float16)
    b = np.zeros_like(a)
    tilelang.compile(store_with_barrier(N, "float16"), target=SM90A)(a, b)
    np.testing.assert_array_equal(b, a)


def test_nvcc_accepts_the_sm90a_source(nvcc, tmp_path):  # noqa: F811
    source = tilelang.compile(
        store_with_barrier(128), target="cuda -arch=sm_90a"
    ).get_kernel_source()
    cubin, log = nvcc_compile(nvcc, source, "sm_90a", tmp_path)
    assert cubin is not None, log


def test_errors():
    def bad(body, cluster=(2, 1, 1)):
        @T.prim_func
        def kernel(A: T.Tensor((64,), "float32")):
            with T.Kernel(2, threads=64, cluster_dims=cluster):
                s = T.alloc_shared((64,), "float32")
                d = T.alloc_shared((64,), "float32")
                body(A, s, d)

        return kernel

    with pytest.raises(TileLangError, match="this kernel has no clusters"):
        bad(lambda A, s, d: T.copy_cluster(s, d, dst_block=1), cluster=None)
    with pytest.raises(
        TileLangError, match="dst_block 2 is outside the kernel's clusters of 2 blocks"
    ):
        bad(lambda A, s, d: T.copy_cluster(s, d, dst_block=2))
    with pytest.raises(TileLangError, match="the source 'A' is in global memory"):
        bad(lambda A, s, d: T.copy_cluster(A, d, dst_block=1))
    with pytest.raises(TileLangError, match="needs dst_block="):
        bad(lambda A, s, d: T.copy_cluster(s, d))
    with pytest.raises(TileLangError, match="not both"):
        bad(lambda A, s, d: T.copy_cluster(A, d, dst_block=1, cluster_mask=3))
    with pytest.raises(TileLangError, match="needs thread block clusters"):
        tilelang.compile(store_with_barrier(64), target="cpu")


@pytest.mark.parametrize("count", [512, 256])
def test_arrive_on_another_blocks_barrier(count):
    """TileLang's `T.mbarrier_arrive(mbar, cta_id)` (language/cluster's barrier kernel):
    all 4 x 128 threads of the cluster arrive on block 0's barrier, which block 0 waits
    for. With a count of 256 the 512 arrivals complete two phases, and block 0's wait for
    the first must end although the other blocks' arrivals complete the second before
    its threads run again (the emulator releases a wait when its phase completes)."""

    @T.prim_func
    def main(A: T.Tensor((4,), "int32")):
        with T.ClusterKernel(4, threads=128, cluster_dims=(4, 1, 1)) as bx:
            mbar = T.alloc_cluster_barrier([count])
            T.cluster_sync()
            T.mbarrier_arrive(mbar, 0)
            if T.block_rank_in_cluster() == 0:
                T.mbarrier_wait_parity(mbar, 0)
            T.cluster_sync()
            if T.get_thread_binding() == 0:
                A[bx] = bx + 1

    kernel = tilelang.compile(main, target=SM90A)
    assert "tl::mbarrier_arrive_cluster_release((&mbar[0]), 0);" in kernel.get_kernel_source()
    a = np.zeros(4, np.int32)
    kernel(a)
    np.testing.assert_array_equal(a, [1, 2, 3, 4])
    with pytest.raises(TileLangError, match="cta_id 4 is outside the kernel's clusters of 4 block"):

        @T.prim_func
        def bad(A: T.Tensor((4,), "int32")):
            with T.ClusterKernel(4, threads=128, cluster_dims=(4, 1, 1)):
                mbar = T.alloc_cluster_barrier([128])
                T.mbarrier_arrive(mbar, 4)


def test_synchronous_multicast_of_a_global_tile():
    """TileLang's cuda/tma_multicast_demo: mask 0b0011 in clusters of 4, so rank 1
    receives rank 0's tile and ranks 2 and 3 load their own."""
    M, N, bM, bN = 256, 256, 128, 64

    @T.prim_func
    def kernel(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16")):
        with T.ClusterKernel(
            T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128, cluster_dims=(4, 1, 1)
        ) as (
            bx,
            by,
        ):
            A_shared = T.alloc_shared((bM, bN), "float16")
            T.copy_cluster(A[by * bM, bx * bN], A_shared, cluster_mask=0b0011)
            T.copy(A_shared, B[by * bM, bx * bN])

    a = (np.random.default_rng(3).standard_normal((M, N)) * 8).astype(np.float16)
    b = np.zeros_like(a)
    tilelang.compile(kernel, target=SM90A)(a, b)
    expect = a.copy()
    for by in range(M // bM):
        rows = slice(by * bM, by * bM + bM)
        expect[rows, bN : 2 * bN] = a[rows, 0:bN]  # rank 1 of the one cluster per row of blocks
    np.testing.assert_array_equal(b, expect)


def ring_exchange(N=64):
    """Every block of a cluster of 4 sends its row to rank + 1 (dst_block computed in the
    kernel) and waits on its own barrier for its neighbour's."""

    @T.prim_func
    def kernel(A: T.Tensor((4, N), "float32"), B: T.Tensor((4, N), "float32")):
        with T.ClusterKernel(4, threads=64, cluster_dims=(4, 1, 1)) as bx:
            s_src = T.alloc_shared((N,), "float32")
            s_dst = T.alloc_shared((N,), "float32")
            bar = T.alloc_cluster_barrier([1])
            T.cluster_sync()
            rank = T.block_rank_in_cluster()
            for i in T.Parallel(N):
                s_src[i] = A[bx, i]
            T.copy_cluster(s_src, s_dst, dst_block=(rank + 1) % 4, remote_barrier=bar[0])
            T.mbarrier_wait_parity(bar[0], 0)
            for i in T.Parallel(N):
                B[bx, i] = s_dst[i]
            T.cluster_sync()

    return kernel


def test_ring_exchange_with_a_run_time_destination():
    a = np.random.default_rng(8).standard_normal((4, 64)).astype(np.float32)
    b = np.zeros_like(a)
    tilelang.compile(ring_exchange(), target=SM90A)(a, b)
    np.testing.assert_array_equal(b, np.roll(a, 1, axis=0))
