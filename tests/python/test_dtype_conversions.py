"""Loads, stores and conversions of float16, bfloat16, float8_e4m3fn and float8_e5m2
inside kernels, compared bit for bit with numpy / ml_dtypes `astype`: values on and
next to every rounding boundary, overflow, subnormals, NaN and inf, negative zero.
ml_dtypes arrays go to kernels as they are (the JIT passes their bytes)."""

import functools

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_fp8_saturation import satfinite_reference

rng = np.random.default_rng(11)
LOW = ["float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]
NP = {
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def bits(a):
    return a.view(UINT[a.dtype.itemsize])


def all_values(name):
    """Every bit pattern of a 1- or 2-byte type."""
    dt = NP[name]
    return np.arange(1 << (8 * dt.itemsize), dtype=UINT[dt.itemsize]).view(dt)


def boundary_floats(name, wide=np.float64):
    """Each finite value of `name`, the midpoints between neighbours (ties), and the
    closest `wide` values on either side of each midpoint, plus the overflow edge."""
    with np.errstate(invalid="ignore"):
        v = all_values(name).astype(np.float64)
    v = np.unique(v[np.isfinite(v)])
    top = v[-1] + (v[-1] - v[-2]) / 2  # halfway to the next (unrepresentable) value
    edges = np.concatenate([(v[:-1] + v[1:]) / 2, [top, -top]]).astype(wide)  # exact
    return np.concatenate(
        [
            v.astype(wide),
            edges,
            np.nextafter(edges, wide(np.inf)),
            np.nextafter(edges, wide(-np.inf)),
        ]
    )


SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 3.4e38, -3.4e38, 1e-40]


def float32_inputs():
    parts = [boundary_floats(n, np.float32) for n in LOW]
    random_bits = rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32)
    parts += [random_bits.view(np.float32), np.array(SPECIAL, np.float32)]
    x = np.concatenate([p.astype(np.float32) for p in parts])
    # NaNs with payloads and signs (the payload survives into float16, as numpy keeps it).
    nan_bits = np.array([0x7F800001, 0x7FA00000, 0xFFC00001, 0x7FFFFFFF, 0x7F802000], np.uint32)
    return np.concatenate([x, nan_bits.view(np.float32)])


def float64_inputs():
    parts = [boundary_floats(n) for n in LOW]
    parts += [rng.standard_normal(100_000) * np.exp2(rng.integers(-40, 20, 100_000))]
    parts += [np.array(SPECIAL, np.float64)]
    return np.concatenate(parts)


@functools.cache
def convert_kernel(src, target="cpu"):
    """One kernel converting a `src` vector (of any length) to each low-precision type."""
    n = T.dynamic("n")

    @T.prim_func
    def main(
        X: T.Tensor((n,), src),
        H: T.Tensor((n,), "float16"),
        B: T.Tensor((n,), "bfloat16"),
        E4: T.Tensor((n,), "float8_e4m3fn"),
        E5: T.Tensor((n,), "float8_e5m2"),
    ):
        with T.Kernel(T.ceildiv(n, 256), threads=256) as bx:
            for i in T.Parallel(256):
                H[bx * 256 + i] = X[bx * 256 + i]
                B[bx * 256 + i] = X[bx * 256 + i]
                E4[bx * 256 + i] = X[bx * 256 + i]
                E5[bx * 256 + i] = T.cast(X[bx * 256 + i], "float8_e5m2")

    return tilelang.compile(main, target=target)


@pytest.mark.parametrize("src", ["float32", "float64"])
def test_float_to_low_precision_is_bit_exact(src):
    """float32 and float64 round to each type as numpy / ml_dtypes do: float64 once,
    not through float32 (numpy for float16, ml_dtypes from 0.7 for the others)."""
    x = float32_inputs() if src == "float32" else float64_inputs()
    outs = [np.zeros(x.shape, NP[n]) for n in LOW]
    with np.errstate(all="ignore"):
        convert_kernel(src)(x, *outs)
        for name, out in zip(LOW, outs):
            want = x.astype(NP[name])
            bad = np.nonzero(bits(out) != bits(want))[0]
            assert bad.size == 0, (
                f"{src} -> {name}: {bad.size} mismatches, e.g. {x[bad[:4]]!r}: "
                f"got {bits(out)[bad[:4]]}, expected {bits(want)[bad[:4]]}"
            )


def test_fp8_overflow_and_nan_rules():
    """The rules the exhaustive test covers, spelled out: e4m3fn has no inf, so
    overflow and inf become NaN (keeping the sign); e5m2 overflows to inf."""
    x = np.array([448, 464, 465, 1e6, np.inf, -np.inf, -np.nan, 57344, 61439, 61440], np.float32)
    e4 = np.zeros(x.shape, ml_dtypes.float8_e4m3fn)
    e5 = np.zeros(x.shape, ml_dtypes.float8_e5m2)
    h = np.zeros(x.shape, np.float16)
    b = np.zeros(x.shape, ml_dtypes.bfloat16)
    convert_kernel("float32")(x, h, b, e4, e5)
    assert bits(e4).tolist()[:7] == [0x7E, 0x7E, 0x7F, 0x7F, 0x7F, 0xFF, 0xFF]
    assert bits(e5).tolist()[4:] == [0x7C, 0xFC, 0xFE, 0x7B, 0x7B, 0x7C]


def widen_kernel():
    """Each low type (every bit pattern) to float32, float16 and int32; and one
    low type to another (float16 -> bfloat16 / fp8, bfloat16 -> fp8)."""
    n = 1 << 16

    @T.prim_func
    def main(
        H: T.Tensor((n,), "float16"),
        B: T.Tensor((n,), "bfloat16"),
        E4: T.Tensor((256,), "float8_e4m3fn"),
        E5: T.Tensor((256,), "float8_e5m2"),
        HF: T.Tensor((n,), "float32"),
        BF: T.Tensor((n,), "float32"),
        E4F: T.Tensor((256,), "float32"),
        E5F: T.Tensor((256,), "float32"),
        E4H: T.Tensor((256,), "float16"),
        E5B: T.Tensor((256,), "bfloat16"),
        HB: T.Tensor((n,), "bfloat16"),
        HE4: T.Tensor((n,), "float8_e4m3fn"),
        BE5: T.Tensor((n,), "float8_e5m2"),
        HI: T.Tensor((n,), "int32"),
        HU: T.Tensor((n,), "uint16"),
        UH: T.Tensor((n,), "float16"),
    ):
        with T.Kernel(n // 256, threads=256) as bx:
            for i in T.Parallel(256):
                k = bx * 256 + i
                HF[k] = H[k]
                BF[k] = B[k]
                HB[k] = H[k]
                HE4[k] = H[k]
                BE5[k] = T.cast(B[k], "float8_e5m2")
                HI[k] = T.if_then_else(T.isfinite(H[k]), T.cast(H[k], "int32"), 0)
                HU[k] = T.reinterpret(H[k], "uint16")
                UH[k] = T.reinterpret(HU[k], "float16")
                if bx == 0:
                    E4F[i] = E4[i]
                    E5F[i] = E5[i]
                    E4H[i] = E4[i]
                    E5B[i] = E5[i]

    return tilelang.compile(main, target="cpu")


def test_low_precision_to_wider_and_across_is_bit_exact():
    h, b = all_values("float16"), all_values("bfloat16")
    e4, e5 = all_values("float8_e4m3fn"), all_values("float8_e5m2")
    n = h.size
    hf, bf = np.zeros(n, np.float32), np.zeros(n, np.float32)
    e4f, e5f = np.zeros(256, np.float32), np.zeros(256, np.float32)
    e4h, e5b = np.zeros(256, np.float16), np.zeros(256, ml_dtypes.bfloat16)
    hb, he4 = np.zeros(n, ml_dtypes.bfloat16), np.zeros(n, ml_dtypes.float8_e4m3fn)
    be5 = np.zeros(n, ml_dtypes.float8_e5m2)
    hi, hu, uh = np.zeros(n, np.int32), np.zeros(n, np.uint16), np.zeros(n, np.float16)
    outs = [hf, bf, e4f, e5f, e4h, e5b, hb, he4, be5, hi, hu, uh]
    with np.errstate(all="ignore"):
        widen_kernel()(h, b, e4, e5, *outs)
        checks = {
            "float16 -> float32": (hf, h.astype(np.float32)),
            "bfloat16 -> float32": (bf, b.astype(np.float32)),
            "e4m3fn -> float32": (e4f, e4.astype(np.float32)),
            "e5m2 -> float32": (e5f, e5.astype(np.float32)),
            "e4m3fn -> float16": (e4h, e4.astype(np.float16)),
            "e5m2 -> bfloat16": (e5b, e5.astype(ml_dtypes.bfloat16)),
            "float16 -> bfloat16": (hb, h.astype(ml_dtypes.bfloat16)),
            "float16 -> e4m3fn": (he4, h.astype(ml_dtypes.float8_e4m3fn)),
            "bfloat16 -> e5m2": (be5, b.astype(ml_dtypes.float8_e5m2)),
            "float16 -> int32": (hi, np.where(np.isfinite(h), h, 0).astype(np.int32)),
            "reinterpret float16 -> uint16": (hu, h.view(np.uint16)),
            "reinterpret uint16 -> float16": (uh, h),
        }
    for what, (got, want) in checks.items():
        bad = np.nonzero(bits(got) != bits(want))[0] if got.dtype.kind != "i" else None
        if bad is None:
            np.testing.assert_array_equal(got, want, err_msg=what)
            continue
        assert bad.size == 0, (
            f"{what}: {bad.size} mismatches, e.g. inputs at {bad[:4]}: "
            f"got {bits(got)[bad[:4]]}, expected {bits(want)[bad[:4]]}"
        )


@pytest.mark.parametrize("src", ["int32", "uint32", "int64"])
def test_integers_to_low_precision(src):
    """Integers round to each type once, as numpy / ml_dtypes do (not through float32:
    2^24 + 2^16 + 1 is 2^24 + 2^17 in bfloat16, not 2^24)."""
    n = 4096
    x = (rng.standard_normal(n) * np.exp2(rng.integers(0, 62 if src == "int64" else 31, n))).astype(
        np.float64
    )
    x[:4] = [2**24 + 2**16 + 1, 65520, 65519, 2**31 - 1]
    if src == "int64":
        x[4:6] = [2**60 + 2**52 + 1, -(2**60 + 2**52 + 1)]
    with np.errstate(invalid="ignore"):
        x = np.abs(x) if src == "uint32" else x
        x = x.astype(np.int64 if src == "int64" else np.int32).astype(src)
    outs = [np.zeros(n, NP[name]) for name in LOW]
    with np.errstate(all="ignore"):
        convert_kernel(src)(x, *outs)
        for name, out in zip(LOW, outs):
            np.testing.assert_array_equal(bits(out), bits(x.astype(NP[name])), err_msg=name)


# Inputs that a second rounding (through float32) gets wrong, with the bits of the one
# rounding: float16, bfloat16, e4m3fn and e5m2 of each (None: not a witness for that type).
ONE_ROUNDING = [
    ("float64", 1 + 2**-11 + 2**-40, [0x3C01, None, None, None]),
    ("float64", 1 + 2**-8 + 2**-30, [None, 0x3F81, None, None]),
    ("float64", 1 + 2**-4 + 2**-30, [None, None, 0x39, None]),
    ("float64", 1 + 2**-3 + 2**-30, [None, None, None, 0x3D]),
    ("int32", 2**24 + 2**16 + 1, [None, 0x4B81, None, None]),
    ("int64", 2**60 + 2**52 + 1, [None, 0x5D81, None, None]),
]


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
@pytest.mark.parametrize("src, value, want", ONE_ROUNDING)
def test_wide_values_round_once(target, src, value, want):
    """The cpu and cuda headers round float64 and integers to the 16- and 8-bit types
    once (minifloat.h's round-to-odd narrowing to float, then the float rounding), on
    values where going through float32 rounds to the other neighbour. Past the fp8
    range the cuda target saturates (test_fp8_saturation.py), the cpu target does not."""
    x = np.full(256, value, dtype=src)
    outs = [np.zeros(256, NP[n]) for n in LOW]
    convert_kernel(src, target)(x, *outs)
    for name, out, w in zip(LOW, outs, want):
        if w is not None:
            assert int(bits(out)[0]) == w, (
                f"{src} {value!r} -> {name}: {int(bits(out)[0]):#x}, expected {w:#x}"
            )
        if target.startswith("cuda") and name.startswith("float8"):
            want_bits = satfinite_reference(x, name)
        else:
            with np.errstate(over="ignore"):
                want_bits = bits(x.astype(NP[name]))
        np.testing.assert_array_equal(bits(out), want_bits, err_msg=name)


def test_fp8_quantize_round_trip():
    """A per-row fp8 quantization as kernels write it: scale, convert, and convert back."""
    rows, cols = 5, 96

    @T.prim_func
    def main(
        X: T.Tensor((rows, cols), "float32"),
        S: T.Tensor((rows,), "float32"),
        Q: T.Tensor((rows, cols), "float8_e4m3fn"),
        D: T.Tensor((rows, cols), "bfloat16"),
    ):
        with T.Kernel(rows, threads=32) as r:
            for j in T.Parallel(cols):
                Q[r, j] = X[r, j] / S[r]
                D[r, j] = T.cast(Q[r, j], "float32") * S[r]

    x = rng.standard_normal((rows, cols)).astype(np.float32) * 10
    s = (np.abs(x).max(axis=1) / 448).astype(np.float32)
    q = np.zeros((rows, cols), ml_dtypes.float8_e4m3fn)
    d = np.zeros((rows, cols), ml_dtypes.bfloat16)
    tilelang.compile(main, target="cpu")(x, s, q, d)
    want_q = (x / s[:, None]).astype(ml_dtypes.float8_e4m3fn)
    np.testing.assert_array_equal(bits(q), bits(want_q))
    want_d = (want_q.astype(np.float32) * s[:, None]).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(bits(d), bits(want_d))


@pytest.mark.parametrize("target", ["cpu"])
def test_e8m0_rounds_float_subnormals_half_up_as_normals(target):
    """On the cpu target (ml_dtypes' rule; the cuda target rounds up as CUDA does,
    test_e8m0_rounding.py) float8_e8m0fnu rounds half up on the mantissa in float's
    subnormal range too:
    1.4 * 2^-127 is nearer 2^-127 (code 0) than 2^-126 (code 1); 1.5 * 2^-127 goes up.
    A float64 far below 2^-127 is code 0 (the least), and zero is NaN (0xff)."""

    @T.prim_func
    def main(
        X: T.Tensor((8,), "float32"),
        D: T.Tensor((8,), "float64"),
        Q: T.Tensor((16,), "float8_e8m0fnu"),
    ):
        with T.Kernel(1, threads=8) as _:
            for i in T.Parallel(8):
                Q[i] = X[i]
                Q[8 + i] = D[i]

    vals = [
        1.4 * 2.0**-127,
        1.5 * 2.0**-127,
        1.4999 * 2.0**-127,
        2.0**-127,
        2.0**-140,
        0.0,
        1.4 * 2.0**-126,
        1.5 * 2.0**-126,
    ]
    x = np.array(vals, np.float32)
    d = np.array(vals[:4] + [2.0**-200, 0.0, 1e300, 1.5 * 2.0**127], np.float64)
    q = np.zeros(16, ml_dtypes.float8_e8m0fnu)
    tilelang.compile(main, target=target)(x, d, q)
    assert bits(q).tolist() == [0, 1, 0, 0, 0, 0xFF, 1, 2, 0, 1, 0, 0, 0, 0xFF, 0xFF, 0xFF]
    with np.errstate(over="ignore"):
        want = np.concatenate([x.astype(q.dtype), d.astype(q.dtype)])
    np.testing.assert_array_equal(bits(q), bits(want))


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
def test_literals_round_once(target):
    """A float64 literal cast to bfloat16 in a kernel rounds once, as a float64 input
    does; one that float holds exactly is written as a float literal."""
    witness = 1 + 2**-8 + 2**-30  # through float32: a tie, to 1.0

    @T.prim_func
    def main(B: T.Tensor((2,), "bfloat16")):
        with T.Kernel(1, threads=1) as _:
            B[0] = T.cast(witness, "bfloat16")
            B[1] = T.cast(0.5, "bfloat16")

    kernel = tilelang.compile(main, target=target)
    src = kernel.get_kernel_source()
    assert "tl::bfloat16_t((float)0x1p-1)" in src and "tl::bfloat16_t(0x1.01000004p+0)" in src
    b = np.zeros(2, ml_dtypes.bfloat16)
    kernel(b)
    assert bits(b).tolist() == [0x3F81, 0x3F00]
