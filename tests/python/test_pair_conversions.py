"""Pair conversions (device/cuda/vec.cuh): a cast that the CUDA lowering moves or
converts two elements at a time names the conversion of the pair of types, as CUDA's
headers or TileLang name it (`tl::copy_vec<4, tl::__float22half2_rn>`,
`tl::convert_pair<tl::__half22float2>(&dst[2 k], &src[2 k])`); the bits are those of the
element conversion (numpy / ml_dtypes), checked in the emulator, and NVRTC compiles the
kernels for sm_75, sm_80 and sm_90a."""

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_device_sm80 import needs_nvrtc, nvrtc_compile

NP = {
    "float64": np.float64,
    "float32": np.float32,
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu,
}
PAIRS = [
    ("float32", "float16", "__float22half2_rn"),
    ("float16", "float32", "__half22float2"),
    ("float32", "bfloat16", "__float22bfloat162_rn"),
    ("bfloat16", "float32", "__bfloat1622float2"),
    ("float32", "float8_e4m3fn", "__nv_cvt_float2_to_fp8x2"),
    ("float32", "float8_e5m2", "__nv_cvt_float2_to_fp8x2"),
    ("float8_e4m3fn", "float32", "__tl_cvt_fp8x2_to_float2"),
    ("float8_e5m2", "float16", "__tl_cvt_fp8x2_to_half2"),
    ("float16", "float8_e4m3fn", "__tl_cvt_half2_to_fp8x2"),
    ("float8_e8m0fnu", "bfloat16", "__tl_cvt_e8m0x2_to_bfloat162"),
    ("bfloat16", "float8_e8m0fnu", "__tl_cvt_bfloat162_to_e8m0x2"),
    ("float32", "float8_e8m0fnu", "__tl_cvt_float2_to_e8m0x2"),
    ("float64", "float8_e8m0fnu", "__tl_cvt_double2_to_e8m0x2"),
]
N = 512


def copy_cast(a, b):
    @T.prim_func
    def main(A: T.Tensor((N,), a), B: T.Tensor((N,), b)):
        with T.Kernel(1, threads=128):
            T.copy(A, B)

    return main


def fragment_cast(a, b):
    @T.prim_func
    def main(A: T.Tensor((N,), a), B: T.Tensor((N,), b)):
        with T.Kernel(1, threads=128):
            A_local = T.alloc_fragment((N,), a)
            B_local = T.alloc_fragment((N,), b)
            T.copy(A, A_local)
            for i in T.Parallel(N):
                B_local[i] = A_local[i]
            T.copy(B_local, B)

    return main


def values(dtype, positive=False):
    """Finite values of `dtype` over its range, positive and negative (e8m0: positive)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(N) * np.exp2(rng.integers(-12, 12, N))
    if positive or dtype == "float8_e8m0fnu":
        x = np.abs(x) + 2.0**-20
    with np.errstate(over="ignore"):
        return x.astype(NP[dtype])


def element_conversion(x, b):
    """What the element-by-element code computes: e8m0 rounds up, the fp8 types saturate
    (CUDA's __NV_SATFINITE), the rest round to nearest even (ml_dtypes)."""
    wide = x.astype(np.float64)
    if b == "float8_e8m0fnu":
        return np.exp2(np.ceil(np.log2(wide))).astype(NP[b])
    if b in ("float8_e4m3fn", "float8_e5m2"):
        top = float(ml_dtypes.finfo(NP[b]).max)
        return np.clip(wide, -top, top).astype(NP[b])
    return x.astype(NP[b])


@pytest.mark.parametrize("a, b, name", PAIRS, ids=[f"{a}-{b}" for a, b, _ in PAIRS])
def test_pair_conversion_is_named_and_exact(a, b, name):
    x = values(a, positive=b == "float8_e8m0fnu")  # e8m0 holds no sign
    want = element_conversion(x, b)
    bits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(NP[b]).itemsize]
    for build in (copy_cast, fragment_cast):
        f = build(a, b)
        assert f"tl::{name}>" in tilelang.compile(f, target="cuda -arch=sm_90a").get_kernel_source()
        out = np.zeros(N, NP[b])
        tilelang.compile(f, target="cuda -arch=sm_90a -emulate")(x, out)
        np.testing.assert_array_equal(out.view(bits), want.view(bits))


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90a"])
def test_pair_conversions_compile(arch):
    for a, b, name in PAIRS:
        for build in (copy_cast, fragment_cast):
            src = tilelang.compile(build(a, b), target=f"cuda -arch={arch}").get_kernel_source()
            assert f"tl::{name}>" in src
            ok, log, _ = nvrtc_compile(arch, source=src, want_ptx=True)
            assert ok, (a, b, log)
