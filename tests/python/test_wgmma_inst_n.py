"""The wgmma instruction width of a GEMM on sm_90a (device/cuda/gemm_sm90.cuh,
`sm90::inst_n`): a warpgroup tile whose width is a multiple of 16 other than a power of
two (96, 112, 160 columns) runs one m64nNk16 per k step with a K-major B, as TileLang
asks (its issue 2928), not a power-of-two split (three m64n32k16 for 96); an N-major B
keeps whole swizzle blocks. Checked in the SASS that nvcc builds and by running the
kernels in the sm_90a emulator against numpy; `select_wgmma_inst_n` states the rule."""

import re
import subprocess

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_examples_cuda_source import nvcc, nvcc_compile  # noqa: F401  (the fixture)
from test_gemm_sp_mma import require_cuobjdump
from tilelang.cuda.intrinsics.macro.wgmma_macro_generator import select_wgmma_inst_n


def matmul(M, N, K, block_M, block_N, block_K, transpose_B, accum):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((N, K) if transpose_B else (K, N), "float16"),
        C: T.Tensor((M, N), "float16"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float16")
            B_s = T.alloc_shared(
                (block_N, block_K) if transpose_B else (block_K, block_N), "float16"
            )
            C_l = T.alloc_fragment((block_M, block_N), accum)
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_s)
                if transpose_B:
                    T.copy(B[bx * block_N, k * block_K], B_s)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_l, transpose_B=transpose_B)
            T.copy(C_l, C[by * block_M, bx * block_N])

    return main


CASES = [
    (96, True, "float", "64x96x16.F32"),
    (112, True, "float", "64x112x16.F32"),
    (160, True, "float16", "64x160x16.F16"),
    (96, False, "float", "64x32x16.F32"),  # N-major B: whole 64-column swizzle blocks
]


@pytest.mark.parametrize("block_N, transpose_B, accum, hgmma", CASES)
def test_wide_tiles_run_in_the_emulator(block_N, transpose_B, accum, hgmma):
    M, K = 128, 128
    N = block_N * 2
    kernel = tilelang.compile(
        matmul(M, N, K, 64, block_N, 64, transpose_B, accum), target="cuda -arch=sm_90a -emulate"
    )
    assert "tl::wgmma_gemm_ss<" in kernel.get_kernel_source()
    rng = np.random.default_rng(block_N)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K) if transpose_B else (K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    kernel(a, b, c)
    bt = b.astype(np.float64).T if transpose_B else b.astype(np.float64)
    ref = a.astype(np.float64) @ bt
    tol = 5e-2 if accum == "float16" else 2e-2
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("block_N, transpose_B, accum, hgmma", CASES)
def test_sass_has_one_wide_wgmma(block_N, transpose_B, accum, hgmma, nvcc, tmp_path):  # noqa: F811
    tool = require_cuobjdump()
    kernel = tilelang.compile(
        matmul(128, block_N * 2, 128, 64, block_N, 64, transpose_B, accum),
        target="cuda -arch=sm_90a",
    )
    cubin, log = nvcc_compile(nvcc, kernel.get_kernel_source(), "sm_90a", tmp_path)
    assert cubin is not None, log
    sass = subprocess.run(
        [tool, "-sass", str(tmp_path / "kernel.cubin")], capture_output=True, text=True, check=True
    ).stdout
    shapes = set(re.findall(r"HGMMA\.(\d+x\d+x\d+\.F\d+)", sass))
    assert shapes == {hgmma}, sorted(shapes)


@pytest.mark.parametrize(
    "width, inst",
    [(64, 64), (96, 96), (112, 112), (160, 160), (176, 176), (256, 256), (24, 8), (40, 8),
     (88, 8), (384, 192), (512, 256), (16, 16), (48, 48)],
)  # fmt: skip
def test_select_wgmma_inst_n(width, inst):
    assert select_wgmma_inst_n(width) == inst


def test_select_wgmma_inst_n_refuses_a_non_positive_width():
    with pytest.raises(ValueError, match="warp_col_tiles must be a positive int, got 0"):
        select_wgmma_inst_n(0)
