"""tests/python/test_minmax_nan.py's kernels on the GPU: T.max / T.min and the row
reductions ignore a NaN operand (PTX max / min: fmaxf, __hmax), nan_propagate=True
gives NaN (max.NaN / min.NaN), bit for bit as the rules' reference, which the cpu
target and the emulator also match."""

import os
import sys

import pytest
import tilelang

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from test_minmax_nan import COLS, DTYPES, ROWS, check, inputs, minmax_kernel


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_min_max_follow_the_gpu_on_the_gpu(dtype):
    kernel = tilelang.compile(minmax_kernel(dtype), target="cuda")
    x, y = inputs(DTYPES[dtype])
    bits = {"float32": torch.int32, "float16": torch.int16, "bfloat16": torch.int16}[dtype]
    tdt = getattr(torch, dtype)

    def to_gpu(a):  # by the bits: torch has no bfloat16 from numpy
        return torch.from_numpy(a.view(f"int{8 * a.itemsize}")).view(tdt).cuda()

    out = torch.zeros((2, ROWS, COLS), dtype=tdt, device="cuda")
    red = torch.zeros((8, ROWS), dtype=tdt, device="cuda")
    kernel(to_gpu(x), to_gpu(y), out, red)

    def to_host(t):
        return t.cpu().view(bits).numpy().view(x.dtype)

    check(to_host(out), to_host(red), x, y)
