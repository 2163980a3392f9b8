"""T.gemm through mma.sync on a real GPU (f16/bf16 -> f32), compared with torch.
Its speed is measured by bench/gemm_cuda.py."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))

import tilelang
from test_cuda_mma import mma_gemm

torch = pytest.importorskip("torch")

TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def operands(M, N, K, dtype, trans_a, trans_b):
    t = TORCH_DTYPES[dtype]
    a = torch.randn(*((K, M) if trans_a else (M, K)), device="cuda", dtype=t)
    b = torch.randn(*((N, K) if trans_b else (K, N)), device="cuda", dtype=t)
    c0 = torch.randn(M, N, device="cuda")
    af, bf = a.float(), b.float()
    return a, b, c0, (af.T if trans_a else af) @ (bf.T if trans_b else bf)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize(
    "M, N, K, trans_a, trans_b",
    [
        (256, 256, 256, False, False),
        (512, 384, 128, False, True),
        (512, 384, 128, True, False),
        (512, 384, 128, True, True),
        (229, 296, 127, False, False),  # tails: copies pad, the tile gemm stays whole
    ],
)
def test_mma_gemm_matches_torch(M, N, K, trans_a, trans_b, dtype):
    kernel = tilelang.compile(
        mma_gemm(M, N, K, 128, 128, 32, dtype, trans_a, trans_b, accumulate_into_c=True),
        target="cuda",
        pass_configs={"tl.disable_wgmma": True},  # "cuda" on an H100/H200 is sm_90a: wgmma
    )
    assert "tl::gemm_ss<" in kernel.get_kernel_source()
    a, b, c0, ref = operands(M, N, K, dtype, trans_a, trans_b)
    c = torch.empty_like(c0)
    kernel(a, b, c0, c)
    torch.testing.assert_close(c, c0 + ref, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_mma_gemm_at_4096(dtype):
    # Speed is measured by bench/gemm_cuda.py, not here.
    n = 4096
    kernel = tilelang.compile(mma_gemm(n, n, n, 128, 128, 32, dtype), target="cuda")
    a, b, c0, _ = operands(n, n, n, dtype, False, False)
    c = torch.empty_like(c0)
    kernel(a, b, c0, c)
    torch.testing.assert_close(
        c[:64, :64], (a[:64].float() @ b[:, :64].float()), rtol=1e-2, atol=1e-2
    )
