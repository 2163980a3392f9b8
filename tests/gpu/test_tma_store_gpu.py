"""TMA stores of shared-tile epilogues (tl.enable_tma_store) on the present GPU against
torch: a GEMM whose tiles run past the tensor (TMA clips the boxes), a store into the
middle of a bigger tensor that must leave the rest alone, one shared tile stored
several times in a loop (each store must have read it before the threads refill it),
tiles that start before row 0 (TMA loads them, the threads store them), column tiles
whose start is not a whole 16 bytes (neither TMA loads nor stores them), T.atomic_add of
shared tiles as TMA reduce-adds from many blocks at once, and tensors read back after
their store (within a block, and by the partner block of a split-K cluster).
Needs an sm_90 GPU: elsewhere the stores are not generated."""

import os
import sys

import pytest
import tilelang

torch = pytest.importorskip("torch")
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
)
from test_tma_store import (
    column_shifted_tiles,
    epilogue_gemm,
    shifted_tiles,
    split_k_in_a_cluster,
    store_into_the_middle,
    stored_then_read_back,
    tile_stored_in_a_loop,
    tiles_added_by_every_block,
)

STORES = {"tl.enable_tma_store": True}  # the default, said explicitly


pytestmark = pytest.mark.usefixtures("hopper")  # tests/gpu/conftest.py


def stored_through_tma(kernel):
    return "tl::tma_store<" in kernel.get_kernel_source()


@pytest.mark.parametrize(
    "M, N, K, bM, bN, bK, dtype, out_dtype, threads",
    [
        (1000, 1016, 512, 128, 128, 64, "float16", "float16", 128),
        (777, 520, 256, 128, 256, 64, "bfloat16", "bfloat16", 256),
        (300, 264, 128, 64, 64, 32, "float16", "float32", 128),
    ],
)
def test_gemm_epilogue_through_tma_store(M, N, K, bM, bN, bK, dtype, out_dtype, threads):
    kernel = tilelang.compile(
        epilogue_gemm(M, N, K, bM, bN, bK, dtype, out_dtype, threads, stages=3),
        out_idx=[-1],
        target="cuda",
        pass_configs=STORES,
    )
    assert stored_through_tma(kernel)
    tdt = getattr(torch, dtype)
    a = torch.randn(M, K, device="cuda", dtype=tdt)
    b = torch.randn(K, N, device="cuda", dtype=tdt)
    c = kernel(a, b)
    torch.cuda.synchronize()
    ref = a.double() @ b.double()
    tol = {"float32": 1e-4, "float16": 2e-3, "bfloat16": 1e-2}[out_dtype]
    torch.testing.assert_close(c.double(), ref, rtol=tol, atol=tol * 8)


def test_store_leaves_the_rest_of_the_tensor_alone():
    M, N = 256, 512
    func = store_into_the_middle(M, N, 64, 128, threads=128)
    kernel = tilelang.compile(func, target="cuda", pass_configs=STORES)
    assert stored_through_tma(kernel)
    a = torch.randn(M, N, device="cuda")
    b = torch.randn(M + 7, N + 8, device="cuda")
    ref = b.clone()
    ref[3 : 3 + M, 8 : 8 + N] = a + 1.0
    kernel(a, b)
    torch.cuda.synchronize()
    assert torch.equal(b, ref)


def test_tile_reused_in_a_loop_waits_for_each_store():
    M, N = 4104, 128
    func = tile_stored_in_a_loop(M, N, 64, 128)
    kernel = tilelang.compile(func, out_idx=[-1], target="cuda", pass_configs=STORES)
    assert stored_through_tma(kernel)
    a = torch.randn(M, N, device="cuda", dtype=torch.float16)
    out = kernel(a)
    torch.cuda.synchronize()
    assert torch.equal(out, a - 1)


@pytest.mark.parametrize("shift", [0, 24])
def test_tiles_that_start_before_row_0(shift):
    M, N = 1000, 256
    kernel = tilelang.compile(
        shifted_tiles(M, N, 64, 64, shift), out_idx=[-1], target="cuda", pass_configs=STORES
    )
    assert "tl::tma_load<2>(" in kernel.get_kernel_source()
    assert stored_through_tma(kernel) == (shift == 0)
    a = torch.randn(M, N, device="cuda", dtype=torch.float16)
    out = kernel(a)
    torch.cuda.synchronize()
    assert torch.equal(out, a + 1)


@pytest.mark.parametrize("shift, tma", [(0, True), (8, True), (4, False), (1, False)])
def test_tiles_at_an_innermost_start_off_16_bytes(shift, tma):
    # TMA only where the column start is a whole 16 bytes (the GPU stops any other).
    M, N = 1000, 1000
    kernel = tilelang.compile(column_shifted_tiles(M, N, shift), target="cuda", pass_configs=STORES)
    src = kernel.get_kernel_source()
    assert ("tl::tma_load<2>(" in src) == tma and stored_through_tma(kernel) == tma
    a = torch.randn(M, N, device="cuda", dtype=torch.float16)
    b = torch.zeros_like(a)
    kernel(a, b)
    torch.cuda.synchronize()
    expected = torch.zeros_like(a)
    expected[:, shift:] = a[:, shift:] + 1
    assert torch.equal(b, expected)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_tma_store_adds_from_many_blocks(dtype):
    # 264 blocks add into every element of Out at once; tails in both dims.
    M, N, blocks = 1000, 328, 264
    kernel = tilelang.compile(
        tiles_added_by_every_block(M, N, 128, 64, blocks, dtype), target="cuda"
    )
    assert "tl::tma_store_add<2>(" in kernel.get_kernel_source()
    tdt = getattr(torch, dtype)
    if dtype == "int32":
        x = torch.randint(-1000, 1000, (blocks, M, N), device="cuda", dtype=tdt)
        out = torch.randint(-1000, 1000, (M, N), device="cuda", dtype=tdt)
    else:
        x = torch.randn(blocks, M, N, device="cuda", dtype=tdt)
        out = torch.randn(M, N, device="cuda", dtype=tdt)
    ref = out.double() + 2 * x.double().sum(0)
    kernel(x, out)
    torch.cuda.synchronize()
    if dtype == "int32":
        assert torch.equal(out.double(), ref)
    else:
        torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-3)


def test_a_tensor_read_back_after_its_store():
    M, N, bM = 4096, 64, 16
    kernel = tilelang.compile(
        stored_then_read_back(M, N, bM), out_idx=[-1], target="cuda", pass_configs=STORES
    )
    assert "tl::tma_store_wait<0, false>()" in kernel.get_kernel_source()
    a = torch.randn(M, N, device="cuda")
    w = torch.zeros(M, N, device="cuda")
    for _ in range(20):  # a race would show in some of the runs
        w.zero_()
        out = kernel(a, w)
        torch.cuda.synchronize()
        assert torch.equal(w, a)
        assert torch.equal(out, a.view(M // bM, bM, N).flip(1, 2).reshape(M, N) * 2)


def test_split_k_partners_read_each_others_partials():
    # The shape of a skinny layer (M = 128) at a size where the two halves of K finish
    # far apart: 128 blocks in clusters of 2.
    M, N, K, bN, bK = 128, 8192, 4096, 128, 64
    kernel = tilelang.compile(
        split_k_in_a_cluster(M, N, K, bN, bK, 4, 256), out_idx=[-1], target="cuda"
    )
    assert "tl::tma_store_wait<0, false>()" in kernel.get_kernel_source()
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    w = torch.empty(N // bN, 2, M, bN, device="cuda")
    ref = a.float() @ b.float().T
    for _ in range(10):
        w.fill_(float("nan"))
        c = kernel(a, b, w)
        torch.cuda.synchronize()
        torch.testing.assert_close(c.float(), ref, rtol=1e-2, atol=2e-1)
