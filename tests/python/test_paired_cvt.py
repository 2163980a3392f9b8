"""Float runs converted two values per cvt (device/cuda/vec.cuh, tl::cast_pair): a
float32 gemm accumulator copied to a float16 / bfloat16 / float8_e4m3fn / float8_e5m2
tensor converts each pair of adjacent elements with one cvt (cvt.rn.f16x2.f32,
cvt.rn.bf16x2.f32, cvt.rn.satfinite.e4m3x2.f32 / e5m2x2.f32), not one cvt per value
and a byte permute: the PTX nvcc makes of the sm_90a source has half as many cvts as
the thread holds accumulators. The kernels run in the emulator against numpy."""

import os
import re
import subprocess

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_examples_cuda_source import nvcc  # noqa: F401  (the fixture)
from tilelang import _native

SM90A = "cuda -arch=sm_90a"
rng = np.random.default_rng(4101)

NP = {
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
}
# The paired instruction, and the per-value one it replaces.
CVT = {
    "float16": r"cvt\.rn\.f16x2\.f32",
    "bfloat16": r"cvt\.rn\.bf16x2\.f32",
    "float8_e4m3": r"cvt\.rn\.satfinite\.e4m3x2\.f32",
    "float8_e5m2": r"cvt\.rn\.satfinite\.e5m2x2\.f32",
}
SINGLE = {"float16": r"cvt\.rn\.f16\.f32", "bfloat16": r"cvt\.rn\.bf16\.f32"}


def gemm_out(M, N, K, out_dtype, bM=64, bN=64, bK=32):
    """C = A @ B^T (float16 operands, float32 accumulator) stored as out_dtype."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((N, K), "float16"),
        C: T.Tensor((M, N), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bN, bK), "float16")
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[bx * bN, k * bK], B_s)
                T.gemm(A_s, B_s, C_f, transpose_B=True)
            T.copy(C_f, C[by * bM, bx * bN])

    return main


def ptx_of(nvcc_path, source, tmp_path):
    cu = tmp_path / "kernel.cu"
    cu.write_text(source)
    include = os.path.join(_native.load().device_include_dir(), "cuda")
    cmd = [nvcc_path, "-arch=sm_90a", "-ptx", "--std=c++17", "-allow-unsupported-compiler"]
    cmd += [f"-I{include}", "-o", str(tmp_path / "kernel.ptx"), str(cu)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return (tmp_path / "kernel.ptx").read_text()


@pytest.mark.parametrize("out_dtype", list(NP))
def test_accumulator_store_converts_pairs_and_matches_numpy(out_dtype, nvcc, tmp_path):  # noqa: F811
    M, N, K = 64, 64, 96
    src = tilelang.compile(gemm_out(M, N, K, out_dtype), target=SM90A).get_kernel_source()
    # To C, or to its staging tile for a TMA store.
    # Named by the pair conversion (device/cuda/vec.cuh): tl::__float22half2_rn ...
    assert re.search(r"tl::store_vec<2, tl::__\w+>\(\(&C[_\[]", src), src
    ptx = ptx_of(nvcc, src, tmp_path)
    # 64 x 64 floats over 128 threads: 32 per thread, 16 pairs.
    assert len(re.findall(CVT[out_dtype], ptx)) == 16, ptx
    if out_dtype in SINGLE:
        assert not re.findall(SINGLE[out_dtype], ptx), ptx

    kernel = tilelang.compile(gemm_out(M, N, K, out_dtype), target=SM90A + " -emulate")
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    c = np.zeros((M, N), NP[out_dtype])
    kernel(a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    # The float32 sum rounds once more to the output type: within one of its ulps.
    np.testing.assert_allclose(
        c.astype(np.float64),
        ref.astype(np.float32).astype(NP[out_dtype]).astype(np.float64),
        rtol=2.0 ** -(np.finfo(NP[out_dtype]).nmant),
        atol=1e-3,
    )


def parallel_cast(shape, out_dtype):
    """A T.Parallel loop whose body is one cast between register fragments."""

    @T.prim_func
    def main(A: T.Tensor(shape, "float32"), C: T.Tensor(shape, out_dtype)):
        with T.Kernel(1, threads=128):
            A_f = T.alloc_fragment(shape, "float32")
            C_f = T.alloc_fragment(shape, out_dtype)
            T.copy(A, A_f)
            if len(shape) == 1:
                for i in T.Parallel(shape[0]):
                    C_f[i] = A_f[i]
            else:
                for i, j in T.Parallel(*shape):
                    C_f[i, j] = A_f[i, j]
            T.copy(C_f, C)

    return main


@pytest.mark.parametrize("shape", [(256,), (64, 64)])
@pytest.mark.parametrize("out_dtype", ["float16", "bfloat16"])
def test_parallel_cast_converts_pairs_and_matches_numpy(shape, out_dtype, nvcc, tmp_path):  # noqa: F811
    # The T.Parallel form of T.copy(A_f, C_f): pairs too (TileLang's vectorized cast,
    # language/test_tilelang_language_vectorized_cast.py).
    src = tilelang.compile(parallel_cast(shape, out_dtype), target=SM90A).get_kernel_source()
    assert "tl::cast_pair<tl::__float22" in src, src
    ptx = ptx_of(nvcc, src, tmp_path)
    assert re.findall(CVT[out_dtype], ptx), ptx
    assert not re.findall(SINGLE[out_dtype], ptx), ptx
    for target in (SM90A + " -emulate", "cuda -arch=sm_80 -emulate", "cpu"):
        kernel = tilelang.compile(parallel_cast(shape, out_dtype), target=target)
        a = rng.standard_normal(shape).astype(np.float32) * 1000
        c = np.zeros(shape, NP[out_dtype])
        kernel(a, c)
        np.testing.assert_array_equal(c.view(np.uint16), a.astype(NP[out_dtype]).view(np.uint16))


def test_parallel_cast_that_does_more_stays_per_element():
    # Any other body (an operation besides the cast, another dtype) is not paired.
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), C: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            A_f = T.alloc_fragment((64, 64), "float32")
            C_f = T.alloc_fragment((64, 64), "float16")
            T.copy(A, A_f)
            for i, j in T.Parallel(64, 64):
                C_f[i, j] = A_f[i, j] * 2.0
            T.copy(C_f, C)

    src = tilelang.compile(main, target=SM90A).get_kernel_source()
    assert "tl::cast_pair<" not in src, src
    kernel = tilelang.compile(main, target=SM90A + " -emulate")
    a = rng.standard_normal((64, 64)).astype(np.float32)
    c = np.zeros((64, 64), np.float16)
    kernel(a, c)
    np.testing.assert_array_equal(c, (a * 2).astype(np.float16))
