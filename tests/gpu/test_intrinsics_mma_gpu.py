"""tilelang.intrinsics' TensorCoreIntrinEmitter GEMMs (tests/python/test_intrinsics_mma.py)
on a real GPU at realistic sizes, compared with torch."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))

import tilelang
from test_intrinsics_mma import intrinsics_gemm

torch = pytest.importorskip("torch")

TORCH = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int8": torch.int8,
    "float32": torch.float32,
    "int32": torch.int32,
}
BIG = {"warp_row_tiles": 64, "warp_col_tiles": 64}  # 128 x 128 blocks, 4 warps


def operands(M, N, K, in_dtype, a_t, b_t):
    a_shape = (K, M) if a_t else (M, K)
    b_shape = (N, K) if b_t else (K, N)
    if in_dtype == "int8":
        a = torch.randint(-128, 128, a_shape, dtype=torch.int8, device="cuda")
        b = torch.randint(-128, 128, b_shape, dtype=torch.int8, device="cuda")
        af, bf = a.double(), b.double()  # exact: |sum| < 2^53
    else:
        a = torch.randn(a_shape, device="cuda").to(TORCH[in_dtype])
        b = torch.randn(b_shape, device="cuda").to(TORCH[in_dtype])
        af, bf = a.float(), b.float()
    return a, b, (af.T if a_t else af) @ (bf.T if b_t else bf)


@pytest.mark.parametrize(
    "M, N, K, in_dtype, out_dtype, accum_dtype, a_t, b_t, extra",
    [
        (1024, 1024, 1024, "float16", "float32", "float32", False, True, BIG),
        (1024, 512, 768, "float16", "float32", "float32", True, False, BIG),
        (512, 1024, 512, "bfloat16", "float32", "float32", False, False, BIG),
        (512, 512, 1024, "bfloat16", "float32", "float32", True, True, BIG),
        (1024, 1024, 512, "float16", "float16", "float16", False, True, BIG),
        (1024, 1024, 1024, "int8", "int32", "int32", False, True, {**BIG, "chunk": 64}),
        # TileLang's test configuration: 2 x 2 warps of 32 x 32
        (256, 256, 256, "float16", "float32", "float32", False, True, {}),
        # single n8 fragments, C stored by stmatrix straight into global memory
        (
            512,
            512,
            256,
            "float16",
            "float32",
            "float32",
            False,
            True,
            {"warp_row_tiles": 16, "warp_col_tiles": 8, "block_col_warps": 4, "store": "global"},
        ),
    ],
)
def test_emitter_gemm_matches_torch(M, N, K, in_dtype, out_dtype, accum_dtype, a_t, b_t, extra):
    kernel = tilelang.compile(
        intrinsics_gemm(M, N, K, in_dtype, out_dtype, accum_dtype, a_t, b_t, **extra),
        target="cuda",
    )
    assert "tl::mma_sync_frag(" in kernel.get_kernel_source()
    a, b, ref = operands(M, N, K, in_dtype, a_t, b_t)
    c = torch.zeros(M, N, device="cuda", dtype=TORCH[out_dtype])
    kernel(a, b, c)
    if in_dtype == "int8":
        assert torch.equal(c.double(), ref)
    elif accum_dtype == "float16":
        # f16 partial sums: errors grow with sqrt(K) * |terms|
        torch.testing.assert_close(c.float(), ref, rtol=2e-2, atol=0.5)
    else:
        torch.testing.assert_close(c.float(), ref, rtol=1e-3, atol=1e-3)
