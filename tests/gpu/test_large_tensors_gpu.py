"""Tensors past 2^31 elements on the GPU (docs/design/reliability.md, "64-bit indexing"):
the kernels of tests/python/test_large_tensors.py (elementwise with a static and an
int64 dynamic shape, a tile copy through shared memory) on a torch CUDA tensor of
2^31 + 4099 int8 elements, and a pipelined 2-D copy of 2^31 + 8192 float16 elements
(TMA where the target has it: its row coordinates fit 32 bits, the element offsets
do not), each element checked against torch on the same device."""

import os
import sys

import pytest
import tilelang
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from test_large_tensors import (
    N,
    elementwise_dynamic,
    elementwise_static,
    staged_copy,
    tile_copy,
)


@pytest.fixture(scope="module")
def big():
    g = torch.Generator(device="cuda").manual_seed(7)
    a = torch.randint(-128, 128, (N,), dtype=torch.int8, device="cuda", generator=g)
    return a


@pytest.mark.parametrize(
    "make",
    [lambda: elementwise_static(N), elementwise_dynamic, lambda: tile_copy(N)],
    ids=["static", "dynamic_int64", "tile_copy"],
)
def test_increment_past_2_31(big, make):
    want = big + 1  # int8 wraps as the kernel does
    kernel = tilelang.compile(make(), target="cuda")
    kernel(big)
    torch.cuda.synchronize()
    assert torch.equal(big, want)
    del want


def test_staged_copy_past_2_31_elements():
    m = 2**25 + 128  # rows of 64: 2^31 + 8192 elements
    a = torch.randn(m, 64, dtype=torch.float16, device="cuda")
    b = torch.empty_like(a)
    tilelang.compile(staged_copy(m), target="cuda")(a, b)
    torch.cuda.synchronize()
    assert torch.equal(a, b)
