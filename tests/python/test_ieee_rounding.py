"""T.ieee_add / sub / mul / fdiv / frcp / fsqrt / fmaf with rounding_mode "rz", "ru" and
"rd" (CUDA's __fadd_rz family; fmaf of float64 too, CUDA's __fma_rz) on the cpu target
and in the CUDA emulator (sm_80): bit for bit against an exact reference (Python
fractions rounded per mode), on random values, random bit patterns (subnormals, huge
values that overflow) and special values (zeros of both signs, infinities, exact ties);
T.ieee_frsqrt correctly rounded (CUDA's __frsqrt_rn); and the frontend's errors."""

import math
from fractions import Fraction

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_device_sm80 import needs_nvrtc, nvrtc_compile

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate"]
MODES = ["rz", "ru", "rd"]
OPS = {  # name: (arity, T function, exact value of Fractions)
    "add": (2, T.ieee_add, lambda x, y, z: x + y),
    "sub": (2, T.ieee_sub, lambda x, y, z: x - y),
    "mul": (2, T.ieee_mul, lambda x, y, z: x * y),
    "fdiv": (2, T.ieee_fdiv, lambda x, y, z: x / y),
    "frcp": (1, T.ieee_frcp, lambda x, y, z: 1 / x),
    "fsqrt": (1, T.ieee_fsqrt, None),
    "fmaf": (3, T.ieee_fmaf, lambda x, y, z: x * y + z),
}
FORMATS = {"float32": (24, -126, 127), "float64": (53, -1022, 1023)}  # precision, emin, emax
N = 512


def round_fraction(q, mode, dtype, negative_zero=False):
    """The float of `dtype` that the exact q rounds to under `mode` ("rn", "rz", "ru",
    "rd")."""
    p, emin, emax = FORMATS[dtype]
    if q == 0:
        return -0.0 if negative_zero else 0.0
    neg, a = q < 0, abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    ulp = Fraction(2) ** (max(e, emin) - (p - 1))
    units = a / ulp
    n, rem = math.floor(units), units - math.floor(units)
    if mode == "rn":  # to nearest, ties to even
        up = rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1)
    else:
        up = {"rz": False, "ru": not neg, "rd": neg}[mode] and rem != 0
    n += up
    biggest = (2**p - 1) * Fraction(2) ** (emax - p + 1)
    value = n * ulp
    if value > biggest:
        to_inf = mode == "rn" or (mode == "ru" and not neg) or (mode == "rd" and neg)
        value = math.inf if to_inf else biggest
    v = float(value)
    return -v if neg else v


def sqrt_fraction(x, mode, dtype):
    """sqrt(x) rounded under `mode`: the floor of the square root in units of the ulp."""
    p = FORMATS[dtype][0]
    lx = x.numerator.bit_length() - x.denominator.bit_length()  # floor(log2 x), or one more
    if Fraction(2) ** lx > x:
        lx -= 1
    ulp = Fraction(2) ** (lx // 2 - (p - 1))  # sqrt(x) lies in [2^(lx // 2), 2^(lx // 2 + 1))
    # floor(sqrt(x) / ulp) = isqrt(floor(x / ulp^2)) (exact: floors of nested monotone maps)
    n = math.isqrt(math.floor(x / (ulp * ulp)))
    exact = n * n * ulp * ulp == x
    if not exact and mode == "ru":
        n += 1
    return round_fraction(n * ulp, "rz", dtype)


def reference(op, mode, dtype, x, y, z):
    arity, _, exact = OPS[op]
    npt = np.dtype(dtype).type
    with np.errstate(all="ignore"):
        if op == "fsqrt":
            if not (np.isfinite(x) and x > 0):
                return np.sqrt(npt(x))
            return npt(sqrt_fraction(Fraction(float(x)), mode, dtype))
        args = [x, y, z][:arity]
        if not all(np.isfinite(a) for a in args) or (op in ("fdiv", "frcp") and args[-1] == 0):
            nearest = {"add": x + y, "sub": x - y, "mul": x * y, "fdiv": x / y, "frcp": 1 / x}
            nearest["fmaf"] = np.float64(x) * np.float64(y) + np.float64(z)
            return npt(nearest[op])
        fx, fy, fz = (
            Fraction(float(a)) if k < arity else Fraction(0) for k, a in enumerate((x, y, z))
        )
        q = exact(fx, fy, fz)
        if q == 0:  # the sign of an exact zero: IEEE 754's rules
            terms = {"add": (x, y), "sub": (x, -y), "fmaf": (np.float64(x) * np.float64(y), z)}
            if op in terms:
                a, b = terms[op]
                neg = (np.signbit(a) and np.signbit(b)) or (
                    mode == "rd"
                    and not (a == 0 and b == 0 and not np.signbit(a) and not np.signbit(b))
                )
            else:  # products and quotients: the sign of the operands
                neg = np.signbit(x) != np.signbit(y) if op in ("mul", "fdiv") else np.signbit(x)
            return npt(-0.0 if neg else 0.0)
        return npt(round_fraction(q, mode, dtype))


def inputs(dtype, rng):
    npt, bits = (np.float32, np.uint32) if dtype == "float32" else (np.float64, np.uint64)
    normal = rng.standard_normal((3, N // 2)).astype(npt)
    width = 32 if dtype == "float32" else 64
    raw = rng.integers(0, 2**width - 1, (3, N // 2), dtype=np.uint64, endpoint=True).astype(bits)
    patterns = raw.view(npt).copy()
    patterns[~np.isfinite(patterns)] = npt(1.5)
    v = np.concatenate([normal, patterns], axis=1)
    tiny, huge = np.finfo(npt).smallest_subnormal, np.finfo(npt).max
    specials = [  # (x, y, z) rows: zeros, infinities, ties and overflow
        (0.0, -0.0, 0.0), (-0.0, -0.0, -0.0), (1.0, -1.0, 0.0), (3.0, -3.0, -0.0),
        (huge, huge, -huge), (-huge, 2.0, huge), (np.inf, 1.0, 2.0), (1.0, 0.0, -np.inf),
        (1.0, 3.0, tiny), (tiny, 0.5, -tiny), (2.0, 4.0, 1.0), (1.0 + 2.0**-23, 1.0, 2.0**-30),
        (-1.0, 3.0, 2.0**-40), (tiny, -tiny, 1.0), (5.0, 7.0, -35.0), (-2.0, 2.0**-100, 2.0**-200),
    ]  # fmt: skip
    for k, row in enumerate(specials):
        v[:, k] = np.array(row, dtype=npt)
    return v


def kernel_of(dtype, ops):
    rows = [(op, mode) for op in ops for mode in MODES]

    @T.prim_func
    def main(V: T.Tensor((3, N), dtype), O: T.Tensor((len(rows), N), dtype)):
        with T.Kernel(N // 128, threads=128) as bx:
            i = bx * 128 + T.get_thread_binding()
            for r, (op, mode) in enumerate(rows):
                arity, fn, _ = OPS[op]
                O[r, i] = fn(*[V[k, i] for k in range(arity)], rounding_mode=mode)

    return main, rows


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_directed_rounding_bit_exact(target, dtype):
    func, rows = kernel_of(dtype, list(OPS))
    kernel = tilelang.compile(func, out_idx=[1], target=target)
    v = inputs(dtype, np.random.default_rng(2 if dtype == "float32" else 3))
    out = kernel(v)
    bits = np.uint32 if dtype == "float32" else np.uint64
    for r, (op, mode) in enumerate(rows):
        ref = np.array([reference(op, mode, dtype, *v[:, i]) for i in range(N)], dtype=dtype)
        got = out[r]
        same = (got.view(bits) == ref.view(bits)) | (np.isnan(got) & np.isnan(ref))
        bad = np.flatnonzero(~same)
        assert bad.size == 0, (
            f"{op} {mode} {dtype}: {bad.size} of {N} differ, first at {bad[0]}: inputs "
            f"{v[:, bad[0]].tolist()}, got {got[bad[0]]!r}, expected {ref[bad[0]]!r}"
        )


def test_reference_against_known_patterns():
    """The exact reference on values whose roundings are known by hand."""
    third = Fraction(1, 3)  # 0x3eaaaaab to nearest, 0x3eaaaaaa toward zero and down
    as_bits = lambda f: int(np.float32(f).view(np.uint32))
    assert as_bits(round_fraction(third, "rz", "float32")) == 0x3EAAAAAA
    assert as_bits(round_fraction(third, "rd", "float32")) == 0x3EAAAAAA
    assert as_bits(round_fraction(third, "ru", "float32")) == 0x3EAAAAAB
    assert as_bits(round_fraction(-third, "rd", "float32")) == 0xBEAAAAAB
    big = Fraction(2) ** 128
    assert round_fraction(big, "rz", "float32") == float(np.finfo(np.float32).max)
    assert round_fraction(big, "ru", "float32") == math.inf
    assert round_fraction(Fraction(1, 2**200), "ru", "float32") == float(
        np.finfo(np.float32).smallest_subnormal
    )
    assert as_bits(sqrt_fraction(Fraction(2), "rz", "float32")) == 0x3FB504F3
    assert as_bits(sqrt_fraction(Fraction(2), "ru", "float32")) == 0x3FB504F4


def test_rounding_mode_errors():
    with pytest.raises(ValueError, match="Invalid rounding mode 'up' for T.ieee_fdiv"):
        T.ieee_fdiv(1.0, 2.0, "up")
    with pytest.raises(ValueError, match="Only rounding mode 'rn' is available for half precision"):

        @T.prim_func
        def half(A: T.Tensor((4,), "float16")):
            with T.Kernel(1, threads=4):
                A[0] = T.ieee_add(A[1], A[2], rounding_mode="rz")

    with pytest.raises(ValueError, match="frsqrt is not supported for float64"):

        @T.prim_func
        def rsqrt64(A: T.Tensor((4,), "float64")):
            with T.Kernel(1, threads=4):
                A[0] = T.ieee_frsqrt(A[1])

    with pytest.raises(ValueError, match="T.ieee_frsqrt rounds to nearest only"):
        T.ieee_frsqrt(2.0, "rz")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_multiply_add_to_nearest(target, dtype):
    """T.ieee_fmaf rounds x * y + z once (CUDA's fmaf / fma; the emulated CUDA header
    once lacked tl::fma): bit for bit against the exact reference rounded to nearest."""
    n = 256

    @T.prim_func
    def main(V: T.Tensor((3, n), dtype), O: T.Tensor((n,), dtype)):
        with T.Kernel(2, threads=128) as bx:
            i = bx * 128 + T.get_thread_binding()
            O[i] = T.ieee_fmaf(V[0, i], V[1, i], V[2, i])

    kernel = tilelang.compile(main, out_idx=[1], target=target)
    rng = np.random.default_rng(9)
    v = rng.standard_normal((3, n)).astype(dtype)
    v[2] = -(v[0].astype(np.float64) * v[1]).astype(dtype)  # cancellation: the fused low bits show
    got = kernel(v)
    for i in range(n):
        exact = Fraction(float(v[0, i])) * Fraction(float(v[1, i])) + Fraction(float(v[2, i]))
        expected = np.dtype(dtype).type(round_fraction(exact, "rn", dtype))
        assert got[i] == expected, (i, got[i], expected)


def rsqrt_reference(x):
    """1 / sqrt(x) of a float32 rounded to nearest, decided exactly: among the estimate and
    its neighbours, the float whose rounding interval holds the value (y > m exactly when
    m^2 x < 1, for y = 1 / sqrt(x) and a midpoint m)."""
    if not (np.isfinite(x) and x > 0):
        with np.errstate(all="ignore"):
            return np.float32(1) / np.sqrt(np.float32(x))
    c = np.float32(1 / np.sqrt(np.float64(x)))
    for cand in (np.nextafter(c, np.float32(0)), c, np.nextafter(c, np.float32(np.inf))):
        lo = (Fraction(float(cand)) + Fraction(float(np.nextafter(cand, np.float32(0))))) / 2
        hi = (Fraction(float(cand)) + Fraction(float(np.nextafter(cand, np.float32(np.inf))))) / 2
        if lo * lo * Fraction(float(x)) < 1 < hi * hi * Fraction(float(x)):
            return cand
    raise AssertionError(f"no float rounds 1 / sqrt({x!r})")


@pytest.mark.parametrize("target", TARGETS)
def test_reciprocal_sqrt_correctly_rounded(target):
    """T.ieee_frsqrt is CUDA's __frsqrt_rn, correctly rounded (T.rsqrt is the fast
    approximation): bit for bit against the exact choice, on random values, random bit
    patterns (subnormals, huge values) and zeros, infinities and negatives; float16 goes
    through float32."""
    n = 512

    @T.prim_func
    def main(V: T.Tensor((n,), "float32"), O: T.Tensor((n,), "float32")):
        with T.Kernel(n // 128, threads=128) as bx:
            i = bx * 128 + T.get_thread_binding()
            O[i] = T.ieee_frsqrt(V[i])

    kernel = tilelang.compile(main, out_idx=[1], target=target)
    rng = np.random.default_rng(11)
    v = np.concatenate(
        [
            np.abs(rng.standard_normal(n // 2)).astype(np.float32),
            rng.integers(0, 2**31 - 1, n // 2, dtype=np.uint32).view(np.float32),
        ]
    )
    v[:8] = [0.0, -0.0, np.inf, -1.0, np.float32(1.4e-45), 4.0, 2.0, np.finfo(np.float32).max]
    got = kernel(v)
    ref = np.array([rsqrt_reference(x) for x in v], dtype=np.float32)
    same = (got.view(np.uint32) == ref.view(np.uint32)) | (np.isnan(got) & np.isnan(ref))
    assert same.all(), [(v[i], got[i], ref[i]) for i in np.flatnonzero(~same)[:4]]

    @T.prim_func
    def half(V: T.Tensor((128,), "float16"), O: T.Tensor((128,), "float16")):
        with T.Kernel(1, threads=128):
            O[T.get_thread_binding()] = T.ieee_frsqrt(V[T.get_thread_binding()])

    h = (np.abs(rng.standard_normal(128)) + 0.01).astype(np.float16)
    out = tilelang.compile(half, out_idx=[1], target=target)(h)
    expected = np.array([rsqrt_reference(np.float32(x)) for x in h]).astype(np.float16)
    np.testing.assert_array_equal(out, expected)


@needs_nvrtc
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_directed_rounding_compiles_to_cuda_intrinsics(dtype):
    """On a GPU every op and mode is CUDA's own intrinsic (__fadd_rz, __dsqrt_ru, ...):
    the kernel compiles with NVRTC for sm_90a and its PTX holds each directed form."""
    func, _ = kernel_of(dtype, list(OPS))
    source = tilelang.compile(func, out_idx=[1], target="cuda -arch=sm_90a").get_kernel_source()
    ok, log, ptx = nvrtc_compile("sm_90a", source, want_ptx=True)
    assert ok, log
    suffix = "f32" if dtype == "float32" else "f64"
    ptx_mode = {"rz": "rz", "ru": "rp", "rd": "rm"}  # PTX: toward zero, +inf, -inf
    for mode in MODES:
        for inst in ("add", "mul", "div", "sqrt", "fma"):
            assert f"{inst}.{ptx_mode[mode]}.{suffix}" in ptx, (inst, mode)
