"""tests/python/test_minmax_nan.py's kernel on the GPU: T.max / T.min and the row
reductions propagate NaN from either operand (max.NaN.f32 / min.NaN.f32 on sm_80+)."""

import os
import sys

import pytest
import tilelang

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from test_minmax_nan import COLS, ROWS, check, inputs, minmax


def test_min_max_propagate_nan_on_the_gpu():
    kernel = tilelang.compile(minmax, target="cuda")
    x, y = inputs()
    out = torch.zeros((2, ROWS, COLS), device="cuda")
    red = torch.zeros((2, ROWS), device="cuda")
    kernel(torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda(), out, red)
    check(out.cpu().numpy(), red.cpu().numpy(), x, y)
