"""The T.* math surface on the CPU target, compared with numpy on random data: every
float function in float32 and float16 (low precision computes in float and rounds
back), TileLang's fast-math and ieee_* names, integer division and bitwise ops,
constants, and the errors for misuse. One kernel computes a whole table of functions
so that each dtype costs one compile."""

import math

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T

rng = np.random.default_rng(7)
N = 1000  # not a multiple of the block size
BLOCK = 64
SPECIALS = 8  # X[:8] holds nan, +-inf, +-0 ...; functions marked finite skip them


def _round_half_away(x):
    return np.trunc(x + np.copysign(0.5, x))


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _f32(v):
    return np.asarray(v).astype(np.float32)


def _floormod32(x, p):
    # The quotient as the kernel computes it (float32); the rest exact, because the host
    # compiler may fuse the multiply-subtract (as GPUs do).
    return x - np.floor(_f32(x) / _f32(p)) * p


# (name, kernel expression of (x, p), numpy reference of (x, p, r), finite only): the
# reference computes in float64 except where the kernel rounds an intermediate to the
# kernel's dtype (r rounds to it) or computes several float32 operations (f32 casts).
# x is any real in [-3, 3] (with halves and specials), p is positive in [0.1, 4].
FLOAT_FUNCS = [
    ("exp", lambda x, p: T.exp(x), lambda x, p, r: np.exp(x), False),
    ("exp2", lambda x, p: T.exp2(x), lambda x, p, r: np.exp2(x), False),
    ("exp10", lambda x, p: T.exp10(x), lambda x, p, r: 10.0**x, False),
    ("log", lambda x, p: T.log(p), lambda x, p, r: np.log(p), False),
    ("log2", lambda x, p: T.log2(p), lambda x, p, r: np.log2(p), False),
    ("log10", lambda x, p: T.log10(p), lambda x, p, r: np.log10(p), False),
    ("log1p", lambda x, p: T.log1p(p), lambda x, p, r: np.log1p(p), False),
    ("sqrt", lambda x, p: T.sqrt(p), lambda x, p, r: np.sqrt(p), False),
    ("rsqrt", lambda x, p: T.rsqrt(p), lambda x, p, r: 1 / np.sqrt(p), False),
    ("abs", lambda x, p: T.abs(x), lambda x, p, r: np.abs(x), False),
    ("floor", lambda x, p: T.floor(x), lambda x, p, r: np.floor(x), False),
    ("ceil", lambda x, p: T.ceil(x), lambda x, p, r: np.ceil(x), False),
    ("round", lambda x, p: T.round(x), lambda x, p, r: np.rint(x), False),
    ("trunc", lambda x, p: T.trunc(x), lambda x, p, r: np.trunc(x), False),
    ("nearbyint", lambda x, p: T.nearbyint(x), lambda x, p, r: np.rint(x), False),
    ("sigmoid", lambda x, p: T.sigmoid(x), lambda x, p, r: 1 / (1 + np.exp(-x)), False),
    ("tanh", lambda x, p: T.tanh(x), lambda x, p, r: np.tanh(x), False),
    ("sin", lambda x, p: T.sin(x), lambda x, p, r: np.sin(x), False),
    ("cos", lambda x, p: T.cos(x), lambda x, p, r: np.cos(x), False),
    ("tan", lambda x, p: T.tan(x * 0.4), lambda x, p, r: np.tan(r(x * r(0.4))), False),
    ("sinh", lambda x, p: T.sinh(x), lambda x, p, r: np.sinh(x), False),
    ("cosh", lambda x, p: T.cosh(x), lambda x, p, r: np.cosh(x), False),
    ("erf", lambda x, p: T.erf(x), lambda x, p, r: _erf(x), False),
    ("pow", lambda x, p: T.pow(p, x), lambda x, p, r: np.power(p, x), False),
    ("fmod", lambda x, p: T.fmod(x, p), lambda x, p, r: np.fmod(x, p), False),
    # A NaN operand gives the other operand, as the GPU's max does (numpy's fmax; X[0]
    # is NaN); test_minmax_nan.py checks the bits.
    ("max", lambda x, p: T.max(x, p), lambda x, p, r: np.fmax(x, p), False),
    ("min", lambda x, p: T.min(x, p), lambda x, p, r: np.fmin(x, p), False),
    ("max nan second", lambda x, p: T.max(p, x), lambda x, p, r: np.fmax(p, x), False),
    ("min nan second", lambda x, p: T.min(p, x), lambda x, p, r: np.fmin(p, x), False),
    ("max3", lambda x, p: T.max(x, p, -x), lambda x, p, r: np.maximum(np.maximum(x, p), -x), True),
    (
        "min3",
        lambda x, p: T.min(x, -p, 0.5),
        lambda x, p, r: np.minimum(np.minimum(x, -p), 0.5),
        True,
    ),
    (
        "T.max3",
        lambda x, p: T.max3(x, p, -x),
        lambda x, p, r: np.maximum(np.maximum(x, p), -x),
        True,
    ),
    ("clamp", lambda x, p: T.clamp(x, -1.0, 1.5), lambda x, p, r: np.clip(x, -1.0, 1.5), True),
    (
        "if_then_else",
        lambda x, p: T.if_then_else(x > p, x, p * 2.0),
        lambda x, p, r: np.where(x > p, x, p * 2),
        True,
    ),
    ("floordiv", lambda x, p: T.floordiv(x, p), lambda x, p, r: np.floor(_f32(x) / _f32(p)), True),
    ("floormod", lambda x, p: T.floormod(x, p), lambda x, p, r: _floormod32(x, p), True),
    (
        "isnan",
        lambda x, p: T.if_then_else(T.isnan(x), 1.0, 0.0),
        lambda x, p, r: np.isnan(x),
        False,
    ),
    (
        "isinf",
        lambda x, p: T.if_then_else(T.isinf(x), 1.0, 0.0),
        lambda x, p, r: np.isinf(x),
        False,
    ),
    (
        "isfinite",
        lambda x, p: T.if_then_else(T.isfinite(x), 1.0, 0.0),
        lambda x, p, r: np.isfinite(x),
        False,
    ),
    # TileLang's fast-math names compute the precise functions on the CPU.
    ("__exp", lambda x, p: T.__exp(x), lambda x, p, r: np.exp(x), False),
    ("__exp10", lambda x, p: T.__exp10(x), lambda x, p, r: 10.0**x, False),
    ("__log", lambda x, p: T.__log(p), lambda x, p, r: np.log(p), False),
    ("__log2", lambda x, p: T.__log2(p), lambda x, p, r: np.log2(p), False),
    ("__log10", lambda x, p: T.__log10(p), lambda x, p, r: np.log10(p), False),
    ("__tan", lambda x, p: T.__tan(x * 0.4), lambda x, p, r: np.tan(r(x * r(0.4))), False),
    ("__cos", lambda x, p: T.__cos(x), lambda x, p, r: np.cos(x), False),
    ("__sin", lambda x, p: T.__sin(x), lambda x, p, r: np.sin(x), False),
    ("fast_rcp", lambda x, p: T.fast_rcp(p), lambda x, p, r: 1 / p, False),
    # Rounding-mode operations, round-to-nearest.
    ("ieee_add", lambda x, p: T.ieee_add(x, p), lambda x, p, r: x + p, False),
    ("ieee_sub", lambda x, p: T.ieee_sub(x, p, rounding_mode="rn"), lambda x, p, r: x - p, False),
    ("ieee_mul", lambda x, p: T.ieee_mul(x, p), lambda x, p, r: x * p, False),
    ("ieee_fdiv", lambda x, p: T.ieee_fdiv(x, p), lambda x, p, r: x / p, False),
    ("ieee_fmaf", lambda x, p: T.ieee_fmaf(x, p, x), lambda x, p, r: x * p + x, False),
    ("ieee_frcp", lambda x, p: T.ieee_frcp(p), lambda x, p, r: 1 / p, False),
    ("ieee_fsqrt", lambda x, p: T.ieee_fsqrt(p), lambda x, p, r: np.sqrt(p), False),
    ("ieee_frsqrt", lambda x, p: T.ieee_frsqrt(p), lambda x, p, r: 1 / np.sqrt(p), False),
]


def float_table_kernel(dtype):
    F = len(FLOAT_FUNCS)

    @T.prim_func
    def main(X: T.Tensor((N,), dtype), P: T.Tensor((N,), dtype), O: T.Tensor((F, N), dtype)):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=BLOCK) as bx:
            for i in T.Parallel(BLOCK):
                for f, entry in enumerate(FLOAT_FUNCS):
                    O[f, bx * BLOCK + i] = entry[1](X[bx * BLOCK + i], P[bx * BLOCK + i])

    return tilelang.compile(main, target="cpu")


def float_inputs(dtype):
    x = rng.uniform(-3, 3, N)
    x[SPECIALS : SPECIALS + 40] = np.arange(-20, 20) * 0.5  # exact halves for rounding
    x[SPECIALS + 40 : SPECIALS + 80] = np.arange(-20, 20) * 0.5 + 0.25
    x[:SPECIALS] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -2.5, 2.5]
    p = rng.uniform(0.1, 4, N)
    return x.astype(dtype), p.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_float_functions_match_numpy(dtype):
    np_dtype = np.dtype(dtype)
    kernel = float_table_kernel(dtype)
    x, p = float_inputs(np_dtype)
    out = np.full((len(FLOAT_FUNCS), N), 7, np_dtype)
    with np.errstate(all="ignore"):
        kernel(x, p, out)
        x64, p64 = x.astype(np.float64), p.astype(np.float64)
        for f, (name, _, ref, finite_only) in enumerate(FLOAT_FUNCS):

            def r(v):
                return np.asarray(v).astype(np_dtype).astype(np.float64)

            want = np.asarray(ref(x64, p64, r), np.float64).astype(np_dtype)
            got = out[f]
            if finite_only:
                want, got = want[SPECIALS:], got[SPECIALS:]
            # float32: a few ulp of libm; float16: the float result rounded once more.
            rtol, atol = (4e-6, 1e-30) if dtype == "float32" else (1e-3, 6e-8)
            if name == "floormod":  # cancellation: the error is one ulp of x, not of the result
                atol = 1e-6 if dtype == "float32" else 2e-3
            np.testing.assert_allclose(
                got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, err_msg=name
            )


def test_rounding_functions_are_exact():
    kernel = float_table_kernel("float32")
    x, p = float_inputs(np.float32)
    out = np.zeros((len(FLOAT_FUNCS), N), np.float32)
    kernel(x, p, out)
    row = {name: i for i, (name, *_) in enumerate(FLOAT_FUNCS)}
    halves = x[SPECIALS : SPECIALS + 40]  # -10.0, -9.5, ... 9.5
    # T.round rounds halves to even (TileLang's default), as T.nearbyint does.
    np.testing.assert_array_equal(out[row["round"], SPECIALS : SPECIALS + 40], np.rint(halves))
    np.testing.assert_array_equal(out[row["nearbyint"], SPECIALS : SPECIALS + 40], np.rint(halves))
    assert x[SPECIALS + 11] == -4.5
    assert out[row["round"], SPECIALS + 11] == -4.0
    assert out[row["nearbyint"], SPECIALS + 11] == -4.0
    for name in ("floor", "ceil", "trunc", "abs"):
        np.testing.assert_array_equal(out[row[name]], getattr(np, name)(x), err_msg=name)
    assert np.signbit(out[row["abs"], 4]) == 0  # abs(-0.0) is +0.0


def low_precision_kernel(dtype):
    @T.prim_func
    def main(
        A: T.Tensor((N,), dtype),
        B: T.Tensor((N,), dtype),
        C: T.Tensor((N,), dtype),
        O: T.Tensor((5, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=BLOCK) as bx:
            for i in T.Parallel(BLOCK):
                n = bx * BLOCK + i
                O[0, n] = A[n] + B[n]
                O[1, n] = A[n] * B[n] + C[n]  # two roundings to dtype, as on the GPU
                O[2, n] = A[n] / C[n]
                O[3, n] = T.sqrt(T.abs(A[n]))
                O[4, n] = -A[n]

    return tilelang.compile(main, target="cpu")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_arithmetic_rounds_per_operation(dtype):
    """Each operation computes in float and rounds back to the dtype, so the results
    equal numpy's (ml_dtypes') operation-by-operation results bit for bit."""
    np_dtype = np.dtype(dtype)
    a, b, c = (rng.standard_normal(N).astype(np_dtype) for _ in range(3))
    c[c == 0] = 1
    out = np.zeros((5, N), np_dtype)
    low_precision_kernel(dtype)(a, b, c, out)
    want = [a + b, a * b + c, a / c, np.sqrt(np.abs(a)), -a]
    for k, w in enumerate(want):
        np.testing.assert_array_equal(out[k].view(np.uint16), w.view(np.uint16), err_msg=str(k))


# (name, kernel expression of (a, b, s), numpy reference) on int32: a in [-1000, 1000],
# b nonzero in [-50, 50], s a shift amount in [0, 15].
INT_FUNCS = [
    ("floordiv", lambda a, b, s: T.floordiv(a, b), lambda a, b, s: a // b),
    ("floormod", lambda a, b, s: T.floormod(a, b), lambda a, b, s: a % b),
    ("//", lambda a, b, s: a // b, lambda a, b, s: a // b),
    ("%", lambda a, b, s: a % b, lambda a, b, s: a % b),
    ("ceildiv", lambda a, b, s: T.ceildiv(a, T.abs(b)), lambda a, b, s: -(-a // np.abs(b))),
    ("truncdiv", lambda a, b, s: T.truncdiv(a, b), lambda a, b, s: np.fix(a / b).astype(np.int32)),
    ("truncmod", lambda a, b, s: T.truncmod(a, b), lambda a, b, s: np.fmod(a, b)),
    ("bitwise_and", lambda a, b, s: T.bitwise_and(a, b), lambda a, b, s: a & b),
    ("bitwise_or", lambda a, b, s: T.bitwise_or(a, b), lambda a, b, s: a | b),
    ("bitwise_xor", lambda a, b, s: T.bitwise_xor(a, b), lambda a, b, s: a ^ b),
    ("bitwise_not", lambda a, b, s: T.bitwise_not(a), lambda a, b, s: ~a),
    ("&", lambda a, b, s: a & b, lambda a, b, s: a & b),
    ("|", lambda a, b, s: a | b, lambda a, b, s: a | b),
    ("^", lambda a, b, s: a ^ b, lambda a, b, s: a ^ b),
    ("~", lambda a, b, s: ~a, lambda a, b, s: ~a),
    ("shift_left", lambda a, b, s: T.shift_left(T.abs(a), s), lambda a, b, s: np.abs(a) << s),
    ("<<", lambda a, b, s: T.abs(a) << s, lambda a, b, s: np.abs(a) << s),
    ("shift_right", lambda a, b, s: T.shift_right(a, s), lambda a, b, s: a >> s),
    (">>", lambda a, b, s: a >> s, lambda a, b, s: a >> s),
    (
        ">> unsigned",
        lambda a, b, s: T.cast(T.cast(a, "uint32") >> T.cast(s, "uint32"), "int32"),
        lambda a, b, s: (a.astype(np.uint32) >> s.astype(np.uint32)).astype(np.int32),
    ),
    ("abs", lambda a, b, s: T.abs(a), lambda a, b, s: np.abs(a)),
    ("max", lambda a, b, s: T.max(a, b), lambda a, b, s: np.maximum(a, b)),
    ("min", lambda a, b, s: T.min(a, b, s), lambda a, b, s: np.minimum(np.minimum(a, b), s)),
    ("clamp", lambda a, b, s: T.clamp(a, -100, 100), lambda a, b, s: np.clip(a, -100, 100)),
    ("if_then_else", lambda a, b, s: T.if_then_else(a > b, a, b), lambda a, b, s: np.maximum(a, b)),
    ("max_value", lambda a, b, s: T.max_value("int32"), lambda a, b, s: np.int32(2**31 - 1)),
    ("min_value", lambda a, b, s: T.min_value("int32"), lambda a, b, s: np.int32(-(2**31))),
    ("max_value i8", lambda a, b, s: T.max_value("int8"), lambda a, b, s: 127),
    ("max_value u16", lambda a, b, s: T.max_value("uint16"), lambda a, b, s: 65535),
    ("min_value u8", lambda a, b, s: T.min_value("uint8"), lambda a, b, s: 0),
]


@pytest.fixture(scope="module")
def int_kernel():
    F = len(INT_FUNCS)

    @T.prim_func
    def main(
        A: T.Tensor((N,), "int32"),
        B: T.Tensor((N,), "int32"),
        S: T.Tensor((N,), "int32"),
        O: T.Tensor((F, N), "int32"),
    ):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=BLOCK) as bx:
            for i in T.Parallel(BLOCK):
                n = bx * BLOCK + i
                for f, entry in enumerate(INT_FUNCS):
                    O[f, n] = entry[1](A[n], B[n], S[n])

    return tilelang.compile(main, target="cpu")


def test_integer_and_bitwise_functions_match_numpy(int_kernel):
    a = rng.integers(-1000, 1001, N).astype(np.int32)
    b = rng.integers(1, 51, N).astype(np.int32) * rng.choice([-1, 1], N).astype(np.int32)
    s = rng.integers(0, 16, N).astype(np.int32)
    out = np.zeros((len(INT_FUNCS), N), np.int32)
    int_kernel(a, b, s, out)
    for f, (name, _, ref) in enumerate(INT_FUNCS):
        want = np.broadcast_to(np.asarray(ref(a, b, s)), (N,)).astype(np.int32)
        np.testing.assert_array_equal(out[f], want, err_msg=name)


def test_float_constants():
    names = ["float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]

    @T.prim_func
    def main(O: T.Tensor((3, 5), "float32"), H: T.Tensor((2,), "float16")):
        with T.Kernel(1, threads=1):
            for k, name in enumerate(names):
                O[0, k] = T.max_value(name)
                O[1, k] = T.min_value(name)
                O[2, k] = T.infinity(name)
            H[0] = T.infinity("float16")
            H[1] = -T.infinity("float16")

    out = np.zeros((3, 5), np.float32)
    h = np.zeros(2, np.float16)
    tilelang.compile(main, target="cpu")(out, h)
    finfo = [np.finfo(np.float32), np.finfo(np.float16)] + [
        ml_dtypes.finfo(getattr(ml_dtypes, n)) for n in names[2:]
    ]
    np.testing.assert_array_equal(out[0], [float(f.max) for f in finfo])
    np.testing.assert_array_equal(out[1], [float(f.min) for f in finfo])
    assert np.all(np.isposinf(out[2]))
    assert h.view(np.uint16).tolist() == [0x7C00, 0xFC00]


def test_integer_python_values_stay_python():
    assert T.ceildiv(10, 4) == 3
    assert T.floordiv(-7, 2) == -4
    assert T.floormod(-7, 2) == 1
    assert T.bitwise_and(12, 10) == 8
    assert T.shift_left(1, 5) == 32
    assert T.shift_right(-16, 2) == -4


def _trace(body):
    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), I: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=1):
            body(A, I)

    return main


def test_rounding_mode_errors():
    with pytest.raises(ValueError, match="Invalid rounding mode 'up' for T.ieee_fdiv"):
        _trace(lambda A, I: A.__setitem__(0, T.ieee_fdiv(A[0], A[1], rounding_mode="up")))
    with pytest.raises(ValueError, match="T.ieee_frsqrt rounds to nearest only"):
        _trace(lambda A, I: A.__setitem__(0, T.ieee_frsqrt(A[0], rounding_mode="rz")))


def test_bitwise_misuse_errors():
    with pytest.raises(tilelang.TileLangError) as info:
        _trace(lambda A, I: I.__setitem__(0, T.bitwise_and(A[0], I[1])))
    message = str(info.value)
    assert "bitwise operator '&' needs integer operands, got float32 and int32" in message
    assert "T.reinterpret" in message
    with pytest.raises(tilelang.TileLangError, match="T.bitwise_not needs an integer, got bool"):
        _trace(lambda A, I: I.__setitem__(0, T.bitwise_not(I[0] > 1)))


@pytest.mark.parametrize(
    "name", ["__exp", "__exp10", "__log", "__log2", "__log10", "__tan", "__cos", "__sin"]
)
def test_fast_math_names_take_floats_only(name):
    """TileLang's fast-math names accept float16/bfloat16/float32/float64 operands and
    refuse integer, bool and fp8 ones with a TypeError naming the dtype."""
    fn = getattr(T, name)
    for dtype in ("float16", "bfloat16", "float32", "float64"):
        assert fn(T.Var("v", dtype)).dtype == dtype
    for dtype in ("bool", "int8", "int32", "uint64", "float8_e4m3fn"):
        with pytest.raises(
            TypeError, match=rf"T\.{name} only supports floating-point inputs, but got {dtype}"
        ):
            fn(T.Var("v", dtype))


ROUNDING_CASES = [
    (target, dtype)
    for target in ("cpu", "cuda -arch=sm_80 -emulate", "metal -emulate")
    for dtype in ("float32", "float64", "float16", "bfloat16")
    if not (target.startswith("metal") and dtype == "float64")  # Metal has no float64
]


@pytest.mark.parametrize(("target", "dtype"), ROUNDING_CASES)
def test_round_and_nearbyint_agree_on_every_target(target, dtype):
    """Halves: T.round(x, "ties-away-from-zero") away from zero, T.round(x) and
    T.nearbyint to even (TileLang's default), the same on every target and dtype."""
    import ml_dtypes

    np_dtype = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}.get(dtype, np.dtype(dtype))

    @T.prim_func
    def main(
        X: T.Tensor((16,), dtype),
        R: T.Tensor((16,), dtype),
        E: T.Tensor((16,), dtype),
        D: T.Tensor((16,), dtype),
    ):
        with T.Kernel(1, threads=16):
            for i in T.Parallel(16):
                R[i] = T.round(X[i], "ties-away-from-zero")
                E[i] = T.nearbyint(X[i])
                D[i] = T.round(X[i])

    x = np.array(
        [-4.5, -3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 4.5, 1.25, -1.75, 7.0, -0.0, 2.75, -6.5]
    )
    r, e, d = np.zeros(16, np_dtype), np.zeros(16, np_dtype), np.zeros(16, np_dtype)
    tilelang.compile(main, target=target)(x.astype(np_dtype), r, e, d)
    np.testing.assert_array_equal(r.astype(np.float64), np.sign(x) * np.floor(np.abs(x) + 0.5))
    np.testing.assert_array_equal(e.astype(np.float64), np.rint(x))
    np.testing.assert_array_equal(d.astype(np.float64), np.rint(x))


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_round_takes_tilelang_rounding_modes(target, dtype):
    # T.round(x, "ties-to-even") is T.round(x) and T.nearbyint; "ties-away-from-zero" is roundf;
    # integers pass through unchanged.
    @T.prim_func
    def main(
        A: T.Tensor((64,), dtype),
        I: T.Tensor((64,), "int32"),
        O: T.Tensor((3, 64), dtype),
        J: T.Tensor((64,), "int32"),
    ):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                O[0, i] = T.round(A[i], "ties-away-from-zero")
                O[1, i] = T.round(A[i], rounding_mode="ties-to-even")
                O[2, i] = T.round(A[i])
                J[i] = T.round(I[i], "ties-to-even")

    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    halves = np.arange(-32, 32) * 0.5 + np.random.default_rng(8).choice([0.0, 0.25], 64)
    a = halves.astype(np_dtype)
    ints = np.random.default_rng(9).integers(-1000, 1000, 64).astype(np.int32)
    o, j = np.zeros((3, 64), np_dtype), np.zeros(64, np.int32)
    tilelang.compile(main, target=target)(a, ints, o, j)
    x = a.astype(np.float64)
    np.testing.assert_array_equal(o[0].astype(np.float64), _round_half_away(x))
    np.testing.assert_array_equal(o[1].astype(np.float64), np.rint(x))
    np.testing.assert_array_equal(o[2].astype(np.float64), np.rint(x))
    np.testing.assert_array_equal(j, ints)


def test_round_refuses_other_modes():
    with pytest.raises(
        ValueError,
        match="T.round rounding_mode must be one of 'ties-away-from-zero', 'ties-to-even', "
        "got 'up'",
    ):
        _trace(lambda A, I: A.__setitem__(0, T.round(A[1], "up")))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32"])
def test_cuda_spells_abs_round_and_class_tests_in_the_operand_precision(dtype):
    """On cuda (and cpu) float abs is tl::fabs and the half-away round
    tl::RoundTiesAwayFromZero, TileLang's names; T.isnan / isinf / isfinite test a float
    in float (a conversion to double costs a float64 instruction on the GPU), a 16-bit
    float through float and an integer through double. Values: test_math's tables and
    the rounding tests above, on the emulator too."""

    @T.prim_func
    def main(X: T.Tensor((32,), dtype), Y: T.Tensor((32,), dtype), F: T.Tensor((32,), "int32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(32):
                Y[i] = T.abs(X[i]) + T.round(X[i], "ties-away-from-zero")
                F[i] = T.if_then_else(T.isfinite(X[i]) and not T.isnan(X[i]), 1, 0)

    src = tilelang.compile(main, target="cuda -arch=sm_80 -emulate").get_kernel_source()
    cast = {"float32": "", "float64": "", "float16": "(float)", "int32": "(double)"}[dtype]
    assert f"tl::isfinite({cast}X" in src and f"tl::isnan({cast}X" in src, src
    if dtype != "int32":
        assert "tl::fabs(" in src and "tl::RoundTiesAwayFromZero(" in src, src
    x = np.array([np.nan, np.inf, -np.inf, -2.5] + list(range(28)), dtype=np.float64)
    if dtype == "int32":
        x = np.arange(-16, 16)
    x = x.astype(np.float16 if dtype == "float16" else dtype)
    y, f = np.zeros(32, x.dtype), np.zeros(32, np.int32)
    tilelang.compile(main, target="cuda -arch=sm_80 -emulate")(x, y, f)
    np.testing.assert_array_equal(f, np.isfinite(x.astype(np.float64)).astype(np.int32))
    finite = np.isfinite(x.astype(np.float64))
    xf = x.astype(np.float64)[finite]
    ref = np.abs(xf) + (xf if dtype == "int32" else _round_half_away(xf))
    np.testing.assert_array_equal(y[finite].astype(np.float64), ref)
