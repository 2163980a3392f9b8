"""Conversions to float8_e8m0fnu on the CUDA target round as CUDA's __nv_fp8_e8m0 (the
type TileLang's CUDA code converts through: __nv_cvt_float_to_e8m0 with __NV_SATFINITE
and cudaRoundPosInf): the sign is dropped, |x| rounds up to a power of two, zero and
everything up to 2^-127 give 2^-127 (code 0), anything finite or infinite beyond 2^127
gives 2^127 (code 254), a NaN code 255. Checked in the CUDA emulator (the software path
sm_80 to sm_90 also run on a GPU) against a reference written here from the definition
(ceil(log2|x|) clamped), over every float16 and bfloat16 value and float32 values around
each power of two. The cpu target keeps ml_dtypes' rule (round half up, NaN past 2^127
and for negative inputs)."""

import functools

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T

EMULATED = ["cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate"]
E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)
NP = {
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float32": np.dtype(np.float32),
}


def ceil_reference(x):
    """Codes of CUDA's round-up, saturating e8m0 conversion of `x`."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.abs(np.asarray(x).astype(np.float64))
        mant, exp = np.frexp(a)  # a = mant * 2^exp, mant in [0.5, 1)
        power = np.where(mant == 0.5, exp - 1, exp)  # ceil(log2 a)
        codes = np.clip(power + 127, 0, 254)
    codes = np.where(a == 0, 0, codes)
    codes = np.where(np.isinf(a), 254, codes)
    return np.where(np.isnan(a), 255, codes).astype(np.uint8)


@functools.cache
def convert_kernel(src, target):
    n = T.dynamic("n")

    @T.prim_func
    def main(X: T.Tensor((n,), src), Y: T.Tensor((n,), "float8_e8m0fnu")):
        with T.Kernel(T.ceildiv(n, 256), threads=256) as bx:
            for i in T.Parallel(256):
                if bx * 256 + i < n:
                    Y[bx * 256 + i] = T.cast(X[bx * 256 + i], "float8_e8m0fnu")

    return tilelang.compile(main, target=target)


def convert(x, target):
    src = next(name for name, dt in NP.items() if dt == x.dtype)
    y = np.zeros(x.size, E8M0)
    convert_kernel(src, target)(x, y)
    return y.view(np.uint8)


def assert_codes(x, got):
    want = ceil_reference(x)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(float(x[i]), int(got[i]), int(want[i])) for i in bad[:8]]


@pytest.mark.parametrize("target", EMULATED)
@pytest.mark.parametrize("src", ["float16", "bfloat16"])
def test_every_16_bit_value_rounds_up(target, src):
    x = np.arange(1 << 16, dtype=np.uint16).view(NP[src])
    assert_codes(x, convert(x, target))


@pytest.mark.parametrize("target", EMULATED)
def test_float32_around_every_power_of_two(target):
    bits = (np.arange(1, 255, dtype=np.uint32) << 23)[:, None] + np.array(
        [-2, -1, 0, 1, 2], np.int64
    )[None, :]
    bits = bits.ravel().astype(np.uint32)
    special = np.array(
        [0, 1, 0x3FFFFF, 0x400000, 0x400001, 0x7FFFFF, 0x7F7FFFFF, 0x7F800000, 0x7FC00000],
        np.uint32,
    )
    x = np.concatenate([bits, special, special | np.uint32(0x80000000)]).view(np.float32)
    assert_codes(x, convert(x, target))


@pytest.mark.parametrize("target", EMULATED)
def test_the_rules_spelled_out(target):
    x = np.array([1.0, 1.5, 3.0, 4.0, -4.0, 0.0, -0.0, 2.0**127, 2.0**127 * 1.5, np.inf, -np.inf, np.nan, 2.0**-130],
                 np.float32)  # fmt: skip
    want = [127, 128, 129, 129, 129, 0, 0, 254, 254, 254, 254, 255, 0]
    np.testing.assert_array_equal(convert(x, target), want)


def test_cpu_target_keeps_the_ml_dtypes_rule():
    x = np.array([1.5, 3.0, -4.0, 2.0**127 * 1.5, np.inf], np.float32)
    np.testing.assert_array_equal(convert(x, "cpu"), x.astype(E8M0).view(np.uint8))
