"""float16 / bfloat16 multiply-adds rounded once, as the GPU's fma.rn.f16 / fma.rn.bf16
(CUDA's __hfma): `T.fma2` on a T.Ramp pair (one `tl::fma2<tl::__half2>` call on CUDA:
fma.rn.f16x2, fma.rn.bf16x2) and `T.ieee_fmaf(x, y, z)` of 16-bit operands (`tl::fma`).
The cpu target and the CUDA emulator compute the same bits in software
(device/common/fma16.h): checked bit for bit against the exact product-plus-addend
rounded to nearest even (Python fractions), on random values and on the cases where a
rounding through float32 lands on a tie and rounds the wrong way; NVRTC's PTX shows the
instructions."""

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_device_sm80 import needs_nvrtc, nvrtc_compile

NP = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
N = 512  # elements: 256 threads, one pair each
# The unit in the last place at 1.0 and a tiny addend for each type.
ULP = {"float16": 2.0**-10, "bfloat16": 2.0**-7}
TINY = {"float16": 2.0**-24, "bfloat16": 2.0**-40}


def round_exact(value, dtype):
    """The value (a Fraction) rounded to nearest even in `dtype`."""
    t = NP[dtype]
    guess = t(float(value))
    bits = int(np.array([guess]).view(np.uint16)[0])
    cands = [guess, t(0.0)]
    for step in (-1, 1):
        if 0 <= bits + step <= 0xFFFF:
            c = np.array([bits + step], np.uint16).view(t)[0]
            if np.isfinite(c):
                cands.append(c)

    def key(c):
        odd = int(np.array([c]).view(np.uint16)[0]) & 1
        return abs(Fraction(float(c)) - value), odd

    return min(cands, key=key)


def reference(a, b, c, dtype):
    out = [
        round_exact(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), dtype)
        for x, y, z in zip(a, b, c)
    ]
    return np.array(out, NP[dtype])


def operands(dtype):
    """Random triples of several magnitudes, and ties: a * b exactly halfway between two
    values of the type (a = 1.5, b = 1 + k ulp, k odd), c a tiny value of either sign, so
    that the exact sum is just off the tie, which a rounding through float32 loses."""
    t = NP[dtype]
    rng = np.random.default_rng(5)
    a = rng.standard_normal(N)
    b = rng.standard_normal(N)
    c = rng.standard_normal(N) * 2.0 ** rng.integers(-20, 3, N)
    ties = np.arange(64)
    a[ties] = 1.5 * np.where(ties % 4 < 2, 1, -1)
    b[ties] = 1 + (2 * (ties // 2) + 1) * ULP[dtype]
    c[ties] = TINY[dtype] * np.where(ties % 2 == 0, 1, -1)
    return a.astype(t), b.astype(t), c.astype(t)


def pair_kernel(dtype):
    @T.prim_func
    def main(
        A: T.Tensor((N,), dtype),
        B: T.Tensor((N,), dtype),
        C: T.Tensor((N,), dtype),
        D: T.Tensor((N,), dtype),
        E: T.Tensor((N,), dtype),
    ):
        with T.Kernel(1, threads=N // 2):
            t = T.get_thread_binding()
            idx = T.Ramp(t * 2, 1, 2)
            D[idx] = T.fma2(A[idx], B[idx], C[idx])
            for k in T.serial(2):
                E[t * 2 + k] = T.ieee_fmaf(A[t * 2 + k], B[t * 2 + k], C[t * 2 + k])

    return main


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize(
    "target", ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate"]
)
def test_fma_of_16_bit_values_rounds_once(target, dtype):
    a, b, c = operands(dtype)
    want = reference(a, b, c, dtype)
    # Rounded through float32, some ties go the wrong way: the inputs tell the two apart.
    twice = (a.astype(np.float32) * b.astype(np.float32) + c.astype(np.float32)).astype(NP[dtype])
    assert (twice.view(np.uint16) != want.view(np.uint16)).sum() >= 16
    kernel = tilelang.compile(pair_kernel(dtype), target=target)
    if target.startswith("cuda"):
        pair = {"float16": "tl::__half2", "bfloat16": "tl::__nv_bfloat162"}[dtype]
        assert f"tl::fma2<{pair}>(" in kernel.get_kernel_source()
    d, e = np.zeros(N, NP[dtype]), np.zeros(N, NP[dtype])
    kernel(a, b, c, d, e)
    np.testing.assert_array_equal(d.view(np.uint16), want.view(np.uint16))
    np.testing.assert_array_equal(e.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
def test_fma_of_16_bit_specials(target):
    """Infinities, NaN (inf * 0, inf - inf: the canonical NaN) and signed zeros."""
    inf, nan = np.inf, np.nan
    rows = [
        (inf, 1, 1, inf),
        (-inf, 2, 1, -inf),
        (inf, 0, 1, nan),
        (inf, 1, -inf, nan),
        (nan, 1, 1, nan),
        (-0.0, 1, 0.0, 0.0),
        (-0.0, 1, -0.0, -0.0),
        (2, 3, -6, 0.0),
        (60000, 2, -65504, 54496),  # the product overflows float16, the sum does not
    ]
    rows += [(1, 1, 1, 2)] * (N - len(rows))
    for dtype in ("float16", "bfloat16"):
        t = NP[dtype]
        a, b, c, want = (np.array(col, np.float64).astype(t) for col in zip(*rows))
        if dtype == "bfloat16":  # with bfloat16's roundings of 60000 and 65504
            want[8] = round_exact(Fraction(float(a[8])) * 2 + Fraction(float(c[8])), dtype)
        d, e = np.zeros(N, t), np.zeros(N, t)
        tilelang.compile(pair_kernel(dtype), target=target)(a, b, c, d, e)
        for got in (d, e):
            bits = got.view(np.uint16)
            isnan = np.isnan(want.astype(np.float32))
            assert (bits[isnan] == 0x7FFF).all(), bits[isnan]  # the canonical NaN
            np.testing.assert_array_equal(bits[~isnan], want.view(np.uint16)[~isnan])


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90a"])
def test_fma_pairs_are_single_instructions(arch):
    for dtype, insn in [("float16", "fma.rn.f16x2"), ("bfloat16", "fma.rn.bf16x2")]:
        src = tilelang.compile(pair_kernel(dtype), target=f"cuda -arch={arch}").get_kernel_source()
        ok, log, ptx = nvrtc_compile(arch, source=src, want_ptx=True)
        assert ok, log
        scalar = insn.removesuffix("x2") + " "  # T.ieee_fmaf's one-lane instruction
        if arch == "sm_75" and dtype == "bfloat16":
            assert insn not in ptx and scalar not in ptx  # software rounding before sm_80
        else:
            assert insn in ptx and scalar in ptx, (arch, dtype)
