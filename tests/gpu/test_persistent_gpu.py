"""T.Persistent on the present GPU: a persistent GEMM (one block per SM looping over the
tiles, a TMA pipeline inside the loop) against torch. The same kernel runs in the CPU
and emulator tests of tests/python/test_persistent.py."""

import os
import sys

import pytest
import tilelang

torch = pytest.importorskip("torch")
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
)
from test_persistent import persistent_gemm


@pytest.mark.parametrize("M, N, K, group", [(1000, 1016, 512, 8), (4096, 4096, 1024, 1)])
def test_persistent_gemm(M, N, K, group):
    workers = torch.cuda.get_device_properties(0).multi_processor_count
    kernel = tilelang.compile(persistent_gemm(M, N, K, 128, 128, 64, workers, group), target="cuda")
    a = torch.randn(M, K, dtype=torch.float16, device="cuda")
    b = torch.randn(K, N, dtype=torch.float16, device="cuda")
    c = torch.zeros(M, N, dtype=torch.float32, device="cuda")
    kernel(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=2e-2)
