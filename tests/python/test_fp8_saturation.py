"""Conversions to float8_e4m3fn / float8_e5m2 on the CUDA target saturate as PTX's
cvt.rn.satfinite does (and so as TileLang's CUDA code, whose fp8 types use it): round to
nearest even, a finite value or an inf beyond the largest finite magnitude becomes
+-448 / +-57344, every NaN the one NaN 0x7f. Checked in the CUDA emulator (sm_80: the
software path sm_80 to sm_87 also run on the GPU; sm_90a) against a reference written
here from ml_dtypes, over every float16 and bfloat16 value, a dense sweep of float32
around the thresholds and a GEMM whose accumulators overflow, as TileLang's own fp8
GEMM example does with integer inputs. The cpu target keeps ml_dtypes' rule (NaN / inf)
on purpose (docs/guide/language.md, "Low-precision dtypes"). NVRTC compiles the sm_90a source
into the hardware cvt."""

import functools

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_device_sm80 import needs_nvrtc, nvrtc_compile

EMULATED = ["cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate"]
FP8 = ["float8_e4m3fn", "float8_e5m2"]
NP = {
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "int64": np.dtype(np.int64),
    "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
}
rng = np.random.default_rng(4488)


def satfinite_reference(x, name):
    """The codes cvt.rn.satfinite gives for `x`: ml_dtypes' round-to-nearest-even of x
    clipped to the largest finite magnitude (np.clip keeps NaN), and 0x7f for every NaN
    (the hardware drops a NaN's sign and payload)."""
    dt = NP[name]
    top = float(ml_dtypes.finfo(dt).max)
    with np.errstate(invalid="ignore"):
        x = np.asarray(x).astype(np.float64)
        q = np.clip(x, -top, top).astype(dt).view(np.uint8)
    return np.where(np.isnan(x), np.uint8(0x7F), q)


@functools.cache
def convert_kernel(src, target):
    """`src` values (any length, a multiple of 256) to e4m3fn and e5m2."""
    n = T.dynamic("n")

    @T.prim_func
    def main(
        X: T.Tensor((n,), src),
        E4: T.Tensor((n,), "float8_e4m3fn"),
        E5: T.Tensor((n,), "float8_e5m2"),
    ):
        with T.Kernel(T.ceildiv(n, 256), threads=256) as bx:
            for i in T.Parallel(256):
                E4[bx * 256 + i] = T.cast(X[bx * 256 + i], "float8_e4m3fn")
                E5[bx * 256 + i] = T.cast(X[bx * 256 + i], "float8_e5m2")

    return tilelang.compile(main, target=target)


def convert(x, target):
    src = next(name for name, dt in NP.items() if dt == x.dtype)
    pad = -x.size % 256
    x = np.concatenate([x, np.ones(pad, x.dtype)])
    e4, e5 = np.zeros(x.size, NP["float8_e4m3fn"]), np.zeros(x.size, NP["float8_e5m2"])
    convert_kernel(src, target)(x, e4, e5)
    return {
        "float8_e4m3fn": e4.view(np.uint8)[: x.size - pad],
        "float8_e5m2": e5.view(np.uint8)[: x.size - pad],
    }


def assert_codes(x, got, name, what):
    want = satfinite_reference(x, name)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, (
        f"{what} -> {name}: {bad.size} of {x.size} differ from cvt.rn.satfinite, e.g. "
        f"{x[bad[:4]]!r} (bits {x[bad[:4]].view(np.uint32 if x.itemsize == 4 else np.uint16)}): "
        f"got {got[bad[:4]]}, expected {want[bad[:4]]}"
    )


def all_16_bit(src):
    return np.arange(1 << 16, dtype=np.uint16).view(NP[src])


@pytest.mark.parametrize("target", EMULATED)
@pytest.mark.parametrize("src", ["float16", "bfloat16"])
def test_every_16_bit_value_saturates(target, src):
    """Every float16 / bfloat16 bit pattern (±inf, NaNs of both signs with any payload,
    ±0, subnormals, every overflowing value) to both fp8 types."""
    x = all_16_bit(src)
    got = convert(x, target)
    for name in FP8:
        assert_codes(x, got[name], name, src)


def float32_sweep(name):
    """float32 values around everything that decides a code of `name`: a dense strided
    sweep of [max / 4, 4 * max] and every float within 4096 ulps of the largest finite
    value, of the tie above it (where ml_dtypes starts to overflow) and of the next
    (unrepresentable) code's value; each value and midpoint of the format with both
    float neighbours; the subnormal range; specials and random bit patterns; both signs."""
    dt = NP[name]
    top = np.float32(ml_dtypes.finfo(dt).max)
    lo, hi = (np.float32(top / 4), np.float32(top * 4))
    strided = np.arange(lo.view(np.uint32), hi.view(np.uint32), 61, dtype=np.uint32)
    ulp = np.float32(2.0 ** (np.floor(np.log2(float(top))) - ml_dtypes.finfo(dt).nmant))
    near = [
        np.arange(c.view(np.uint32) - 4096, c.view(np.uint32) + 4097, dtype=np.uint32)
        for c in (top, np.float32(top + ulp / 2), np.float32(top + ulp))
    ]
    with np.errstate(invalid="ignore"):
        v = np.arange(256, dtype=np.uint8).view(dt).astype(np.float64)
    v = np.unique(v[np.isfinite(v) & (v >= 0)])
    ties = ((v[:-1] + v[1:]) / 2).astype(np.float32)  # exact
    grid = np.concatenate([v.astype(np.float32), ties])
    grid = np.concatenate(
        [grid, np.nextafter(grid, np.float32(np.inf)), np.nextafter(grid, np.float32(0))]
    )
    special = np.array(
        [0.0, np.inf, 3.4028235e38, 1e-45, 1.1754942e-38, 1.1754944e-38, 2.0**-10, 2.0**-17, 1.0],
        np.float32,
    )
    nan_bits = np.array([0x7FC00000, 0x7F800001, 0x7FA00000, 0x7FFFFFFF, 0x7F802000], np.uint32)
    random_bits = rng.integers(0, 1 << 31, 50_000, dtype=np.uint64).astype(np.uint32)
    magnitudes = np.concatenate(
        [strided, *near, grid.view(np.uint32), special.view(np.uint32), nan_bits, random_bits]
    )
    return np.concatenate([magnitudes, magnitudes | np.uint32(0x80000000)]).view(np.float32)


@pytest.mark.parametrize("target", EMULATED)
@pytest.mark.parametrize("name", FP8)
def test_float32_around_the_thresholds_saturates(target, name):
    x = float32_sweep(name)
    assert_codes(x, convert(x, target)[name], name, "float32")


@pytest.mark.parametrize("target", EMULATED)
def test_overflow_rules_spelled_out(target):
    """What the sweeps check, for the values where saturation differs from ml_dtypes:
    e4m3fn's tie at 464 and beyond, e5m2's tie at 59392 (ml_dtypes rounds it to inf) and
    beyond, infinities, NaNs (0x7f whatever the sign), float64 and integers (one rounding
    through round-to-odd, then saturation), and -0."""
    x = np.array(
        [448, 464, 465, 1e6, np.inf, -np.inf, -np.nan, 57344, 59392, 61440, -1e30, -0.0], np.float32
    )
    got = convert(x, target)
    assert got["float8_e4m3fn"].tolist() == [
        0x7E,
        0x7E,
        0x7E,
        0x7E,
        0x7E,
        0xFE,
        0x7F,
        0x7E,
        0x7E,
        0x7E,
        0xFE,
        0x80,
    ]
    assert got["float8_e5m2"].tolist() == [
        0x5F,
        0x5F,
        0x5F,
        0x7B,
        0x7B,
        0xFB,
        0x7F,
        0x7B,
        0x7B,
        0x7B,
        0xFB,
        0x80,
    ]
    wide = convert(
        np.array([1e300, -np.inf, np.nan, 448.0 + 2.0**-40, 70000.0], np.float64), target
    )
    assert wide["float8_e4m3fn"].tolist() == [0x7E, 0xFE, 0x7F, 0x7E, 0x7E]
    assert wide["float8_e5m2"].tolist() == [0x7B, 0xFB, 0x7F, 0x5F, 0x7B]
    ints = convert(np.array([1000, -(2**40), 2**62, 57344 + 4096], np.int64), target)
    assert ints["float8_e4m3fn"].tolist() == [0x7E, 0xFE, 0x7E, 0x7E]
    assert ints["float8_e5m2"].tolist() == [0x64, 0xFB, 0x7B, 0x7B]


def test_cpu_target_keeps_the_ml_dtypes_rule():
    """The cpu target converts as numpy users expect (ml_dtypes: e4m3fn overflows to
    NaN, e5m2 to inf): the same inputs as above, the other rule."""
    x = np.concatenate([float32_sweep("float8_e4m3fn"), float32_sweep("float8_e5m2")])
    got = convert(x, "cpu")
    with np.errstate(invalid="ignore", over="ignore"):
        for name in FP8:
            np.testing.assert_array_equal(
                got[name], x.astype(NP[name]).view(np.uint8), err_msg=name
            )
    got = convert(np.array([500, np.inf, -np.inf, 61440, -np.nan], np.float32), "cpu")
    assert got["float8_e4m3fn"].tolist() == [0x7F, 0x7F, 0xFF, 0x7F, 0xFF]
    assert got["float8_e5m2"].tolist() == [0x60, 0x7C, 0xFC, 0x7C, 0xFE]


def fp8_gemm(M, N, K, dtype, block=64):
    """TileLang's fp8 GEMM example (examples/gemm_fp8/example_tilelang_gemm_fp8.py) at a
    small size: C = A @ B^T with float32 accumulators, C in the fp8 dtype."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block, 64), dtype)
            B_shared = T.alloc_shared((block, 64), dtype)
            C_local = T.alloc_fragment((block, block), "float32")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, 64), num_stages=3):
                T.copy(A[by * block, k * 64], A_shared)
                T.copy(B[bx * block, k * 64], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C[by * block, bx * block])

    return main


@pytest.mark.parametrize("target", ["cuda -arch=sm_90a -emulate", "cuda -arch=sm_89 -emulate"])
@pytest.mark.parametrize("dtype", FP8)
def test_fp8_gemm_with_overflowing_accumulators_saturates(target, dtype):
    """Integer inputs in [-128, 128) as TileLang's example draws them: the sums (exact in
    float32: integers below 2^24) run far past the fp8 range, and C holds +-max there."""
    M, N, K = 64, 128, 192
    a = rng.integers(-128, 128, (M, K)).astype(NP[dtype])
    b = rng.integers(-128, 128, (N, K)).astype(NP[dtype])
    kernel = tilelang.compile(fp8_gemm(M, N, K, dtype), target=target)
    c = np.zeros((M, N), NP[dtype])
    kernel(a, b, c)
    exact = a.astype(np.float64) @ b.astype(np.float64).T
    top = float(ml_dtypes.finfo(NP[dtype]).max)
    assert (np.abs(exact) > top).mean() > 0.3 and (np.abs(exact) < top).any()
    np.testing.assert_array_equal(c.view(np.uint8), satfinite_reference(exact, dtype))
    assert not np.isnan(c.astype(np.float32)).any() and np.isfinite(c.astype(np.float32)).all()


@needs_nvrtc
def test_sm90a_source_compiles_to_the_hardware_cvt():
    """NVRTC builds the generated source for sm_90a into cvt.rn.satfinite (one per value),
    and for sm_80 (no fp8 cvt) into the software path."""
    src = convert_kernel("float32", "cuda -arch=sm_90a").get_kernel_source()
    ok, log, ptx = nvrtc_compile("sm_90a", src, want_ptx=True)
    assert ok, log
    assert "cvt.rn.satfinite.e4m3x2.f32" in ptx and "cvt.rn.satfinite.e5m2x2.f32" in ptx
    ok, log, ptx = nvrtc_compile(
        "sm_80", convert_kernel("float32", "cuda -arch=sm_80").get_kernel_source(), True
    )
    assert ok, log
    assert "e4m3x2" not in ptx and "e5m2x2" not in ptx


@needs_nvrtc
@pytest.mark.parametrize("dtype", FP8)
def test_fp8_gemm_source_compiles_with_nvrtc_for_sm90a(dtype):
    kernel = tilelang.compile(fp8_gemm(64, 128, 192, dtype), target="cuda -arch=sm_90a")
    ok, log, ptx = nvrtc_compile("sm_90a", kernel.get_kernel_source(), want_ptx=True)
    assert ok, log
    assert f"cvt.rn.satfinite.{'e4m3' if dtype == 'float8_e4m3fn' else 'e5m2'}x2.f32" in ptx


def _infinity_fill(dtype):
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), dtype)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                B[i] = T.if_then_else(A[i] > 0, T.infinity(dtype), T.cast(A[i], dtype))

    return main


@pytest.mark.parametrize("target", EMULATED + ["cpu"])
def test_float8_e5m2_infinity_constant_is_exact(target):
    """T.infinity(float8_e5m2) is the type's infinity (code 0x7c), not the saturated
    57344 a conversion from float gives on the CUDA target; converted values still
    saturate there."""
    kernel = tilelang.compile(_infinity_fill("float8_e5m2"), out_idx=[1], target=target)
    a = rng.standard_normal(64).astype(np.float32) * 4
    a[:8] = [1.0, -1.0, 70000.0, -70000.0, 2.0, -2.0, 3.0, -0.5]
    b = kernel(a).view(np.uint8)
    pos = a > 0
    assert (b[pos] == 0x7C).all()
    if target == "cpu":  # ml_dtypes' rule there
        want = a[~pos].astype(NP["float8_e5m2"]).view(np.uint8)
    else:
        want = satfinite_reference(a[~pos], "float8_e5m2")
    np.testing.assert_array_equal(b[~pos], want)
    if target != "cpu":
        assert "from_bits(0x7c)" in kernel.get_kernel_source()


@needs_nvrtc
def test_float8_e5m2_infinity_source_compiles_with_nvrtc():
    src = tilelang.compile(
        _infinity_fill("float8_e5m2"), out_idx=[1], target="cuda -arch=sm_90a"
    ).get_kernel_source()
    ok, log = nvrtc_compile("sm_90a", src)
    assert ok, log
