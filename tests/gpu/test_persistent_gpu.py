"""T.Persistent on the present GPU: a persistent GEMM (one block per SM looping over the
tiles, a warp-specialized TMA pipeline inside the loop) against torch, and one whose
pipeline has a different length for every row of tiles. The same kernels run in the CPU
and emulator tests of tests/python/test_persistent.py."""

import os
import sys

import pytest
import tilelang

torch = pytest.importorskip("torch")
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
)
from test_persistent import persistent_gemm, triangular_gemm


@pytest.mark.parametrize("M, N, K, group", [(1000, 1016, 512, 8), (4096, 4096, 1024, 1)])
def test_persistent_gemm(M, N, K, group):
    workers = torch.cuda.get_device_properties(0).multi_processor_count
    kernel = tilelang.compile(persistent_gemm(M, N, K, 128, 128, 64, workers, group), target="cuda")
    a = torch.randn(M, K, dtype=torch.float16, device="cuda")
    b = torch.randn(K, N, dtype=torch.float16, device="cuda")
    c = torch.zeros(M, N, dtype=torch.float32, device="cuda")
    kernel(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=2e-2)


@pytest.mark.parametrize("stages", [2, 3])  # 64 KB of fp16 tiles a stage
def test_pipelines_of_different_lengths(stages):
    M, N, K, b = 2048, 1024, 2048, 128
    workers = torch.cuda.get_device_properties(0).multi_processor_count
    kernel = tilelang.compile(triangular_gemm(M, N, K, b, b, b, workers, stages), target="cuda")
    assert "tl::setmaxnreg_dec<24>()" in kernel.get_kernel_source()
    a = torch.randn(M, K, dtype=torch.float16, device="cuda")
    bm = torch.randn(K, N, dtype=torch.float16, device="cuda")
    c = torch.zeros(M, N, dtype=torch.float32, device="cuda")
    kernel(a, bm, c)
    mask = torch.kron(torch.ones(M // b, K // b).tril(), torch.ones(b, b)).to("cuda")
    torch.testing.assert_close(c, (a.float() * mask) @ bm.float(), rtol=1e-3, atol=5e-2)
