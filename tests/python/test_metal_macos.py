"""Metal kernels on an Apple GPU through the "torch" execution backend
(torch.mps.compile_shader), against torch's own results. Skipped where there is no
MPS device (every machine but a Mac with torch); ready to run on Apple silicon."""

import platform
import sys

import numpy as np
import pytest
import tilelang
from metal_kernels import axpb, gemm, histogram, row_reduce

torch = pytest.importorskip("torch") if platform.system() == "Darwin" else None
pytestmark = pytest.mark.skipif(
    torch is None or not torch.backends.mps.is_available(),
    reason="needs macOS on Apple silicon with a torch build that has MPS",
)


@pytest.mark.parametrize("target", ["metal", "metal -keys=metal4"])
@pytest.mark.parametrize(
    "dtype", [torch.float16 if torch else None, torch.bfloat16 if torch else None]
)
@pytest.mark.parametrize("policy", [0, 1, 2])
def test_gemm_on_mps(target, dtype, policy):
    name = {torch.float16: "float16", torch.bfloat16: "bfloat16"}[dtype]
    M, N, K = 200, 136, 96
    kernel = tilelang.compile(gemm(M, N, K, dtype=name, policy=policy), out_idx=[2], target=target)
    assert kernel.execution_backend == "torch"
    a = torch.randn(M, K, dtype=dtype, device="mps")
    b = torch.randn(K, N, dtype=dtype, device="mps")
    c = kernel(a, b)
    torch.mps.synchronize()
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-2, atol=1e-2)


def test_gemm_epilogue_and_fp16_output_on_mps():
    kernel = tilelang.compile(
        gemm(130, 70, 64, epilogue=True, out_dtype="float16"), out_idx=[2], target="metal"
    )
    a = torch.randn(130, 64, dtype=torch.float16, device="mps")
    b = torch.randn(64, 70, dtype=torch.float16, device="mps")
    c = kernel(a, b)
    ref = (torch.relu(a.float() @ b.float()) * 0.5 + 1).half()
    torch.testing.assert_close(c, ref, rtol=1e-2, atol=1e-2)


def test_scalars_and_dynamic_shapes_on_mps():
    kernel = tilelang.compile(axpb(), out_idx=[1], target="metal")
    for n in (1000, 37):
        x = torch.randn(n, dtype=torch.float16, device="mps")
        y = kernel(x, 1.5, -3)
        torch.testing.assert_close(y, x.float() * 1.5 - 3)


def test_reductions_and_atomics_on_mps():
    x = torch.randn(43, 200, device="mps")
    out = tilelang.compile(row_reduce(43, 200, "max", shared=True), out_idx=[1], target="metal")(x)
    torch.testing.assert_close(out, x.max(dim=1).values)
    vals = torch.randint(0, 100, (1000,), dtype=torch.int32, device="mps")
    hist = torch.zeros(7, dtype=torch.int32, device="mps")
    total = torch.zeros(1, device="mps")
    peak = torch.full((1,), -1e9, device="mps")
    tilelang.compile(histogram(1000, 7), target="metal")(vals, hist, total, peak)
    torch.testing.assert_close(hist.cpu(), torch.bincount(vals.cpu() % 7, minlength=7).int())
    assert total.item() == pytest.approx(vals.sum().item() * 0.5)
    assert peak.item() == pytest.approx(vals.max().item() * 0.25)


def test_flash_attention_on_mps():
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[2] / "examples"))
    from flash_attention import flash_attention, reference

    q, k, v = (torch.randn(1, 120, 2, 64, dtype=torch.float16, device="mps") for _ in range(3))
    out = flash_attention(1, 2, 120, 64, True, threads=64)(q, k, v)
    ref = reference(*(t.cpu().numpy() for t in (q, k, v)), True)
    np.testing.assert_allclose(out.cpu().numpy().astype(np.float64), ref, rtol=1e-2, atol=1e-2)


def test_metal4_detection():
    # "metal" alone takes the metal4 key exactly on macOS 26+ with an M5 or later;
    # an explicit (empty) key list is kept as given.
    assert tilelang.compile(axpb(), target="metal").kernel.target in ("metal", "metal -keys=metal4")
    assert tilelang.compile(axpb(), target="metal -keys=").kernel.target == "metal"
