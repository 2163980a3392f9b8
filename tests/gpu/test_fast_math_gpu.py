"""tl.enable_fast_math on the present GPU: the approximate exp and log stay within
1e-4 of torch's float64 results on ordinary inputs."""

import os
import sys

import pytest
import tilelang

torch = pytest.importorskip("torch")
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
)
from test_fast_math import exp_log

pytestmark = pytest.mark.usefixtures("hopper")  # tests/gpu/conftest.py


def test_fast_exp_and_log_match_torch():
    kernel = tilelang.compile(exp_log, target="cuda", pass_configs={"tl.enable_fast_math": True})
    a = torch.rand(1024, device="cuda") * 8 + 0.01
    b = torch.empty_like(a)
    kernel(a, b)
    torch.cuda.synchronize()
    ref = torch.exp(a.double()) + torch.log(a.double())
    torch.testing.assert_close(b.double(), ref, rtol=1e-4, atol=1e-5)
