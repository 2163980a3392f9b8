"""T.Pipelined copies through TMA on an H100/H200 (target "cuda", which is sm_90a
there): the GEMMs of tests/python/test_tma_pipeline.py (wgmma and mma.sync, tails,
2-4 stages, transposed operands, fp16/bf16, by-hand schedules, dynamic shapes)
against torch, with the maps encoded by the driver at each launch; and
tl.disable_tma_lower giving cp.async with the same numbers. Skipped without a GPU
of compute capability 9.0."""

import math
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))

torch = pytest.importorskip("torch")

import tilelang
from test_pipeline_schedule import FA_SCHEDULE, flash_attention
from test_tma_pipeline import WGMMA_CASES, dynamic_gemm, mma_gemm, tma_only
from test_wgmma_gemm import wgmma_gemm

TARGET = "cuda"
TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


pytestmark = pytest.mark.usefixtures("hopper")  # tests/gpu/conftest.py


def randn(shape, dtype):
    return torch.randn(*shape, device="cuda", dtype=TORCH_DTYPES[dtype])


@pytest.mark.parametrize("name", sorted(WGMMA_CASES))
def test_wgmma_gemm_with_tma_matches_torch(name):
    M, N, K, bM, bN, bK, dtype, ta, tb, threads, policy, stages = WGMMA_CASES[name]
    kernel = tilelang.compile(
        wgmma_gemm(M, N, K, bM, bN, bK, dtype, ta, tb, threads, policy, stages), target=TARGET
    )
    assert tma_only(kernel.get_kernel_source())
    a = randn((K, M) if ta else (M, K), dtype)
    b = randn((N, K) if tb else (K, N), dtype)
    c0 = torch.randn(M, N, device="cuda")
    c = torch.zeros(M, N, device="cuda")
    kernel(a, b, c0, c)
    ref = c0.double() + (a.double().T if ta else a.double()) @ (b.double().T if tb else b.double())
    torch.testing.assert_close(c.double(), ref, rtol=1e-3, atol=1e-2)


def check_mma_gemm(kernel, M, N, K, dtype):
    a, b = randn((M, K), dtype), randn((K, N), dtype)
    ref = a.double() @ b.double()
    torch.testing.assert_close(kernel(a, b).double(), ref, rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("wgmma", [True, False])
def test_gemm_with_tma_matches_torch(wgmma, dtype, stages):
    # 128 threads and 64 x 64 tiles: wgmma on sm_90a, or mma.sync when it is disabled.
    configs = {} if wgmma else {"tl.disable_wgmma": True}
    kernel = tilelang.compile(
        mma_gemm(1000, 1032, 808, dtype, stages), out_idx=[-1], target=TARGET, pass_configs=configs
    )
    src = kernel.get_kernel_source()
    assert tma_only(src) and ("tl::wgmma_gemm_ss<" in src) == wgmma
    check_mma_gemm(kernel, 1000, 1032, 808, dtype)


@pytest.mark.parametrize(
    "order, stage",
    [
        ([0, 1, 2], [0, 0, 1]),
        ([0, 1, 2], [0, 0, 3]),
        ([0, 1, 2], [1, 0, 2]),
        ([-1, -1, 0], [-1, -1, 0]),
    ],
)
def test_gemm_schedules_by_hand_with_tma_match_torch(order, stage):
    kernel = tilelang.compile(
        mma_gemm(520, 264, 800, "float16", 3, order, stage), out_idx=[-1], target=TARGET
    )
    assert tma_only(kernel.get_kernel_source())
    check_mma_gemm(kernel, 520, 264, 800, "float16")


def test_flash_attention_schedule_by_hand_with_tma_matches_torch():
    seq_len, dim = 1000, 64
    q, k, v = (randn((seq_len, dim), "float16") for _ in range(3))
    kernel = tilelang.compile(
        flash_attention(seq_len, dim, 64, 64, FA_SCHEDULE), out_idx=[-1], target=TARGET
    )
    assert "tl::tma_load<2>" in kernel.get_kernel_source()
    logits = q.float() @ k.float().T / math.sqrt(dim)
    ref = torch.softmax(logits, dim=1) @ v.float()
    torch.testing.assert_close(kernel(q, k, v).float(), ref, rtol=2e-2, atol=2e-2)


def test_dynamic_shapes_encode_the_map_per_launch():
    kernel = tilelang.compile(
        dynamic_gemm("bfloat16", 3, K=200, N=136), out_idx=[-1], target=TARGET
    )
    assert tma_only(kernel.get_kernel_source())
    for M in (64, 1000, 130, 7):
        check_mma_gemm(kernel, M, 136, 200, "bfloat16")
    # Symbolic innermost extents keep cp.async (the driver refuses unaligned ones).
    kernel = tilelang.compile(dynamic_gemm("bfloat16", 3), out_idx=[-1], target=TARGET)
    assert "tl::tma_load<" not in kernel.get_kernel_source()
    for M, N, K in [(64, 64, 32), (1000, 72, 200), (130, 1024, 520), (64, 136, 96), (33, 50, 30)]:
        check_mma_gemm(kernel, M, N, K, "bfloat16")


def test_disable_tma_lower_gives_cp_async_with_the_same_numbers():
    a, b = randn((777, 512), "float16"), randn((512, 520), "float16")
    outs = []
    for configs in ({}, {"tl.disable_tma_lower": True}):
        kernel = tilelang.compile(
            mma_gemm(777, 520, 512, "float16", 3), out_idx=[-1], target=TARGET, pass_configs=configs
        )
        assert ("tl::tma_load" in kernel.get_kernel_source()) == (not configs)
        outs.append(kernel(a, b))
    torch.testing.assert_close(outs[0], outs[1], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(outs[0].double(), a.double() @ b.double(), rtol=1e-3, atol=1e-2)
