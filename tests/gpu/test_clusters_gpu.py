"""Thread block clusters and TMA multicast on the present GPU against torch: the
cluster rank and barrier, the skinny GEMM with A multicast along N or B along M (the bench's
M = 128 shape and a tail shape), along both in 2-D clusters, or in a cluster without
multicast, and a GEMM with B multicast along M; T.copy_cluster into another block's
shared memory. The same kernels run in the emulator in tests/python/test_clusters.py
and test_copy_cluster.py. Needs an sm_90 GPU."""

import os
import sys

import pytest
import tilelang

torch = pytest.importorskip("torch")
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(here), "python"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(here)), "examples"))
from skinny_gemm import skinny_gemm, skinny_matmul
from test_clusters import explicit_multicast, gemm_cluster_y, ranks_kernel
from test_copy_cluster import (
    ring_exchange,
    slice_with_barrier,
    store_then_cluster_sync,
    store_with_barrier,
)

pytestmark = pytest.mark.usefixtures("hopper")  # tests/gpu/conftest.py


@pytest.mark.parametrize(
    "n_x, n_y, cluster, sync", [(132, 2, (2, 1, 1), "sync"), (8, 8, (2, 2, 1), "arrive_wait")]
)
def test_block_rank_and_cluster_barrier(n_x, n_y, cluster, sync):
    kernel = tilelang.compile(ranks_kernel(n_x, n_y, cluster, sync), target="cuda")
    out = torch.zeros((n_y, n_x, 64), dtype=torch.int32, device="cuda")
    kernel(out)
    bx = torch.arange(n_x, device="cuda")[None, :]
    by = torch.arange(n_y, device="cuda")[:, None]
    rank = bx % cluster[0] + (by % cluster[1]) * cluster[0]
    torch.testing.assert_close(out[:, :, 0], (rank * 1000 + bx + by * n_x).to(torch.int32))
    torch.testing.assert_close(out, out[:, :, :1].expand_as(out).contiguous())


@pytest.mark.parametrize(
    "M, N, K, config",
    [
        (128, 8192, 8192, (128, 64, 128, 4, 256, 2)),
        (128, 8192, 8192, (128, 64, 128, 4, 256, 4)),
        (100, 1024, 1000, (128, 64, 64, 4, 256, 2)),
        (128, 4096, 4096, (128, 128, 64, 4, 256, 2)),
    ],
)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_skinny_gemm_with_a_multicast(M, N, K, config, dtype):
    bM, bN, bK, stages, threads, cluster = config
    kernel = skinny_gemm(
        M, N, K, bM, bN, bK, stages, threads, 1, False, "nk", dtype, cluster=cluster
    )
    assert "tl::tma_load_multicast<" in kernel.get_kernel_source()
    t = getattr(torch, dtype)
    a = torch.randn(M, K, dtype=t, device="cuda")
    b = torch.randn(N, K, dtype=t, device="cuda")
    ref = (a.float() @ b.float().T).to(t)
    for _ in range(3):  # repeated calls: the clusters' mbarriers start afresh each launch
        torch.testing.assert_close(kernel(a, b), ref, rtol=2e-2, atol=0.5)


@pytest.mark.parametrize("swap_ab", [False, True], ids=["plain", "swapped"])
@pytest.mark.parametrize("M, N, K", [(128, 8192, 8192), (100, 1000, 1000)])
def test_skinny_gemm_with_b_multicast_along_m(M, N, K, swap_ab):
    kernel = skinny_gemm(
        M, N, K, 64, 128, 64, 8, 128, 1, swap_ab, "nk", "bfloat16", cluster=2, cluster_axis="m"
    )
    assert "tl::tma_load_multicast<2>((&B_shared[" in kernel.get_kernel_source()
    a = torch.randn(M, K, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(N, K, dtype=torch.bfloat16, device="cuda")
    ref = (a.float() @ b.float().T).to(torch.bfloat16)
    for _ in range(3):
        torch.testing.assert_close(kernel(a, b), ref, rtol=2e-2, atol=0.5)


@pytest.mark.parametrize(
    "M, N, K, cluster",
    [(128, 7680, 8192, (2, 2)), (100, 1000, 1000, (2, 2)), (128, 2048, 1024, (4, 2))],
)
def test_skinny_gemm_2d_cluster_multicasts_rows_and_columns(M, N, K, cluster):
    """2-D clusters: A multicast along each row of the cluster, B along each column."""
    kernel = skinny_gemm(M, N, K, 64, 128, 64, 8, 128, 1, False, "nk", "bfloat16", cluster=cluster)
    src = kernel.get_kernel_source()
    assert src.count("tl::tma_load_multicast<2>(") == 2 and "tl::cluster_share_mask<" in src
    a = torch.randn(M, K, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(N, K, dtype=torch.bfloat16, device="cuda")
    ref = (a.float() @ b.float().T).to(torch.bfloat16)
    for _ in range(3):
        torch.testing.assert_close(kernel(a, b), ref, rtol=2e-2, atol=0.5)


def test_skinny_matmul_cluster_without_multicast():
    """The bench's M = 128 config that keeps each block's own loads in its cluster."""
    f = skinny_matmul(128, 8192, 8192, (64, 128, 64, 8, 128, 1, False, 2, 1, 0))
    a = torch.randn(128, 8192, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    ref = (a.float() @ b.float().T).to(torch.bfloat16)
    for _ in range(3):
        torch.testing.assert_close(f(a, b), ref, rtol=2e-2, atol=0.5)


def test_gemm_with_b_multicast_along_m():
    M, N, K = 1024, 512, 1024
    kernel = tilelang.compile(gemm_cluster_y(M, N, K, 128, 128, 64, 2), target="cuda")
    assert "tl::tma_load_multicast<2>((&B_s[" in kernel.get_kernel_source()
    a = torch.randn(M, K, dtype=torch.float16, device="cuda")
    b = torch.randn(K, N, dtype=torch.float16, device="cuda")
    c = torch.zeros(M, N, dtype=torch.float32, device="cuda")
    kernel(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("mask", [0b1111, 0b0110, 0b0001])
def test_tma_copy_cluster_mask(mask):
    kernel = tilelang.compile(explicit_multicast(132, mask), target="cuda")
    a = torch.randn(64, 64, device="cuda").half()
    out = torch.zeros(132, 64, 64, device="cuda", dtype=torch.float16)
    for _ in range(3):
        kernel(a, out)
        torch.testing.assert_close(out, a.expand_as(out).contiguous(), rtol=0, atol=0)


@pytest.mark.parametrize("make", ["barrier", "cluster_sync", "slice"])
def test_copy_cluster(make):
    if make == "slice":
        kernel = tilelang.compile(slice_with_barrier(8, 64, 32), target="cuda")
        a = torch.randn(8, 64, device="cuda")
        b = torch.full_like(a, 7.0)
        kernel(a, b)
        expect = torch.zeros_like(a)
        expect[:, :32] = a[:, :32]
    else:
        make_kernel = store_with_barrier if make == "barrier" else store_then_cluster_sync
        kernel = tilelang.compile(make_kernel(256), target="cuda")
        a = torch.randn(256, device="cuda")
        b = torch.zeros_like(a)
        kernel(a, b)
        expect = a
    torch.testing.assert_close(b, expect, rtol=0, atol=0)


def test_copy_cluster_ring_exchange():
    a = torch.randn(4, 64, device="cuda")
    b = torch.zeros_like(a)
    tilelang.compile(ring_exchange(), target="cuda")(a, b)
    torch.testing.assert_close(b, torch.roll(a, 1, dims=0), rtol=0, atol=0)
