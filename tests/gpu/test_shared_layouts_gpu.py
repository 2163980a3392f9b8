"""Annotated shared swizzles on the GPU (tests/python/test_shared_layouts.py runs the
same kernels in the emulators): TMA loads and stores in the 128 and 64-byte modes, and
cp.async for a swizzle TMA has no mode for, against torch."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))

import tilelang
from test_shared_layouts import LAYOUTS, scaled_through_tile, transpose_through_tile

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("bn", [64, 32])  # 128 and 64-byte rows
@pytest.mark.parametrize("name", ["swizzled", "half_bank", "xor_lambda", "rotated"])
def test_transpose_through_annotated_tiles(name, bn):
    M, N = 1024, 2048
    kernel = tilelang.compile(transpose_through_tile(M, N, 64, bn, LAYOUTS[name]), target="cuda")
    a = torch.randn(M, N, device="cuda", dtype=torch.float16)
    b = torch.zeros(N, M, device="cuda", dtype=torch.float16)
    for _ in range(3):  # repeated, so a race between the pipeline's versions would show
        b.zero_()
        kernel(a, b)
        torch.cuda.synchronize()
        assert torch.equal(b, a.T)


def test_store_of_an_annotated_tile():
    M, N = 1024, 1536
    kernel = tilelang.compile(scaled_through_tile(M, N, 64, 64), target="cuda")
    a = torch.randn(M, N, device="cuda", dtype=torch.float16)
    b = torch.zeros_like(a)
    kernel(a, b)
    torch.cuda.synchronize()
    assert torch.equal(b, a * 2)
