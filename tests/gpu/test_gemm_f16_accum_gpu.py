"""T.gemm with a float16 accumulator on a real GPU: TileLang's f16f16f16 matmul cases
against torch.matmul (float16 output), through wgmma (the default on sm_90a) and
mma.sync, and the rounding model the emulator follows (one rounding to float16 per
instruction) checked against the hardware bit for bit."""

import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))

import tilelang
import tilelang.language as T
from test_gemm_f16_accum import (
    accumulate_into,
    integer_operands,
    matmul,
    per_instruction_reference,
)

torch = pytest.importorskip("torch")

NO_WGMMA = {"tl.disable_wgmma": True}


def configs():
    """(pass configs, template prefix) of the paths the GPU has: mma.sync, and wgmma on sm_90."""
    out = [(NO_WGMMA, "tl::gemm_")]
    if torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0):
        out.append(({}, "tl::wgmma_gemm_"))
    return out


# TileLang's cases (M, N, K, trans_A, trans_B, block_N, stages), block_M 128, block_K 32.
CASES = [
    (512, 1024, 768, False, False, 128, 0),
    (512, 1024, 768, True, False, 128, 0),
    (512, 1024, 768, False, True, 128, 0),
    (512 - 8, 1024 - 32, 768 - 24, False, False, 256, 2),
    (512 - 9, 1024 - 7, 768 - 5, False, False, 256, 2),
]


@pytest.mark.parametrize("M, N, K, ta, tb, bN, stages", CASES)
def test_f16_accumulator_matmul_matches_torch(M, N, K, ta, tb, bN, stages):
    a = torch.empty((K, M) if ta else (M, K), device="cuda").uniform_(-1, 1).half()
    b = torch.empty((N, K) if tb else (K, N), device="cuda").uniform_(-1, 1).half()
    op_a, op_b = (a.T if ta else a), (b.T if tb else b)
    expect = torch.matmul(op_a, op_b)  # float16 output
    exact = torch.matmul(op_a.float(), op_b.float())
    for pass_configs, prefix in configs():
        func = matmul(M, N, K, 128, bN, 32, ta, tb, "float16", stages)
        kernel = tilelang.compile(func, out_idx=[2], target="cuda", pass_configs=pass_configs)
        assert prefix + "ss<" in kernel.get_kernel_source()
        c = kernel(a, b)
        assert c.dtype == torch.float16
        # TileLang's tolerance: isclose(rtol=1e-2, atol=1e-2) on at least 99 % of the elements.
        for ref in (expect, exact):
            bad = int((~torch.isclose(c.float(), ref.float(), rtol=1e-2, atol=1e-2)).sum())
            assert bad <= c.numel() // 100, f"{prefix}: {bad} of {c.numel()} elements off"


@pytest.mark.parametrize("shared_accumulator", [False, True])
def test_hardware_rounds_each_instruction_once(shared_accumulator):
    # The emulator's model: each instruction's 16 products join the accumulator in a
    # wider format, and the sum is rounded to float16 (nearest even) once.
    if shared_accumulator:
        args = (
            128,
            40,
            64,
            128,
            8,
            32,
            256,
            T.GemmWarpPolicy.FullRow,
        )  # 8-wide warp tiles: tl::gemm_mma
        paths = [(NO_WGMMA, "tl::gemm_mma<")]
    else:
        args = (128, 128, 64, 64, 64, 32)
        paths = configs()
    M, N, K = args[:3]
    a, b, c0 = integer_operands(M, N, K)
    ref = per_instruction_reference(a, b, c0, 16)
    for pass_configs, prefix in paths:
        kernel = tilelang.compile(
            accumulate_into(*args), out_idx=[-1], target="cuda", pass_configs=pass_configs
        )
        assert prefix in kernel.get_kernel_source()
        out = kernel(*(torch.from_numpy(x).cuda() for x in (a, b, c0)))
        np.testing.assert_array_equal(out.cpu().numpy(), ref, err_msg=prefix)
