"""TileLang's fast-math names (T.__exp, __exp10, __log, __log2, __log10, __sin, __cos,
__tan, T.fast_rcp) in the CUDA code are what TileLang's CUDA code calls: CUDA's
approximate intrinsics for float32 (__expf ..., rcp.approx behind tl::fast_rcp), the
half-style tl::hexp ... for float16 / bfloat16, the precise functions for float64; on
Metal MSL's fast:: functions, on the cpu target the precise functions (test_math.py).

The emulator runs the intrinsics as the GPU composes them (device/emu/fast_math_emu.h),
so its results stay within the error CUDA documents for each intrinsic, which is what a
kernel may rely on: the precision tests below use those bounds, not the emulator's own
(smaller) error, so that the GPU meets them too (tests/gpu/test_emulated_tests_on_gpu.py
runs them on one)."""

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_device_sm80 import needs_nvrtc, nvrtc_compile

N = 4096
NAMES = ["__exp", "__exp10", "__log", "__log2", "__log10", "__sin", "__cos", "__tan", "fast_rcp"]
EMULATOR = "cuda -arch=sm_80 -emulate"


def unary_kernel(fn, dtype, n=N):
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    B[bx * 128 + i] = fn(A[bx * 128 + i])

    return main


def run(fn, x, target=EMULATOR):
    dtype = {np.dtype(ml_dtypes.bfloat16): "bfloat16"}.get(x.dtype, str(x.dtype))
    out = np.zeros_like(x)
    tilelang.compile(unary_kernel(fn, dtype, len(x)), target=target)(x, out)
    return out


def source(name, dtype, target="cuda -arch=sm_80"):
    return tilelang.compile(
        unary_kernel(getattr(T, name), dtype), target=target
    ).get_kernel_source()


# ---- the generated code


@pytest.mark.parametrize("name", NAMES)
def test_cuda_code_calls_the_intrinsics(name):
    f = name.lstrip("_")
    f32 = "tl::fast_rcp(" if name == "fast_rcp" else f"__{f}f("
    assert f32 in source(name, "float32")
    half = "tl::fast_rcp((float)" if name == "fast_rcp" else f"tl::h{f}("
    for dtype in ("float16", "bfloat16"):
        assert half in source(name, dtype)
    f64 = "tl::fast_rcp(" if name == "fast_rcp" else f"tl::{f}("
    text = source(name, "float64")
    assert f64 in text and "__" + f + "f(" not in text


def test_precise_names_stay_precise_and_16_bit_tan_is_htan():
    text = source("exp", "float32")
    assert "tl::exp(" in text and "__expf" not in text
    assert "tl::htan(" in source("tan", "float16")  # tanf rounded, as TileLang's htan


@pytest.mark.parametrize("name", NAMES)
def test_metal_and_cpu_code(name):
    f = name.lstrip("_")
    metal = source(name, "float16", target="metal")
    assert ("fast::divide(1.0f, " if name == "fast_rcp" else f"fast::{f}(") in metal
    cpu = "tl::fast_rcp(" if name == "fast_rcp" else f"tl::fast_{f}("
    assert cpu in source(name, "float32", target="cpu")


@needs_nvrtc
def test_gpu_code_compiles_to_the_approximate_instructions():
    """NVRTC builds every name for every dtype; float32's are the special function
    unit's .approx instructions, as device/emu/fast_math_emu.h models them."""
    ptx = ""
    for name in NAMES:
        for dtype in ("float32", "float16", "bfloat16", "float64"):
            ok, log, text = nvrtc_compile("compute_80", source(name, dtype), want_ptx=True)
            assert ok, (name, dtype, log)
            if dtype == "float32":
                ptx += text
    for insn in ("ex2.approx", "lg2.approx", "sin.approx", "cos.approx", "div.approx"):
        assert insn + ".f32" in ptx or insn + ".ftz.f32" in ptx, insn
    assert "rcp.approx.ftz.f32" in ptx
    for constant in ("0f3FB8AA3B", "0f40549A78", "0f3F317218", "0f3E9A209B"):  # the emulator's
        assert constant in ptx, constant


# ---- precision: CUDA's documented bounds (CUDA C++ Programming Guide, intrinsic functions)

rng = np.random.default_rng(5)


def ulps(got, want):
    """|got - want| in units of the float32 spacing at `want`."""
    want32 = np.abs(want).astype(np.float32)
    return np.abs(got.astype(np.float64) - want) / np.spacing(want32).astype(np.float64)


def test_exp_within_cudas_bound():
    x = rng.uniform(-80, 80, N).astype(np.float32)
    want = np.exp(x.astype(np.float64))
    assert (ulps(run(T.__exp, x), want) <= 2 + np.floor(np.abs(1.173 * x))).all()
    x = rng.uniform(-30, 30, N).astype(np.float32)
    want = 10.0 ** x.astype(np.float64)
    assert (ulps(run(T.__exp10, x), want) <= 2 + np.floor(np.abs(2.97 * x))).all()


@pytest.mark.parametrize(
    ("name", "ref", "near_one", "far"),
    [
        ("__log", np.log, 2**-21.41, 3),
        ("__log2", np.log2, 2**-22, 2),
        ("__log10", np.log10, 2**-24, 3),
    ],
)
def test_logarithms_within_cudas_bound(name, ref, near_one, far):
    """Absolute error in [0.5, 2] (results near zero), ulps elsewhere."""
    x = np.exp(rng.uniform(-60, 60, N)).astype(np.float32)
    x[:512] = rng.uniform(0.5, 2, 512).astype(np.float32)
    got = run(getattr(T, name), x).astype(np.float64)
    want = ref(x.astype(np.float64))
    inside = (x >= 0.5) & (x <= 2)
    assert (np.abs(got - want)[inside] <= near_one).all()
    assert (ulps(got, want)[~inside] <= far).all()


def test_sin_cos_tan_within_cudas_bound():
    """__sinf / __cosf: 2^-21.41 / 2^-21.19 absolute in [-pi, pi]; __tanf is __sinf times
    rcp.approx(__cosf), so its relative error is bounded by theirs."""
    x = rng.uniform(-np.pi, np.pi, N).astype(np.float32)
    x64 = x.astype(np.float64)
    assert (np.abs(run(T.__sin, x) - np.sin(x64)) <= 2**-21.41).all()
    assert (np.abs(run(T.__cos, x) - np.cos(x64)) <= 2**-21.19).all()
    x = rng.uniform(-1.4, 1.4, N).astype(np.float32)
    x64 = x.astype(np.float64)
    bound = 2**-21.41 / np.abs(np.sin(x64)) + 2**-21.19 / np.abs(np.cos(x64)) + 2**-21
    assert (np.abs(run(T.__tan, x) / np.tan(x64) - 1) <= bound).all()


def test_fast_rcp_within_one_ulp():
    x = (rng.uniform(0.5, 1, N) * 2.0 ** rng.integers(-120, 120, N)).astype(np.float32)
    x *= rng.choice([-1, 1], N).astype(np.float32)
    assert (ulps(run(T.fast_rcp, x), 1 / x.astype(np.float64)) <= 1).all()


def test_the_emulation_keeps_the_intrinsics_character():
    """What sets the intrinsics apart from expf ... on the GPU: __expf rounds x * log2(e)
    to float before the exponential, so large arguments lose digits (up to CUDA's bound,
    above one ulp), and rcp.approx.ftz flushes a subnormal result to zero."""
    x = np.linspace(60, 88, 256).astype(np.float32)
    fast, precise = run(T.__exp, x), run(T.exp, x)
    want = np.exp(x.astype(np.float64))
    assert ulps(fast, want).max() > 1 >= ulps(precise, want).max()
    assert run(T.fast_rcp, np.array([3e38], np.float32))[0] == 0  # 1/x is subnormal


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_is_the_float_intrinsic_rounded(dtype):
    np_dtype = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}[dtype]
    x = rng.uniform(0.1, 3, N).astype(np_dtype)
    x64 = x.astype(np.float64)
    eps = {"float16": 2**-10, "bfloat16": 2**-7}[dtype]
    for fn, ref in ((T.__exp, np.exp), (T.__log, np.log), (T.__sin, np.sin), (T.__tan, np.tan)):
        got = run(fn, x).astype(np.float64)
        np.testing.assert_allclose(got, ref(x64), rtol=eps, atol=eps / 8, err_msg=fn.__name__)
    np.testing.assert_allclose(run(T.fast_rcp, x).astype(np.float64), 1 / x64, rtol=eps)


@pytest.mark.parametrize("target", ["cpu", "metal -emulate"])
def test_other_targets_compute_the_functions(target):
    x = rng.uniform(0.1, 3, 512).astype(np.float32)
    x64 = x.astype(np.float64)
    for fn, ref in (
        (T.__exp, np.exp),
        (T.__log2, np.log2),
        (T.__cos, np.cos),
        (T.fast_rcp, np.reciprocal),
    ):
        np.testing.assert_allclose(run(fn, x, target), ref(x64), rtol=4e-6, err_msg=fn.__name__)
