"""The wgmma input types beyond float16 / bfloat16 on an H100/H200: the T.gemm kernels of
tests/python/test_wgmma_types.py (fp8 e4m3 / e5m2 in every mix and tf32 into float32,
int8 / uint8 into int32, pipelined) compiled for "cuda -arch=sm_90a" and run on the GPU
against numpy, the tf32 truncation and exact int32 checks, the configs of
bench/fp8_gemm_cuda.py at 1024^3, and the cubins' SASS holding GMMA instructions and no
mma.sync ones (checked where cuobjdump is found). Skipped without a GPU of compute
capability 9.0."""

import pathlib
import re
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))
sys.path.insert(0, str(pathlib.Path(__file__).parents[2] / "examples"))

torch = pytest.importorskip("torch")

import tilelang
from test_wgmma_gemm import tma_fed
from test_wgmma_gpu import nvrtc_cubin, sass
from test_wgmma_types import CASES, check, flags, operands, typed_gemm

TARGET = "cuda -arch=sm_90a"
TORCH = {"float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}


pytestmark = pytest.mark.usefixtures("hopper")  # tests/gpu/conftest.py


def to_gpu(x):
    """A numpy array (ml_dtypes fp8 included) as a CUDA tensor of the same type."""
    if x.dtype.name in TORCH:
        return torch.from_numpy(x.view(np.uint8)).view(TORCH[x.dtype.name]).cuda()
    return torch.from_numpy(np.ascontiguousarray(x)).cuda()


def run_on_gpu(kernel, a, b, c0):
    c = torch.zeros(c0.shape, dtype=getattr(torch, str(c0.dtype)), device="cuda")
    kernel(to_gpu(a), to_gpu(b), to_gpu(c0), c)
    torch.cuda.synchronize()
    return c.cpu().numpy()


def assert_gmma_only(source, tmp_path):
    """The cubin runs warpgroup GMMA instructions and no warp-level mma.sync (HMMA,
    IMMA, QMMA) ones; skipped where cuobjdump is not found."""
    text = sass(nvrtc_cubin(source, "kernel.cu"), tmp_path)
    if text is None:
        return
    assert "GMMA" in text, "no GMMA instruction in the SASS"
    assert not re.search(r"\b[HIQ]MMA\.", text), "mma.sync instructions in the SASS"


# The hardware adds float products with its own internal precision (fp8: about 13-14
# mantissa bits per wgmma, see the arxiv "Accurate Models of NVIDIA Tensor Cores" and
# DeepSeek-V3's report), so the float checks allow more than the emulator's 2^-18 of
# sum |a * b| + |c0|; integers stay exact.
GPU_REL = {"float8_e4m3fn": 2.0**-8, "float8_e5m2": 2.0**-8, "float32": 2.0**-12}


@pytest.mark.parametrize("name", sorted(CASES))
def test_typed_wgmma_gemm_matches_numpy(name, tmp_path):
    (M, N, K, bM, bN, bK, a_dt, b_dt, _, _), (wgm, wgn) = CASES[name]
    kernel = tilelang.compile(typed_gemm(*CASES[name][0]), target=TARGET)
    source = kernel.get_kernel_source()
    # In flight (Pending = 1); with both tiles through TMA, no proxy fence (Fence = false).
    tail = f"{flags(False, True)}, 1, false>" if tma_fed(source) else f"{flags(False, True)}, 1>"
    assert f"tl::wgmma_gemm_ss<{bM}, {bN}, {bK}, {wgm}, {wgn}, {tail}" in source
    a, b, c0, ref, scale = operands(M, N, K, a_dt, b_dt)
    check(run_on_gpu(kernel, a, b, c0), ref, scale, rel=GPU_REL.get(a_dt, 0.0))
    assert_gmma_only(source, tmp_path)


def test_tf32_operands_are_truncated_to_10_mantissa_bits():
    """As in the emulator: 1 + 3/4 * 2^-10 is read as 1.0 (the low 13 bits dropped);
    rounding to nearest would give 1 + 2^-10. The sums are small integers, exact at any
    accumulator precision."""
    M, N, K = 64, 64, 64
    kernel = tilelang.compile(
        typed_gemm(M, N, K, 64, 64, 32, "float32", "float32", 128, 2), target=TARGET
    )
    a = np.full((M, K), 1 + 0.75 * 2.0**-10, np.float32)
    a[1::2] = -(1 + 0.75 * 2.0**-10)
    b = np.ones((N, K), np.float32)
    c = run_on_gpu(kernel, a, b, np.zeros((M, N), np.float32))
    expect = np.where(np.arange(M)[:, None] % 2 == 0, K, -K).astype(np.float32) * np.ones((1, N))
    rounded = expect * np.float32(1 + 2.0**-10)
    assert not np.array_equal(c, rounded), "the GPU rounds tf32 operands to nearest, not truncates"
    np.testing.assert_array_equal(c, expect)


def test_int8_accumulates_exactly_past_float_precision():
    M, N, K = 64, 64, 1024
    kernel = tilelang.compile(
        typed_gemm(M, N, K, 64, 64, 128, "int8", "int8", 128, 2), target=TARGET
    )
    a = np.full((M, K), -128, np.int8)
    b = np.full((N, K), -127, np.int8)
    c0 = np.full((M, N), 2**24 + 1, np.int32)
    c = run_on_gpu(kernel, a, b, c0)
    np.testing.assert_array_equal(c, np.full((M, N), 2**24 + 1 + 128 * 127 * K, np.int32))


BENCH_CONFIGS = [
    (128, 128, 128, 128, 3, 8),
    (128, 128, 128, 256, 4, 8),
    (128, 256, 128, 256, 3, 8),
    (128, 256, 128, 256, 4, 8),
]


@pytest.mark.parametrize("cfg", BENCH_CONFIGS, ids=lambda c: "x".join(map(str, c)))
def test_fp8_example_configs_of_the_benchmark(cfg, tmp_path):
    """examples/fp8_gemm.py with bench/fp8_gemm_cuda.py's configs at 1024^3 (a tail in
    N), bfloat16 out, against the float64 product of the same fp8 values."""
    from fp8_gemm import fp8_scaled_mm

    M, N, K = 1024, 1000, 1024
    bM, bN, bK, threads, stages, panel = cfg
    kernel = fp8_scaled_mm(
        M,
        N,
        K,
        out_dtype="bfloat16",
        block_M=bM,
        block_N=bN,
        block_K=bK,
        num_stages=stages,
        threads=threads,
        panel=panel,
    )
    assert "tl::wgmma_gemm_ss<" in kernel.get_kernel_source()
    a = (torch.randn(M, K, device="cuda") * 2).to(torch.float8_e4m3fn)
    b = (torch.randn(N, K, device="cuda") * 2).to(torch.float8_e4m3fn)
    scale = torch.tensor([0.5], device="cuda")
    c = kernel(a, b, scale, scale).double()
    af, bf = a.double(), b.double()
    ref, mag = (af @ bf.T) * 0.25, (af.abs() @ bf.abs().T) * 0.25
    err = (c - ref).abs()
    assert bool((err <= 2.0**-7 * mag + 2.0**-8 * ref.abs()).all()), (
        f"max err {err.max().item():.3g}"
    )
    assert_gmma_only(kernel.get_kernel_source(), tmp_path)
