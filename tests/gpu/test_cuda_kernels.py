"""The cuda target on a real GPU: the CPU tests' kernels run on torch CUDA tensors
and match torch."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))

import tilelang
import tilelang.language as T
from test_atomic import split_k_gemm
from test_cpu_kernels import gemm_factory
from test_threads import mixed_tile_ops_and_threads, neighbour_sum

torch = pytest.importorskip("torch")


def test_gemm_with_tails_matches_torch():
    kernel = tilelang.compile(gemm_factory(200, 130, 70, 64, 64, 32), out_idx=[-1], target="cuda")
    a = torch.randn(200, 70, device="cuda", dtype=torch.float16)
    b = torch.randn(70, 130, device="cuda", dtype=torch.float16)
    c = kernel(a, b)
    assert c.is_cuda and c.dtype == torch.float32
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-2, atol=1e-2)


def test_gemm_transposed_relu_matches_torch():
    kernel = tilelang.compile(
        gemm_factory(256, 192, 96, 64, 64, 32, trans_b=True, relu=True), out_idx=[-1], target="cuda"
    )
    a = torch.randn(256, 96, device="cuda", dtype=torch.float16)
    b = torch.randn(192, 96, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(
        kernel(a, b), torch.relu(a.float() @ b.float().T), rtol=1e-2, atol=1e-2
    )


def test_thread_indices_and_barriers():
    kernel = tilelang.compile(neighbour_sum(200), out_idx=[-1], target="cuda")
    a = torch.randn(200, device="cuda")
    out = kernel(a)
    padded = torch.zeros(256, device="cuda")
    padded[:200] = a * 2
    blocks = padded.view(-1, 64)
    ref = (torch.roll(blocks, -1, dims=1) + blocks).reshape(-1)[:200]
    torch.testing.assert_close(out, ref)


def test_block_wide_ops_between_per_thread_code():
    kernel = tilelang.compile(mixed_tile_ops_and_threads(20, 16), out_idx=[-1], target="cuda")
    a = torch.randn(20, 16, device="cuda")
    scale = (torch.arange(20, device="cuda") % 8 + 1)[:, None]
    torch.testing.assert_close(kernel(a), a * scale + 1)


def test_dynamic_rows_one_kernel():
    m = T.dynamic("m")

    @T.prim_func
    def scale_rows(A: T.Tensor((m, 64), "float32"), B: T.Tensor((m, 64), "float32"), s: T.float32):
        with T.Kernel(T.ceildiv(m, 32), threads=128) as bx:
            for i, j in T.Parallel(32, 64):
                B[bx * 32 + i, j] = A[bx * 32 + i, j] * s

    kernel = tilelang.compile(scale_rows, target="cuda")
    for rows in (1, 33, 100):
        a = torch.randn(rows, 64, device="cuda")
        b = torch.empty_like(a)
        kernel(a, b, 2.5)
        torch.testing.assert_close(b, a * 2.5)


def test_cpu_tensor_is_refused_with_a_clear_error():
    kernel = tilelang.compile(gemm_factory(64, 64, 32, 64, 64, 32), out_idx=[-1], target="cuda")
    with pytest.raises(tilelang.TileLangError, match=r"is on cpu, expected a cuda tensor"):
        kernel(torch.randn(64, 32).half(), torch.randn(32, 64).half())


def test_split_k_atomics_on_the_gpu():
    M, N, K = 50, 40, 200
    kernel = tilelang.compile(split_k_gemm(M, N, K), target="cuda")
    a = torch.randn(M, K, device="cuda")
    b = torch.randn(K, N, device="cuda")
    c = torch.randn(M, N, device="cuda")
    want = c + a @ b
    kernel(a, b, c)
    torch.testing.assert_close(c, want, rtol=1e-4, atol=1e-4)
