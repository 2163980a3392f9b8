"""The sm_75 (Turing) target on a real GPU: kernels built for sm_75 run on a newer card
through their PTX (compute_75, which the driver compiles for the card), so the
m16n8k8 tensor-core gemms, the dot-product gemms of the other types, the pipelines
without cp.async and T.ptx_cp_async's load-and-store are checked on hardware, exact
against numpy on small integers."""

import pathlib
import sys

import numpy as np
import pytest
import tilelang

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))
from sm75_kernels import SM75, atomic_add_bf16, cp_async_copy, gemm, pipelined_gemm, small_integers

TORCH = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
    "int8": torch.int8,
    "int32": torch.int32,
}


def on_gpu(x, dtype):
    return torch.from_numpy(np.asarray(x, np.float64)).to(TORCH[dtype]).cuda()


@pytest.mark.parametrize(
    "in_dtype, acc_dtype, shape",
    [
        ("float16", "float32", (64, 64, 32)),
        ("bfloat16", "float32", (64, 64, 32)),
        ("float32", "float32", (64, 64, 32)),
        ("float64", "float64", (32, 32, 32)),
        ("float16", "float16", (64, 64, 32)),
        ("int8", "int32", (64, 64, 32)),
    ],
)
def test_gemms(in_dtype, acc_dtype, shape):
    m, n, k = shape
    kernel = tilelang.compile(gemm(m, n, k, in_dtype, acc_dtype), target=SM75, out_idx=[2])
    a, b = small_integers((m, k), in_dtype, 11), small_integers((k, n), in_dtype, 12)
    c = kernel(on_gpu(a, in_dtype), on_gpu(b, in_dtype))
    np.testing.assert_array_equal(
        c.double().cpu().numpy(), a.astype(np.float64) @ b.astype(np.float64)
    )


def test_pipelined_gemm():
    kernel = tilelang.compile(pipelined_gemm(256, 256, 512), target=SM75, out_idx=[2])
    a, b = small_integers((256, 512), "float16", 13), small_integers((512, 256), "float16", 14)
    c = kernel(on_gpu(a, "float16"), on_gpu(b, "float16"))
    np.testing.assert_array_equal(
        c.double().cpu().numpy(), a.astype(np.float64) @ b.astype(np.float64)
    )


def test_cp_async_copy():
    kernel = tilelang.compile(cp_async_copy(), target=SM75, out_idx=[1])
    x = torch.arange(256, dtype=torch.float32, device="cuda")
    torch.testing.assert_close(kernel(x), torch.roll(x, -4), rtol=0, atol=0)


def test_bfloat16_atomic_add():
    kernel = tilelang.compile(atomic_add_bf16(), target=SM75)
    x = torch.ones(256, dtype=torch.bfloat16, device="cuda")
    y = torch.zeros(32, dtype=torch.bfloat16, device="cuda")
    kernel(x, y)
    torch.testing.assert_close(
        y, torch.full((32,), 8.0, dtype=torch.bfloat16, device="cuda"), rtol=0, atol=0
    )
