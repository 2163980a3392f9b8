"""tests/python/test_wide_access.py's copies on the GPU: T.ldg* / T.stg* / T.lds* /
T.sts* as one vector access each, with and without predicates, and T.__ldg."""

import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import tilelang
import tilelang.language as T
from test_wide_access import COPY_CASES, N, copy_kernel, rand_f32


@pytest.mark.parametrize("bits, mode", COPY_CASES)
def test_wide_copy_on_the_gpu(bits, mode):
    func, live = copy_kernel(bits, mode == "pred", mode == "shared")
    kernel = tilelang.compile(func, target="cuda")
    x = rand_f32(bits)
    y = torch.full((N,), 7.0, device="cuda")
    kernel(torch.from_numpy(x).cuda(), y)
    w = bits // 32
    ref = x.copy()
    if mode == "pred":
        ref[live * w :] = 7.0
        ref[live * w : (live + 1) * w] = 0.0
    np.testing.assert_array_equal(y.cpu().numpy(), ref)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_readonly_load_on_the_gpu(dtype):
    @T.prim_func
    def readonly(x: T.Tensor((N,), dtype), y: T.Tensor((N,), dtype)):
        with T.Kernel(N // 32, threads=32) as b:
            t = T.get_thread_binding()
            y[b * 32 + t] = T.__ldg(x[b * 32 + t])

    kernel = tilelang.compile(readonly, target="cuda")
    x = torch.randn(N, device="cuda").to(getattr(torch, dtype))
    y = torch.zeros_like(x)
    kernel(x, y)
    assert torch.equal(x, y)
