"""T.gemm_sp on the GPU against torch: TileLang's sparse-gemm kernel shape
(tests/python/test_gemm_sp.py's sparse_gemm, which the cpu and the emulators run against
numpy), fed by tilelang.utils.sparse's torch path (compress on the device), for sm_80
code and sm_90a code (TMA copies; mma.sp as on sm_80 under tl.gemm_sp_wgmma=False, and
wgmma.mma_async.sp, sm_90a's default, on an sm_90 GPU; int8 on mma.sp m16n8k64); torch's
own semi-structured tensor's metadata read through make_cutlass_metadata_layout."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))

import tilelang
from test_gemm_sp import sparse_gemm
from tilelang.utils.sparse import compress, decompress, randint_semi_sparse, randn_semi_sparse

torch = pytest.importorskip("torch")

CASES = [
    # M, N, K, tiles, dtype, meta, trans_A, trans_B
    (512, 1024, 768, (128, 128, 64), "float16", "int16", False, False),
    (512, 1024, 768, (128, 128, 64), "float16", "int16", False, True),
    (512, 512, 512, (128, 128, 64), "bfloat16", "uint8", False, False),
    (256, 256, 512, (64, 128, 64), "float16", "int16", True, False),
    (300, 200, 256, (128, 64, 64), "bfloat16", "int16", False, True),  # tails
]
# wgmma.sp only: a K-major B of a wgmma width, one m64n96k32 / m64n160k32 a k-step
# (the 64 x 160 tile has no mma.sp split over 4 warps)
WIDE = [
    (256, 384, 512, (64, 96, 64), "float16", "int16", False, True),
    (192, 480, 256, (64, 160, 64), "bfloat16", "int16", False, True),
]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_gemm_sp_matches_torch(arch, case):
    M, N, K, (bM, bN, bK), dtype, meta, trans_A, trans_B = CASES[case]
    t = getattr(torch, dtype)
    a = randn_semi_sparse(M, K, dtype=t, device="cuda", transposed=trans_A)
    b = torch.randn((N, K) if trans_B else (K, N), device="cuda").to(t)
    a_sparse, e = compress(a, transposed=trans_A, meta_dtype=meta)
    assert a_sparse.is_cuda and e.is_cuda
    assert torch.equal(decompress(a_sparse, e, transposed=trans_A), a)
    func = sparse_gemm(M, N, K, bM, bN, bK, dtype, meta, trans_A, trans_B, stages=3)
    kernel = tilelang.compile(
        func, out_idx=[3], target=f"cuda -arch={arch}", pass_configs={"tl.gemm_sp_wgmma": False}
    )
    assert "tl::gemm_sp_ss<" in kernel.get_kernel_source()  # mma.sp on both
    got = kernel(a_sparse, e, b)
    ref = (a.T if trans_A else a).float() @ (b.T if trans_B else b).float()
    torch.testing.assert_close(got, ref, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("case", range(len(CASES + WIDE)))
def test_gemm_sp_wgmma_matches_torch(case):
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma.mma_async.sp needs an sm_90 GPU")
    M, N, K, (bM, bN, bK), dtype, meta, trans_A, trans_B = (CASES + WIDE)[case]
    t = getattr(torch, dtype)
    a = randn_semi_sparse(M, K, dtype=t, device="cuda", transposed=trans_A)
    b = torch.randn((N, K) if trans_B else (K, N), device="cuda").to(t)
    a_sparse, e = compress(a, transposed=trans_A, meta_dtype=meta)
    func = sparse_gemm(M, N, K, bM, bN, bK, dtype, meta, trans_A, trans_B, stages=3)
    kernel = tilelang.compile(func, out_idx=[3], target="cuda -arch=sm_90a")  # the default
    assert "tl::wgmma_gemm_sp_ss<" in kernel.get_kernel_source()
    got = kernel(a_sparse, e, b)
    ref = (a.T if trans_A else a).float() @ (b.T if trans_B else b).float()
    torch.testing.assert_close(got, ref, rtol=1e-2, atol=1e-2)


def test_gemm_sp_int8_matches_torch():
    a = randint_semi_sparse(256, 256, -4, 5, dtype=torch.int8, device="cuda")
    b = torch.randint(-4, 5, (256, 128), device="cuda", dtype=torch.int8)
    a_sparse, e = compress(a, meta_dtype="int32")
    func = sparse_gemm(256, 128, 256, 128, 128, 64, "int8", "int32", accum="int32")
    kernel = tilelang.compile(func, out_idx=[3], target="cuda")
    assert "tl::gemm_sp_ss<" in kernel.get_kernel_source()  # mma.sp m16n8k64
    got = kernel(a_sparse, e, b)
    assert torch.equal(got.cpu(), (a.cpu().long() @ b.cpu().long()).int())


@pytest.mark.parametrize("configs", [{"tl.gemm_sp_wgmma": False}, {}])
def test_torch_semi_structured_tensor_drives_the_annotated_kernel(configs):
    """torch's own semi-structured tensor (CUTLASS backend) on the GPU: its kept values
    and metadata go to a kernel whose E is annotated with make_cutlass_metadata_layout
    for arch 8.0 as they are, and compress(..., metadata_layout="cutlass") equals them."""
    if not configs and torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma.mma_async.sp needs an sm_90 GPU")
    M, N, K = 512, 256, 768
    a = randn_semi_sparse(M, K, dtype=torch.float16, device="cuda")
    b = torch.randn((K, N), device="cuda").half()
    sparse = torch.sparse.SparseSemiStructuredTensorCUTLASS.from_dense(a)
    values, meta = sparse.packed, sparse.meta
    ours_values, ours_meta = compress(a, metadata_layout="cutlass")
    assert torch.equal(ours_values, values) and torch.equal(ours_meta, meta)
    func = sparse_gemm(M, N, K, 128, 128, 64, "float16", "int16", stages=3, layout_arch="8.0")
    target = "cuda" if configs else "cuda -arch=sm_90a"
    kernel = tilelang.compile(func, out_idx=[3], target=target, pass_configs=configs)
    got = kernel(values, meta, b)
    torch.testing.assert_close(got, a.float() @ b.float(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dtype, trans_B", [("float16", False), ("bfloat16", True)])
@pytest.mark.parametrize(
    "M, N, K, tiles, threads",
    [(512, 256, 512, (128, 128, 64), 256), (200, 120, 320, (64, 64, 64), 128)],
)
def test_gemm_sp_register_a_matches_torch(dtype, trans_B, M, N, K, tiles, threads):
    """A_sparse in a register fragment: wgmma.mma_async.sp with A from registers."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma.mma_async.sp needs an sm_90 GPU")
    from test_gemm_sp_wgmma import register_a_gemm

    t = getattr(torch, dtype)
    a = randn_semi_sparse(M, K, dtype=t, device="cuda")
    b = torch.randn((N, K) if trans_B else (K, N), device="cuda").to(t)
    a_sparse, e = compress(a, meta_dtype="int16")
    func = register_a_gemm(M, N, K, *tiles, dtype, trans_B=trans_B, threads=threads)
    kernel = tilelang.compile(func, out_idx=[3], target="cuda -arch=sm_90a")
    assert "tl::wgmma_gemm_sp_rs<" in kernel.get_kernel_source()
    got = kernel(a_sparse, e, b)
    torch.testing.assert_close(
        got, a.float() @ (b.T if trans_B else b).float(), rtol=1e-2, atol=1e-2
    )
