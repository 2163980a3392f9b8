"""Thread block clusters (sm_90): T.Kernel(..., cluster_dims=...), the cluster barrier
and rank (T.cluster_sync / T.cluster_arrive / T.cluster_wait /
T.block_rank_in_cluster), and TMA multicast, which the compiler uses in a
warp-specialized pipeline for a tile every block of a cluster loads alike. The CUDA
source runs in the emulator, which runs the blocks of a cluster together
(run_cluster); tests/gpu/test_clusters_gpu.py runs the same kernels on the H200."""

import os
import sys

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang import TileLangError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from skinny_gemm import skinny_gemm, skinny_matmul

SM90A = "cuda -arch=sm_90a -emulate"


def ranks_kernel(n_x, n_y, cluster, sync="sync"):
    """out[by, bx, t] = 1000 * (rank in the cluster) + the rank read back from the
    other end of the block after the cluster barrier."""

    @T.prim_func
    def ranks(Out: T.Tensor((n_y, n_x, 64), "int32")):
        with T.Kernel(n_x, n_y, threads=64, cluster_dims=cluster) as (bx, by):
            s = T.alloc_shared((64,), "int32")
            tx = T.get_thread_binding()
            s[tx] = T.block_rank_in_cluster()
            if sync == "sync":
                T.cluster_sync()
            else:
                T.cluster_arrive()
                T.cluster_wait()
            Out[by, bx, tx] = s[63 - tx] * 1000 + bx + by * n_x

    return ranks


@pytest.mark.parametrize(
    "n_x, n_y, cluster, sync",
    [
        (6, 1, (2, 1, 1), "sync"),
        (4, 4, (2, 2, 1), "arrive_wait"),
        (2, 6, (1, 3), "sync"),
        (8, 1, 8, "sync"),
    ],
)
def test_block_rank_and_cluster_barrier(n_x, n_y, cluster, sync):
    kernel = tilelang.compile(ranks_kernel(n_x, n_y, cluster, sync), target=SM90A)
    src = kernel.get_kernel_source()
    c = list(cluster) + [1] * (3 - len(cluster)) if isinstance(cluster, tuple) else [cluster, 1, 1]
    assert f"__cluster_dims__({c[0]}, {c[1]}, {c[2]})" in src
    # The host side names the clusters too (TileLang's host code sets clusterDim).
    assert f"cluster = ({c[0]}, {c[1]}, {c[2]})  # clusterDim = {{{c[0]}, {c[1]}, {c[2]}}}" in (
        kernel.get_host_source()
    )
    out = np.zeros((n_y, n_x, 64), np.int32)
    kernel(out)
    bx = np.arange(n_x)[None, :]
    by = np.arange(n_y)[:, None]
    rank = bx % c[0] + (by % c[1]) * c[0]
    np.testing.assert_array_equal(out[:, :, 0], rank * 1000 + bx + by * n_x)
    np.testing.assert_array_equal(out, np.repeat(out[:, :, :1], 64, axis=2))


def skinny(M, N, K, bM, bN, bK, stages, threads, cluster):
    f = skinny_gemm.get_tir(
        M, N, K, bM, bN, bK, stages, threads, 1, False, "nk", "bfloat16", cluster=cluster
    )
    return tilelang.compile(f, out_idx=[-1], target=SM90A)


def bf16(rng, *shape):
    return rng.standard_normal(shape).astype(ml_dtypes.bfloat16)


@pytest.mark.parametrize(
    "M, N, K, bM, bN, bK, stages, cluster",
    [
        (128, 256, 320, 128, 64, 64, 3, 2),  # K tail
        (100, 512, 256, 128, 64, 64, 2, 4),  # M tail: the slices past M read zeros
    ],
)
def test_skinny_gemm_multicasts_a_across_the_cluster(M, N, K, bM, bN, bK, stages, cluster):
    kernel = skinny(M, N, K, bM, bN, bK, stages, 256, cluster)
    src = kernel.get_kernel_source()
    # A (the same for every block along N) is multicast; B (each block's own) is not.
    assert (
        src.count("tl::tma_load_multicast<2>(") == 1
        and "(&A_shared[" in src.split("tma_load_multicast")[1][:40]
    )
    assert src.count("tl::tma_load<2>(") >= 1
    assert f"tl::mbarrier_arrive_warpgroup<{cluster}>" in src  # wgmma-only consumers
    assert (
        src.count("tl::cluster_sync();") == 2
    )  # after the mbarriers' init and at the consumers' end
    rng = np.random.default_rng(M + N + K + cluster)
    a, b = bf16(rng, M, K), bf16(rng, N, K)
    c = kernel(a, b)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2e-2, atol=0.3)


@pytest.mark.parametrize("swap_ab", [False, True], ids=["plain", "swapped"])
@pytest.mark.parametrize("M, N, K", [(128, 256, 320), (100, 200, 136)])
def test_skinny_gemm_clustered_along_m_multicasts_b(M, N, K, swap_ab):
    """Clusters of 2 blocks along M (64 rows each) share the B tile, which is multicast.
    M, N and K do not divide the tiles."""
    f = skinny_gemm.get_tir(
        M, N, K, 64, 128, 64, 3, 128, 1, swap_ab, "nk", "bfloat16", cluster=2, cluster_axis="m"
    )
    kernel = tilelang.compile(f, out_idx=[-1], target=SM90A)
    src = kernel.get_kernel_source()
    assert "__cluster_dims__(1, 2, 1)" in src
    assert "tl::tma_load_multicast<2>((&B_shared[" in src and "tl::tma_load<2>((&A_shared[" in src
    rng = np.random.default_rng(M + K)
    a, b = bf16(rng, M, K), bf16(rng, N, K)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(kernel(a, b).astype(np.float64), ref, rtol=2e-2, atol=0.3)


@pytest.mark.parametrize(
    "M, N, K, cluster, swap_ab",
    [
        (128, 512, 320, (2, 2), False),  # K tail
        (100, 500, 136, (2, 2), True),  # M and N tails, swapped tile
        (128, 1024, 128, (4, 2), False),  # 8 blocks: A shared by 4, B by 2
    ],
)
def test_skinny_gemm_2d_cluster_multicasts_each_tile_to_its_sharers(M, N, K, cluster, swap_ab):
    """2-D clusters (cn along N, cm along M): each row of the cluster shares an A tile,
    each column a B tile. Each is multicast among its sharers only (a mask of that row
    or column), and every block releases its versions to the whole cluster."""
    cn, cm = cluster
    f = skinny_gemm.get_tir(
        M, N, K, 64, 64, 64, 3, 128, 1, swap_ab, "nk", "bfloat16", cluster=cluster
    )
    kernel = tilelang.compile(f, out_idx=[-1], target=SM90A)
    src = kernel.get_kernel_source()
    assert f"__cluster_dims__({cn}, {cm}, 1)" in src
    # A does not depend on bx (bit 0: shared along x), B not on by (bit 1).
    assert f"(tl::cluster_share_rank<{cn}, {cm}, 1, 1>() * {64 // cn})" in src
    assert f"(tl::cluster_share_rank<{cn}, {cm}, 1, 2>() * {64 // cm})" in src
    assert src.count("tl::tma_load_multicast<2>(") == 2 and "tl::tma_load<2>(" not in src
    assert f"tl::mbarrier_arrive_warpgroup<{cn * cm}>" in src
    assert f"tl::release_arrivals<128, {cn * cm}>()" in src
    rng = np.random.default_rng(M + N + K)
    a, b = bf16(rng, M, K), bf16(rng, N, K)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(kernel(a, b).astype(np.float64), ref, rtol=2e-2, atol=0.3)


def test_skinny_gemm_rejects_a_cluster_pair_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"a 2-D cluster is \(along_n, along_m\), got \(2, 2, 1\)"):
        skinny_gemm.get_tir(128, 256, 256, 64, 128, 64, 3, 128, cluster=(2, 2, 1))


def test_skinny_matmul_cluster_without_multicast_keeps_own_loads():
    """skinny_matmul's 10th config entry 0 compiles with tl.disable_tma_multicast: the
    blocks of a cluster along M each load the whole B tile themselves."""
    M, N, K = 128, 256, 320
    f = skinny_matmul(M, N, K, (64, 128, 64, 3, 128, 1, False, 2, 1, 0), target=SM90A)
    src = f.get_kernel_source()
    assert "__cluster_dims__(1, 2, 1)" in src and "multicast" not in src
    assert "tl::mbarrier_arrive_warpgroup<1>" in src  # own loads: releases stay in the block
    rng = np.random.default_rng(7)
    a, b = bf16(rng, M, K), bf16(rng, N, K)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(f(a, b).astype(np.float64), ref, rtol=2e-2, atol=0.3)


def test_skinny_gemm_rejects_an_unknown_cluster_axis():
    with pytest.raises(ValueError, match="cluster_axis must be 'n' or 'm', got 'k'"):
        skinny_gemm.get_tir(128, 256, 256, 64, 128, 64, 3, 128, cluster=2, cluster_axis="k")


def gemm_cluster_y(M, N, K, bM, bN, bK, cluster_y):
    """C = A @ B with the blocks along M (by) clustered: B's tile is the same in every
    block of a cluster and is multicast, A's is not."""

    @T.prim_func
    def gemm(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(
            T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128, cluster_dims=(1, cluster_y, 1)
        ) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            acc = T.alloc_fragment((bM, bN), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * bM, bx * bN])

    return gemm


def test_gemm_multicasts_b_across_a_cluster_along_y():
    M, N, K = 256, 128, 96
    kernel = tilelang.compile(gemm_cluster_y(M, N, K, 64, 64, 32, 2), target=SM90A)
    src = kernel.get_kernel_source()
    assert "tl::tma_load_multicast<2>((&B_s[" in src and "tl::tma_load<2>((&A_s[" in src
    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-2)


def test_multicast_only_for_shared_tiles_in_warp_specialized_pipelines():
    # Clusters along x over a GEMM whose A tile is the same in every block and whose B
    # tile is each block's own: A is multicast, B is not; without warp specialization
    # neither is.
    @T.prim_func
    def f(
        A: T.Tensor((64, 128), "float16"),
        B: T.Tensor((128, 256), "float16"),
        C: T.Tensor((64, 256), "float32"),
    ):
        with T.Kernel(4, threads=128, cluster_dims=2) as bx:
            A_s = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            T.clear(acc)
            for k in T.Pipelined(2, num_stages=2):
                T.copy(A[0, k * 64], A_s)
                T.copy(B[k * 64, bx * 64], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[0, bx * 64])

    src = tilelang.compile(f, target=SM90A).get_kernel_source()
    assert "tl::tma_load_multicast<2>((&A_s[" in src and "tl::tma_load<2>((&B_s[" in src
    off = tilelang.compile(f, target=SM90A, pass_configs={"tl.disable_warp_specialized": True})
    src = off.get_kernel_source()
    assert "multicast" not in src and "__cluster_dims__(2, 1, 1)" in src
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 128)).astype(np.float16)
    b = rng.standard_normal((128, 256)).astype(np.float16)
    for k in (tilelang.compile(f, target=SM90A), off):
        c = np.zeros((64, 256), np.float32)
        k(a, b, c)
        np.testing.assert_allclose(
            c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-2
        )


def explicit_multicast(n, mask, cluster=4, annotations=False):
    """Every block loads the same 64 x 64 tile with T.tma_copy(cluster_mask=mask) and
    writes it out: the mask's lowest block multicasts it to the mask's blocks, the
    blocks outside the mask load their own."""
    kwargs = {"annotations": {"cluster_mask": mask}} if annotations else {"cluster_mask": mask}

    @T.prim_func
    def f(A: T.Tensor((64, 64), "float16"), Out: T.Tensor((n, 64, 64), "float16")):
        with T.Kernel(n, threads=128, cluster_dims=cluster) as bx:
            A_s = T.alloc_shared((64, 64), "float16")
            bar = T.alloc_barrier(128)
            T.cluster_sync()  # every block's barrier is initialized before a multicast
            T.tma_copy(A[0:64, 0:64], A_s, barrier=bar, **kwargs)
            T.barrier_arrive(bar)
            T.barrier_wait(bar, 0)
            T.copy(A_s, Out[bx, :, :])

    return f


@pytest.mark.parametrize("mask, annotations", [(0b1111, False), (0b0110, True), (0b0001, False)])
def test_tma_copy_cluster_mask_multicasts_to_the_mask(mask, annotations):
    kernel = tilelang.compile(explicit_multicast(8, mask, annotations=annotations), target=SM90A)
    src = kernel.get_kernel_source()
    assert f"tl::tma_load_multicast<2>((&A_s[0]), (&tl_tma_map0), (&bar[0]), {mask}," in src
    assert "tl::tma_load<2>(" in src  # the blocks outside the mask
    a = np.arange(64 * 64).astype(np.float16).reshape(64, 64)
    out = np.zeros((8, 64, 64), np.float16)
    kernel(a, out)
    np.testing.assert_array_equal(out, np.broadcast_to(a, out.shape))


@pytest.mark.parametrize(
    "mask, cluster, message",
    [
        (0b100, 2, "cluster_mask 4 names block rank 2, but the kernel's clusters have 2 block(s)"),
        (0, 2, "cluster_mask must be a Python int in [1, 0xffff]"),
        ("3", 2, "cluster_mask must be a Python int in [1, 0xffff]"),
    ],
)
def test_bad_cluster_mask(mask, cluster, message):
    with pytest.raises(TileLangError) as e:
        tilelang.compile(explicit_multicast(4, mask, cluster=cluster), target=SM90A)
    assert message in str(e.value) and "test_clusters.py" in str(e.value)


# ---- errors


def small(cluster, grid=4, target_threads=64):
    @T.prim_func
    def f(A: T.Tensor((8,), "float32")):
        with T.Kernel(grid, threads=target_threads, cluster_dims=cluster):
            A[0] = 1.0

    return f


@pytest.mark.parametrize(
    "cluster, grid, message",
    [
        ((3, 1, 1), 4, "the grid's 4 blocks along x are not a multiple of the cluster's 3"),
        ((2, 2, 1), 4, "clusters blocks along y, but the grid has 1 dimension(s)"),
        ((4, 4, 1), 16, "asks for clusters of 16 blocks; the portable limit is 8"),
        ((0, 1), 4, "cluster_dims must be positive"),
        ((1, 1, 1, 1), 4, "cluster_dims takes 1 to 3 sizes"),
        ("2", 4, "cluster_dims must be an int or a tuple of up to 3 ints, got '2'"),
    ],
)
def test_bad_cluster_dims_name_the_kernel_line(cluster, grid, message):
    with pytest.raises(TileLangError) as e:
        tilelang.compile(small(cluster, grid), target=SM90A)
    assert message in str(e.value)
    assert "test_clusters.py" in str(e.value)


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_89"])
def test_clusters_need_sm90(target):
    with pytest.raises(TileLangError) as e:
        tilelang.compile(small(2), target=target)
    msg = str(e.value)
    assert "cluster_dims=(2, 1, 1) needs thread block clusters (CUDA sm_90 or later)" in msg
    assert "test_clusters.py" in msg


def test_cluster_ops_need_sm90():
    @T.prim_func
    def f(A: T.Tensor((8,), "int32")):
        with T.Kernel(1, threads=32):
            T.cluster_sync()
            A[0] = T.block_rank_in_cluster()

    with pytest.raises(TileLangError) as e:
        tilelang.compile(f, target="cuda -arch=sm_80")
    assert "T.cluster_sync needs sm_90 or later" in str(e.value)
    # Without cluster_dims the block is a cluster of one: rank 0, the barrier its own.
    a = np.full(8, -1, np.int32)
    tilelang.compile(f, target=SM90A)(a)
    assert a[0] == 0


def test_symbolic_grid_that_does_not_divide_into_clusters_fails_at_the_call():
    n = T.dynamic("n")

    @T.prim_func
    def f(A: T.Tensor((n,), "float32")):
        with T.Kernel(n, threads=32, cluster_dims=2) as bx:
            A[bx] = T.cast(T.block_rank_in_cluster(), "float32")

    kernel = tilelang.compile(f, target=SM90A)
    a = np.zeros(6, np.float32)
    kernel(a)
    np.testing.assert_array_equal(a, [0, 1, 0, 1, 0, 1])
    with pytest.raises(TileLangError) as e:
        kernel(np.zeros(5, np.float32))
    assert (
        "does not divide into clusters of cluster_dims=(2, 1, 1): 5 blocks along x are not a multiple of 2"
        in str(e.value)
    )


def test_cluster_kernel_alias_requires_cluster_dims():
    with pytest.raises(TileLangError, match="T.ClusterKernel needs cluster_dims"):

        @T.prim_func
        def f(A: T.Tensor((8,), "float32")):
            with T.ClusterKernel(4, threads=32):
                A[0] = 1.0

        tilelang.compile(f, target=SM90A)

    @T.prim_func
    def g(A: T.Tensor((4,), "int32")):
        with T.ClusterKernel(4, threads=32, cluster_dims=(4,)) as bx:
            A[bx] = T.block_rank_in_cluster()

    a = np.zeros(4, np.int32)
    tilelang.compile(g, target=SM90A)(a)
    np.testing.assert_array_equal(a, [0, 1, 2, 3])


def test_disable_tma_multicast_keeps_each_blocks_own_loads():
    f = skinny_gemm.get_tir(
        128, 256, 128, 128, 64, 64, 2, 256, 1, False, "nk", "bfloat16", cluster=2
    )
    kernel = tilelang.compile(
        f, out_idx=[-1], target=SM90A, pass_configs={"tl.disable_tma_multicast": True}
    )
    src = kernel.get_kernel_source()
    assert (
        "__cluster_dims__(2, 1, 1)" in src and "multicast" not in src and "cluster_sync" not in src
    )
    rng = np.random.default_rng(9)
    a, b = bf16(rng, 128, 128), bf16(rng, 256, 128)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(kernel(a, b).astype(np.float64), ref, rtol=2e-2, atol=0.3)
