"""T.gemm on sm_90a with the wgmma input types beyond float16 / bfloat16: fp8 (e4m3fn,
e5m2, any mix) and tf32 (float32 operands) into float32, int8 / uint8 into int32
(device/cuda/gemm_sm90.cuh). These types have no transposed wgmma form, so only
K-major operands (A [M][K], B [N][K]: transpose_B=True) take wgmma; other layouts keep
mma.sync. Without a GPU: the generated source runs in the emulator ("cuda -arch=sm_90a
-emulate"), whose wgmma twin decodes the operands as the tensor cores do (fp8 exactly,
tf32 as the top 19 bits of each float), against numpy; and it compiles with NVRTC for
sm_90a into the wgmma instruction of each type. tests/gpu/test_wgmma_types_gpu.py runs
the same kernels on the H200."""

import logging

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_device_sm80 import needs_nvrtc, nvrtc_compile
from test_wgmma_gemm import tma_fed

EMU = "cuda -arch=sm_90a -emulate"
rng = np.random.default_rng(908)
NP = {
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "float32": np.float32,
    "int8": np.int8,
    "uint8": np.uint8,
}
PTX_TYPE = {
    "float8_e4m3fn": "e4m3",
    "float8_e5m2": "e5m2",
    "float32": "tf32",
    "int8": "s8",
    "uint8": "u8",
}
C_TYPE = {
    "float8_e4m3fn": "tl::float8_e4m3fn_t",
    "float8_e5m2": "tl::float8_e5m2_t",
    "float32": "float",
    "int8": "int8_t",
    "uint8": "uint8_t",
}


def accum_of(a_dtype):
    return "int32" if a_dtype in ("int8", "uint8") else "float32"


def typed_gemm(M, N, K, bM, bN, bK, a_dtype, b_dtype, threads, stages, trans_a=False, trans_b=True):
    """C = C0 + op(A) @ op(B) over a T.Pipelined K loop; A is (K, M) when trans_a, B is
    (N, K) when trans_b (the K-major layout wgmma reads for these types)."""
    acc = accum_of(a_dtype)
    a_shape, b_shape = ((K, M) if trans_a else (M, K)), ((N, K) if trans_b else (K, N))

    @T.prim_func
    def main(
        A: T.Tensor(a_shape, a_dtype),
        B: T.Tensor(b_shape, b_dtype),
        C0: T.Tensor((M, N), acc),
        C: T.Tensor((M, N), acc),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bK, bM) if trans_a else (bM, bK), a_dtype)
            B_s = T.alloc_shared((bN, bK) if trans_b else (bK, bN), b_dtype)
            C_f = T.alloc_fragment((bM, bN), acc)
            T.copy(C0[by * bM, bx * bN], C_f)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                if trans_a:
                    T.copy(A[k * bK, by * bM], A_s)
                else:
                    T.copy(A[by * bM, k * bK], A_s)
                if trans_b:
                    T.copy(B[bx * bN, k * bK], B_s)
                else:
                    T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f, transpose_A=trans_a, transpose_B=trans_b)
            T.copy(C_f, C[by * bM, bx * bN])

    return main


def tf32(x):
    """The tf32 value the tensor cores read from a float32: its top 19 bits."""
    return (np.asarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def random_operand(dtype, shape):
    if dtype in ("int8", "uint8"):
        lo, hi = (-128, 128) if dtype == "int8" else (0, 256)
        return rng.integers(lo, hi, size=shape).astype(NP[dtype])
    scale = 4.0 if dtype.startswith("float8") else 1.0
    return (rng.standard_normal(shape) * scale).astype(NP[dtype])


def operands(M, N, K, a_dtype, b_dtype, trans_a=False, trans_b=True):
    """(a, b, c0, reference, scale of the rounding): the reference in float64 of the
    values the tensor cores multiply (tf32-truncated float32), or exact int64."""
    a = random_operand(a_dtype, (K, M) if trans_a else (M, K))
    b = random_operand(b_dtype, (N, K) if trans_b else (K, N))
    if accum_of(a_dtype) == "int32":
        c0 = rng.integers(-(2**20), 2**20, size=(M, N)).astype(np.int32)
        ai, bi = a.astype(np.int64), b.astype(np.int64)
        ref = c0 + (ai.T if trans_a else ai) @ (bi.T if trans_b else bi)
        return a, b, c0, ref, None
    c0 = rng.standard_normal((M, N)).astype(np.float32)
    read = tf32 if a_dtype == "float32" else (lambda x: x)
    af, bf = read(a).astype(np.float64), read(b).astype(np.float64)
    af, bf = (af.T if trans_a else af), (bf.T if trans_b else bf)
    return a, b, c0, c0 + af @ bf, np.abs(c0) + np.abs(af) @ np.abs(bf)


def check(c, ref, scale, rel=2.0**-18):
    """Exact for integers. For floats the emulator's float32 sums in k order each round
    by at most 2^-24 of sum |a * b| + |c0|; 2^-18 of it allows K = 64 such roundings in
    the worst case and far more as they fall in practice, while a tf32 operand that was
    not truncated (2^-11 relative) or an fp8 decoded wrongly is far outside."""
    if scale is None:
        np.testing.assert_array_equal(c, ref)
        return
    err = np.abs(c.astype(np.float64) - ref)
    tol = rel * scale
    assert (err <= tol).all(), f"max err {err.max():.3g}, worst excess {(err - tol).max():.3g}"


def flags(*values):
    return ", ".join("true" if v else "false" for v in values)


# (M, N, K, bM, bN, bK, a_dtype, b_dtype, threads, stages) and the warpgroup split.
# M, N, K are not multiples of the tiles (the copies pad with zeros).
CASES = {
    "e4m3_e4m3": ((100, 72, 200, 64, 64, 64, "float8_e4m3fn", "float8_e4m3fn", 128, 3), (1, 1)),
    "e4m3_e5m2": ((128, 128, 256, 128, 64, 128, "float8_e4m3fn", "float8_e5m2", 256, 2), (2, 1)),
    "e5m2_e4m3": ((64, 160, 96, 64, 128, 32, "float8_e5m2", "float8_e4m3fn", 256, 3), (1, 2)),
    "e5m2_e5m2": ((70, 64, 128, 64, 64, 128, "float8_e5m2", "float8_e5m2", 128, 4), (1, 1)),
    "tf32": ((96, 80, 72, 64, 64, 32, "float32", "float32", 128, 3), (1, 1)),
    "tf32_two_groups": ((128, 64, 40, 128, 64, 8, "float32", "float32", 256, 2), (2, 1)),
    "int8": ((64, 96, 160, 64, 64, 64, "int8", "int8", 128, 3), (1, 1)),
    "uint8": ((128, 128, 100, 128, 128, 32, "uint8", "uint8", 256, 2), (2, 1)),
}


def compile_case(name, target=EMU):
    args, _ = CASES[name]
    return tilelang.compile(typed_gemm(*args), target=target)


@pytest.mark.parametrize("name", sorted(CASES))
def test_emulated_typed_wgmma_gemm_matches_numpy(name):
    (M, N, K, bM, bN, bK, a_dt, b_dt, _, _), (wgm, wgn) = CASES[name]
    kernel = compile_case(name)
    src = kernel.get_kernel_source()
    # Pipelined and alone with its accumulator in the loop: kept in flight (Pending =
    # 1); with both tiles through TMA, without the proxy fence (Fence = false).
    tail = f"{flags(False, True)}, 1, false>" if tma_fed(src) else f"{flags(False, True)}, 1>"
    assert f"tl::wgmma_gemm_ss<{bM}, {bN}, {bK}, {wgm}, {wgn}, {tail}" in src, src
    assert "tl::gemm_ss<" not in src
    # The operand tiles have the operand types (the template reads its types off them).
    assert f"{C_TYPE[a_dt]}*" in src and f"{C_TYPE[b_dt]}*" in src
    a, b, c0, ref, scale = operands(M, N, K, a_dt, b_dt)
    c = np.zeros_like(c0)
    kernel(a, b, c0, c)
    check(c, ref, scale)


def test_tf32_operands_are_truncated_to_10_mantissa_bits():
    """1 + 3/4 * 2^-10 has mantissa bits below tf32's 10: the tensor cores drop them
    (1.0), where rounding to nearest would give 1 + 2^-10. B = 1, so each of the 64
    sums is exactly K * (the tf32 value of A)."""
    M, N, K = 64, 64, 64
    kernel = tilelang.compile(
        typed_gemm(M, N, K, 64, 64, 32, "float32", "float32", 128, 2), target=EMU
    )
    assert "tl::wgmma_gemm_ss<" in kernel.get_kernel_source()
    a = np.full((M, K), 1 + 0.75 * 2.0**-10, np.float32)
    a[1::2] = -(1 + 0.75 * 2.0**-10)  # truncation is toward zero for negatives too
    b = np.ones((N, K), np.float32)
    c = np.zeros((M, N), np.float32)
    kernel(a, b, np.zeros_like(c), c)
    expect = np.where(np.arange(M)[:, None] % 2 == 0, K, -K).astype(np.float32) * np.ones((1, N))
    np.testing.assert_array_equal(c, expect)


def test_int8_accumulates_exactly_past_float_precision():
    """int32 sums beyond 2^24 (where float would round) stay exact."""
    M, N, K = 64, 64, 1024
    kernel = tilelang.compile(typed_gemm(M, N, K, 64, 64, 128, "int8", "int8", 128, 2), target=EMU)
    a = np.full((M, K), -128, np.int8)
    b = np.full((N, K), -127, np.int8)
    c0 = np.full((M, N), 2**24 + 1, np.int32)
    c = np.zeros_like(c0)
    kernel(a, b, c0, c)
    np.testing.assert_array_equal(c, np.full((M, N), 2**24 + 1 + 128 * 127 * K, np.int32))


@pytest.mark.parametrize(
    "a_dtype, trans_a, trans_b",
    [
        ("float8_e4m3fn", False, False),  # B [K][N]: N-major
        ("float8_e5m2", True, True),  # A [K][M]: M-major
        ("float32", False, False),
        ("int8", True, False),
    ],
)
def test_transposed_8_bit_and_tf32_operands_fall_back_to_mma_sync(
    a_dtype, trans_a, trans_b, caplog, fresh_compiles
):
    """wgmma transposes only 16-bit operands: the gemm stays on mma.sync, says why in the
    debug log, and still computes the same product."""
    M, N, K = 64, 64, 64
    args = (M, N, K, 64, 64, 32, a_dtype, a_dtype, 128, 2, trans_a, trans_b)
    with caplog.at_level(logging.DEBUG, logger="tilelang"):
        kernel = tilelang.compile(typed_gemm(*args), target=EMU)
    src = kernel.get_kernel_source()
    assert "tl::wgmma_gemm" not in src and "tl::gemm_ss<" in src
    assert "operands only K-major" in caplog.text, caplog.text
    a, b, c0, ref, scale = operands(M, N, K, a_dtype, a_dtype, trans_a, trans_b)
    c = np.zeros_like(c0)
    kernel(a, b, c0, c)
    # mma.sync rounds tf32 operands to nearest (cvt.rna): compare at tf32 precision.
    check(c, ref, scale, rel=2.0**-10 if a_dtype == "float32" else 2.0**-18)


def test_disable_wgmma_keeps_fp8_on_mma_sync():
    args, _ = CASES["e4m3_e5m2"]
    kernel = tilelang.compile(
        typed_gemm(*args), target=EMU, pass_configs={"tl.disable_wgmma": True}
    )
    src = kernel.get_kernel_source()
    assert "tl::wgmma_gemm" not in src and "tl::gemm_ss<" in src
    M, N, K = args[:3]
    a, b, c0, ref, scale = operands(M, N, K, args[6], args[7])
    c = np.zeros_like(c0)
    kernel(a, b, c0, c)
    check(c, ref, scale)


def test_fp8_example_takes_wgmma_on_sm90a():
    """examples/fp8_gemm.py's kernel (fp8 e4m3, B [N][K]) runs on wgmma on sm_90a."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parents[2] / "examples" / "fp8_gemm.py"
    spec = importlib.util.spec_from_file_location("fp8_gemm_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    M, N, K = 120, 72, 160
    func = example.fp8_scaled_mm.get_tir(M, N, K, out_dtype="float32")
    kernel = tilelang.compile(func, out_idx=[-1], target=EMU)
    assert (
        "tl::wgmma_gemm_ss<64, 64, 64, 1, 1, false, true, 1, false>" in kernel.get_kernel_source()
    )
    a, scale_a = example.quantize_per_tensor(rng.standard_normal((M, K)).astype(np.float32))
    b, scale_b = example.quantize_per_tensor(rng.standard_normal((N, K)).astype(np.float32))
    ref, abs_ref = example.reference(a, b, scale_a, scale_b)
    example.check(kernel(a, b, scale_a, scale_b), ref, abs_ref)


@needs_nvrtc
@pytest.mark.parametrize("name", sorted(CASES))
def test_typed_wgmma_compiles_with_nvrtc_for_sm90a(name):
    (_, _, _, _, bN, _, a_dt, b_dt, _, _), (_, wgn) = CASES[name]
    kernel = compile_case(name, target="cuda -arch=sm_90a")
    ok, log, ptx = nvrtc_compile("sm_90a", kernel.get_kernel_source(), want_ptx=True)
    assert ok, log
    acc = "s32" if accum_of(a_dt) == "int32" else "f32"
    k = 8 if a_dt == "float32" else 32
    n = bN // wgn
    inst = f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.{acc}.{PTX_TYPE[a_dt]}.{PTX_TYPE[b_dt]}"
    assert inst in ptx, f"{inst} not in the PTX"
    assert "mma.sync" not in ptx
