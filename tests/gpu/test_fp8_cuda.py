"""fp8 on the GPU: the conversions of device/cuda/tl_cuda.cuh as the GPU runs them
(on sm_89 and later the hardware cvt.rn.satfinite for e4m3fn / e5m2) against the
emulator's reference bit for bit (ml_dtypes, saturating for e4m3fn / e5m2 as the
hardware does), over every code and the probing floats that the emulator's test of the
same header uses (tests/python/test_emulator.py)."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))

import tilelang
from test_emulator import FP8, check_fp8_conversions, fp8_conversions
from test_examples_on_cuda import to_cuda, to_numpy

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", FP8)
def test_fp8_conversions_on_the_gpu_are_bit_exact(name):
    def run(x, codes):
        kernel = tilelang.compile(fp8_conversions(name, x.size), target="cuda")
        q = torch.empty(x.size, dtype=getattr(torch, name), device="cuda")
        f = torch.empty(256, dtype=torch.float32, device="cuda")
        kernel(to_cuda(x), to_cuda(codes), q, f)
        return to_numpy(q), to_numpy(f)

    check_fp8_conversions(name, run)
