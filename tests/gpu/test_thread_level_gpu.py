"""TileLang's thread-level semantics on the present GPU against torch (the kernels of
tests/python/test_thread_level_semantics.py, which run them on the emulators in CI):
per-thread register fills and copies, per-thread scalar fragments, parts of register
fragments to and from memory, barriers between thread-level shared accesses, branches
on the thread index over whole warpgroups as their T.ws regions and over other ranges
of threads (named barriers of whole warps), T.dp4a, a pipelined loop starting at a
register value and TVM's cross-thread reduction. Needs an sm_90 GPU (the regions and
sm_90a kernels)."""

import os
import sys

import numpy as np
import pytest
import tilelang

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():  # its inputs come from a CUDA generator made at import
    pytest.skip("needs a CUDA GPU and torch", allow_module_level=True)
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
)
from test_thread_level_semantics import (
    D,
    M,
    N,
    V,
    branches_over_warps,
    dot_of_int8_rows,
    elif_chain,
    neighbours,
    part_of_the_block,
    partial_copies,
    pipelined_from_register,
    producer_and_consumer,
    registers_per_thread,
    scalar_fragment,
    specialized_by_hand,
    warp_specialized_by_hand,
)

pytestmark = pytest.mark.usefixtures("hopper")  # tests/gpu/conftest.py
TARGET = "cuda -arch=sm_90a"
gen = torch.Generator(device="cuda").manual_seed(9)


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, device="cuda", generator=gen).to(dtype)


def test_register_fills_and_copies_on_every_thread():
    a = randn(128, 4)
    c = torch.full((128,), -1.0, device="cuda")
    tilelang.compile(registers_per_thread(), target=TARGET)(a, c)
    torch.testing.assert_close(c, a.sum(1) + 0.5, rtol=1e-6, atol=1e-6)


def test_scalar_fragment_per_thread():
    sizes = torch.tensor([1, 2, 3, 4], dtype=torch.int32, device="cuda")
    c = torch.zeros(128, dtype=torch.int32, device="cuda")
    tilelang.compile(scalar_fragment(), target=TARGET)(sizes, c)
    assert torch.equal(c, 10 + torch.arange(128, dtype=torch.int32, device="cuda"))


def test_parts_of_register_fragments():
    q, k, p = (
        randn(M, D, dtype=torch.float16),
        randn(N, D, dtype=torch.float16),
        randn(V, N, dtype=torch.float16),
    )
    s = q.float() @ k.float().T
    top = torch.zeros(V, N, device="cuda")
    mid = torch.zeros(8, 16, device="cuda")
    rows = torch.zeros(V, device="cuda")
    out = torch.zeros(M, N, device="cuda")
    tilelang.compile(partial_copies(), target=TARGET)(q, k, p, top, mid, rows, out)
    torch.testing.assert_close(top, s[:V], rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(mid, s[8:16, 16:32], rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(rows, s[:V].max(1).values, rtol=1e-3, atol=1e-3)
    want = s.clone()
    want[V : 2 * V] = p.float()
    torch.testing.assert_close(out, want, rtol=1e-3, atol=1e-3)


def test_barriers_between_thread_level_shared_accesses():
    a = randn(256)
    c = torch.zeros(128, device="cuda")
    for _ in range(20):  # a missing barrier shows up some of the time, not every time
        tilelang.compile(neighbours(), target=TARGET)(a, c)
        nxt = (torch.arange(128, device="cuda") + 1) % 128
        torch.testing.assert_close(c, a[nxt] + a[128 + nxt], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "threads,cond",
    [(256, lambda tx: tx < 128), (256, lambda tx: tx >= 128), (384, lambda tx: tx // 128 == 2)],
    ids=["first", "second", "third"],
)
def test_branches_over_whole_warpgroups(threads, cond):
    a, b = randn(64, 64, dtype=torch.float16), randn(64, 64, dtype=torch.float16)
    kernel = tilelang.compile(warp_specialized_by_hand(threads, cond), out_idx=[2], target=TARGET)
    torch.testing.assert_close(kernel(a, b), a.float() @ b.float().T, rtol=1e-3, atol=1e-3)


def test_elif_chain_of_regions():
    a = randn(3, 128)
    c = tilelang.compile(elif_chain(), out_idx=[1], target=TARGET)(a)
    torch.testing.assert_close(c, a + torch.tensor([[1.0], [2.0], [3.0]], device="cuda"))


def test_dp4a():
    a = torch.randint(-128, 128, (64, 16), dtype=torch.int8, device="cuda")
    b = torch.randint(-128, 128, (16,), dtype=torch.int8, device="cuda")
    c = torch.zeros(64, dtype=torch.int32, device="cuda")
    tilelang.compile(dot_of_int8_rows(), target=TARGET)(a, b, c)
    want = (a.cpu().numpy().astype(np.int32) @ b.cpu().numpy().astype(np.int32)).astype(np.int32)
    assert np.array_equal(c.cpu().numpy(), want)


def test_pipelined_loop_from_a_register_value():
    a = randn(256, 64, dtype=torch.float16)
    b = tilelang.compile(pipelined_from_register(), out_idx=[1], target=TARGET)(a)
    torch.testing.assert_close(b, a.float().reshape(4, 64, 64)[1:].sum(0), rtol=1e-3, atol=1e-3)


def test_producer_branch_without_a_block_barrier():
    a = randn(512)
    b = torch.zeros(512, device="cuda")
    tilelang.compile(producer_and_consumer(), target=TARGET)(a, b)  # a hang fails by timeout
    torch.testing.assert_close(b, a * 2)


def test_hand_written_producer_and_consumer():
    a, b = randn(64, 64, dtype=torch.float16), randn(64, 64, dtype=torch.float16)
    c = tilelang.compile(specialized_by_hand(), out_idx=[2], target=TARGET)(a, b)
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("target", ["cuda -arch=sm_80", TARGET])
@pytest.mark.parametrize(
    "lo,hi,scale", [(0, 1, True), (5, 6, False), (0, 32, True), (32, 96, True), (0, 16, False)]
)
def test_tile_ops_under_a_branch_on_part_of_the_block(target, lo, hi, scale):
    a = randn(64, 64)
    for _ in range(5):  # a missing barrier shows up some of the time
        out = tilelang.compile(part_of_the_block(lo, hi, scale), out_idx=[1], target=target)(a)
        torch.testing.assert_close(out, a * 2 if scale else a, rtol=0, atol=0)


def test_each_branch_over_warps_has_its_own_named_barrier():
    a = randn(32, 64)
    out = tilelang.compile(branches_over_warps(4), out_idx=[1], target=TARGET)(a)
    warp_of_row = torch.arange(4, device="cuda").repeat_interleave(4)[:, None].float()
    torch.testing.assert_close(out[:16], (a[:16] + warp_of_row) * 2, rtol=0, atol=0)


def test_tvm_thread_allreduce():
    from test_thread_allreduce import block_max, gemv

    a, b = randn(256), randn(64, 256)
    c = tilelang.compile(gemv(64, 256, 16, 8), out_idx=[-1], target=TARGET)(a, b)
    torch.testing.assert_close(c, b @ a, rtol=1e-4, atol=1e-4)
    x = randn(3, 8, 16)
    y = tilelang.compile(block_max(3), out_idx=[-1], target=TARGET)(x)
    want = x[:, :, 0::2].amax(dim=(1, 2))[:, None, None].expand_as(x)
    torch.testing.assert_close(y, want, rtol=0, atol=0)
