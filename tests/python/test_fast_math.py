"""Pass config tl.enable_fast_math (TileLang's TL_ENABLE_FAST_MATH) on the cuda target:
NVRTC compiles with --use_fast_math, so T.exp, T.exp2, T.log ... become the
approximate hardware instructions. The cubin changes (and shrinks: the accurate
expf and logf are longer sequences); tl.disable_fast_math wins; the key is part of
the cache key, so the two builds never share an entry."""

import os

import pytest
import tilelang
import tilelang.language as T
from test_wgmma_gemm import needs_nvrtc

SM90A = "cuda -arch=sm_90a"


@T.prim_func
def exp_log(A: T.Tensor((1024,), "float32"), B: T.Tensor((1024,), "float32")):
    with T.Kernel(8, threads=128) as bx:
        for i in T.Parallel(128):
            B[bx * 128 + i] = T.exp(A[bx * 128 + i]) + T.log(A[bx * 128 + i])


def cubin(kernel):
    with open(os.path.join(kernel.kernel.artifact_dir, "kernel.cubin"), "rb") as f:
        return f.read()


@needs_nvrtc
def test_fast_math_compiles_the_approximate_instructions():
    accurate = tilelang.compile(exp_log, target=SM90A)
    fast = tilelang.compile(exp_log, target=SM90A, pass_configs={"tl.enable_fast_math": True})
    assert fast.cache_key != accurate.cache_key
    assert len(cubin(fast)) < len(cubin(accurate))
    # The generated source is the same: only NVRTC's options differ.
    assert fast.get_kernel_source() == accurate.get_kernel_source()


@needs_nvrtc
@pytest.mark.parametrize(
    "configs",
    [
        {},
        {"tl.enable_fast_math": False},
        {"tl.enable_fast_math": True, "tl.disable_fast_math": True},
    ],
)
def test_without_fast_math_the_accurate_functions_stay(configs):
    accurate = tilelang.compile(exp_log, target=SM90A)
    other = tilelang.compile(exp_log, target=SM90A, pass_configs=configs)
    assert cubin(other) == cubin(accurate)
