"""Vector atomic adds on a real GPU (red.global.add.v4.f32 / .noftz.f16x2 /
.noftz.bf16x2 on sm_90): region atomics of register fragments and of shared tiles,
per-element atomics in T.Parallel loops, T.atomic_addx2 / x4 at aligned and unaligned
addresses (the device function's run-time check), the kernels of
tests/python/test_cuda_vectorize.py and test_atomic_runs.py against the same exact
expectations."""

import pathlib
import sys

import pytest
import tilelang

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))
from test_atomic_runs import addx, fragment_atomic, parallel_atomic, region_atomic, splitk_gemm
from test_cuda_vectorize import fragment_atomic_add


@pytest.mark.parametrize("dtype, width", [("float32", 4), ("float16", 2), ("bfloat16", 2)])
def test_region_atomic_adds_in_vectors_on_the_gpu(dtype, width):
    M, N = 100, 128
    kernel = tilelang.compile(fragment_atomic_add(M, N, dtype), target="cuda")
    assert f"tl::AtomicAddx{width}(" in kernel.get_kernel_source()
    t = getattr(torch, dtype)
    a = torch.randint(-8, 9, (M, N), device="cuda").to(t)
    c = torch.zeros(M, N, device="cuda", dtype=t)
    kernel(a, c)
    torch.testing.assert_close(c, 6 * a, rtol=0, atol=0)


def ints(shape, t, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randint(-8, 9, shape, generator=g).to(t).cuda()


@pytest.mark.parametrize(
    "dtype, acc",
    [
        ("float32", "float32"),
        ("float16", "float16"),
        ("bfloat16", "bfloat16"),
        ("float16", "float32"),
    ],
)
@pytest.mark.parametrize("M, N", [(128, 128), (100, 70)])
def test_shared_tiles_are_added_by_every_thread(dtype, acc, M, N):
    K = 3
    kernel = tilelang.compile(region_atomic(M, N, 64, 64, K, dtype, acc), target="cuda")
    a = ints((K, M, N), getattr(torch, dtype), 1)
    c = ints((M, N), getattr(torch, acc), 2)
    expect = c.float() + a.float().sum(0)
    kernel(a, c)
    torch.testing.assert_close(c.float(), expect, rtol=0, atol=0)


def test_per_element_atomics_in_a_parallel_loop():
    K, M, N = 4, 64, 64
    kernel = tilelang.compile(parallel_atomic(K, M, N, 32, 32), target="cuda")
    a, b = ints((K, M, N), torch.float32, 3), ints((M, N), torch.float32, 4)
    expect = b + a.sum(0)
    kernel(a, b)
    torch.testing.assert_close(b, expect, rtol=0, atol=0)


@pytest.mark.parametrize(
    "src, dst", [("float16", "float32"), ("float16", "float16"), ("bfloat16", "bfloat16")]
)
def test_per_element_atomics_of_a_fragment(src, dst):
    kernel = tilelang.compile(fragment_atomic(8, src, dst), target="cuda")
    a = torch.arange(1, 9, dtype=getattr(torch, src), device="cuda")
    out = torch.full((8,), 3, dtype=getattr(torch, dst), device="cuda")
    kernel(a, out)
    torch.testing.assert_close(
        out.float(), 3 + torch.arange(1, 9, device="cuda").float(), rtol=0, atol=0
    )


@pytest.mark.parametrize("M", [128, 100])
def test_split_k_partials(M):
    N, K = 64, 128
    kernel = tilelang.compile(splitk_gemm(M, N, K, 64, 64, 32, 2), target="cuda")
    a, b = ints((M, K), torch.float16, 5), ints((K, N), torch.float16, 6)
    c = torch.zeros(M, N, device="cuda")
    kernel(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("width", [2, 4])
@pytest.mark.parametrize("offset", [0, 1, 4])
def test_atomic_addx_at_any_offset(dtype, width, offset):
    kernel = tilelang.compile(addx(width, offset, dtype, 3), target="cuda")
    t = getattr(torch, dtype)
    a = torch.zeros(16, dtype=t, device="cuda")
    a[offset : offset + width] = torch.arange(1, width + 1, device="cuda").to(t)
    b = torch.full((16,), 10, dtype=t, device="cuda")
    expect = b.float() + 3 * a.float()
    kernel(a, b)
    torch.testing.assert_close(b.float(), expect, rtol=0, atol=0)
