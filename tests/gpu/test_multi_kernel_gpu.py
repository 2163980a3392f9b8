"""Several T.Kernel blocks in one prim_func on a real GPU: both kernels of the
split-K GEMM (partials, then their sum) and the producer/consumer pair launch in
order on torch's current stream, on sm_80 code and on the present GPU's arch
(TMA maps for the first kernel only on sm_90), checked against torch in float64."""

import os
import sys

import pytest
import tilelang

torch = pytest.importorskip("torch")
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
)
from test_multi_kernel import producer_consumer, split_k_gemm


def arch_targets():
    if not torch.cuda.is_available():  # collected, then skipped by conftest.py
        return ["cuda -arch=sm_80"]
    major, minor = torch.cuda.get_device_capability()
    native = f"cuda -arch=sm_{major}{minor}{'a' if major >= 9 else ''}"
    return sorted({"cuda -arch=sm_80", native})


@pytest.mark.parametrize("target", arch_targets())
def test_split_k_gemm_on_the_gpu(target):
    M, N, K, split = 256, 384, 1024, 4
    kernel = tilelang.compile(
        split_k_gemm(M, N, K, split, 64, 64, 32), out_idx=[2, 3], target=target
    )
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    partials, c = kernel(a, b)
    s = K // split
    a64, b64 = a.double(), b.double()
    want = torch.stack(
        [a64[:, i * s : (i + 1) * s] @ b64[i * s : (i + 1) * s] for i in range(split)]
    )
    torch.testing.assert_close(partials.double(), want, rtol=1e-3, atol=1e-2)
    torch.testing.assert_close(c.double(), a64 @ b64, rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("target", arch_targets())
def test_producer_consumer_on_a_side_stream(target):
    kernel = tilelang.compile(producer_consumer(), out_idx=[2], target=target)
    stream = torch.cuda.Stream()
    for n in (1 << 20, 1001):
        x = torch.randn(n, device="cuda")
        y = torch.full((n,), float("nan"), device="cuda")
        stream.wait_stream(torch.cuda.current_stream())  # x and y are made on the default stream
        with torch.cuda.stream(stream):
            z = kernel(x, y)
        stream.synchronize()
        want_y = x.double() * 3.0 + 1.0
        torch.testing.assert_close(y.double(), want_y, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(z.double(), want_y.flip(0) - want_y, rtol=1e-5, atol=1e-5)
