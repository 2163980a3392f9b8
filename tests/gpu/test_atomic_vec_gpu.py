"""Vector atomic adds of register fragments on a real GPU (red.global.add.v4.f32 /
.noftz.f16x2 on sm_90), the kernels of tests/python/test_cuda_vectorize.py against
the same exact expectation."""

import pathlib
import sys

import pytest
import tilelang

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))
from test_cuda_vectorize import fragment_atomic_add


@pytest.mark.parametrize("dtype, width", [("float32", 4), ("float16", 2), ("bfloat16", 2)])
def test_region_atomic_adds_in_vectors_on_the_gpu(dtype, width):
    M, N = 100, 128
    kernel = tilelang.compile(fragment_atomic_add(M, N, dtype), target="cuda")
    assert f"tl::atomic_add_vec<{width}, 0>" in kernel.get_kernel_source()
    t = getattr(torch, dtype)
    a = torch.randint(-8, 9, (M, N), device="cuda").to(t)
    c = torch.zeros(M, N, device="cuda", dtype=t)
    kernel(a, c)
    torch.testing.assert_close(c, 6 * a, rtol=0, atol=0)
