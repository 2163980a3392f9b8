"""Metal kernels run on the CPU through the emulator (target "metal -emulate": the
exact generated MSL, compiled against device/emu/metal_emu.h) and checked against
numpy: GEMM through both paths and every warp policy, softmax, reductions,
elementwise kernels with scalars and dynamic shapes, atomics and a small
FlashAttention forward."""

import math
import pathlib
import sys

import numpy as np
import pytest
import tilelang
from metal_kernels import (
    ROW_REFERENCE,
    axpb,
    gemm,
    gemm_reference,
    histogram,
    row_reduce,
    special_values,
)

sys.path.insert(0, str(pathlib.Path(__file__).parents[2] / "examples"))

PATH1 = "metal -emulate"
PATH2 = "metal -keys=metal4 -emulate"
PATHS = {"simdgroup_matrix": PATH1, "matmul2d": PATH2}


def np_dtype(name):
    return tilelang.language.dtype(name).as_numpy()


def run_gemm(target, M, N, K, **kw):
    kernel = tilelang.compile(gemm(M, N, K, **kw), target=target)
    source = kernel.get_kernel_source(kernel_only=False)
    rng = np.random.default_rng(M * 7 + N * 3 + K)
    dt = np_dtype(kw.get("dtype", "float16"))
    a = rng.standard_normal((K, M) if kw.get("trans_a") else (M, K)).astype(dt)
    b = rng.standard_normal((N, K) if kw.get("trans_b") else (K, N)).astype(dt)
    out = np.zeros((M, N), np_dtype(kw.get("out_dtype") or kw.get("acc", "float32")))
    kernel(a, b, out)
    ref = gemm_reference(
        a, b, kw.get("trans_a", False), kw.get("trans_b", False), kw.get("epilogue", False)
    )
    return source, out.astype(np.float64), ref


def assert_path(source, path):
    if path == "matmul2d":
        assert "tl_mpp_gemm<" in source and "simdgroup_multiply_accumulate" not in source
    else:
        assert "simdgroup_multiply_accumulate" in source and "tl_mpp_gemm" not in source


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize(
    "dtype, acc, policy",
    [
        ("float16", "float32", 0),
        ("float16", "float32", 1),
        ("float16", "float32", 2),
        ("bfloat16", "float32", 0),
        ("float32", "float32", 1),
        ("float16", "float16", 2),
    ],
)
def test_gemm(path, dtype, acc, policy):
    source, out, ref = run_gemm(PATHS[path], 128, 128, 64, dtype=dtype, acc=acc, policy=policy)
    assert_path(source, path)
    tol = 5e-2 if acc == "float16" else 1e-4
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize(
    "shape, kw",
    [
        # partial tiles on every side, non-square 32 x 64 blocks, a T.Parallel epilogue
        ((100, 72, 40), {"bm": 32, "bn": 64, "bk": 16, "epilogue": True}),
        # both operands transposed, 2 simdgroups, every simdgroup along M
        (
            (64, 96, 48),
            {
                "bm": 64,
                "bn": 32,
                "bk": 16,
                "trans_a": True,
                "trans_b": True,
                "threads": 64,
                "policy": 1,
            },
        ),
        # converted (float16) output with partial tiles, every simdgroup along N
        ((130, 70, 64), {"out_dtype": "float16", "policy": 2}),
        # the accumulator in shared memory; bfloat16 with transposed B and an epilogue
        ((64, 64, 64), {"c_shared": True}),
        ((64, 64, 32), {"dtype": "bfloat16", "trans_b": True, "epilogue": True}),
    ],
    ids=["tails-epilogue", "transposed", "fp16-out", "c-shared", "bf16-trans-b"],
)
def test_gemm_variants(path, shape, kw):
    source, out, ref = run_gemm(PATHS[path], *shape, **kw)
    assert_path(source, path)
    tol = 1e-2 if kw.get("out_dtype") == "float16" else 1e-4
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)


def test_softmax_examples():
    from softmax import reference, softmax_online, softmax_rows

    rng = np.random.default_rng(1)
    for factory, (M, N) in ((softmax_rows, (37, 200)), (softmax_online, (19, 300))):
        kernel = factory.get_tir(M, N)
        compiled = tilelang.compile(kernel, out_idx=[-1], target=PATH1)
        x = (rng.standard_normal((M, N)) * 3).astype(np.float16)
        y = compiled(x)
        np.testing.assert_allclose(y.astype(np.float64), reference(x), rtol=5e-3, atol=1e-4)


# Shared memory takes the simd_* lowering for every kind; fragments the register
# path (its kinds differ only in the combining op, so two of them are enough).
@pytest.mark.parametrize(
    "kind, shared",
    [(k, True) for k in sorted(ROW_REFERENCE)] + [("sum", False), ("max", False)],
)
def test_row_reductions(kind, shared):
    kernel = tilelang.compile(row_reduce(43, 200, kind, shared), target=PATH1)
    source = kernel.get_kernel_source(kernel_only=False)
    assert ("simd_" in source) or ("tl_xor_" in source)
    x = np.random.default_rng(2).standard_normal((43, 200)).astype(np.float32)
    out = np.zeros(43, np.float32)
    kernel(x, out)
    np.testing.assert_allclose(out, ROW_REFERENCE[kind](x.astype(np.float64)), rtol=1e-5, atol=1e-4)


def test_elementwise_with_scalars_and_a_dynamic_length():
    kernel = tilelang.compile(axpb(), target=PATH1)
    rng = np.random.default_rng(3)
    for n in (1000, 37):
        x = rng.standard_normal(n).astype(np.float16)
        y = np.zeros(n, np.float32)
        kernel(x, y, 1.5, -3)
        np.testing.assert_allclose(y, x.astype(np.float32) * 1.5 - 3, rtol=1e-6)


def test_atomics():
    kernel = tilelang.compile(histogram(1000, 7), target=PATH1)
    x = np.random.default_rng(4).integers(0, 100, 1000).astype(np.int32)
    hist = np.zeros(7, np.int32)
    total = np.zeros(1, np.float32)
    peak = np.full(1, -1e9, np.float32)
    kernel(x, hist, total, peak)
    np.testing.assert_array_equal(hist, np.bincount(x % 7, minlength=7))
    assert total[0] == pytest.approx(x.sum() * 0.5)
    assert peak[0] == pytest.approx(x.max() * 0.25)


def test_special_values():
    kernel = tilelang.compile(special_values(256), target=PATH1)
    x = (np.random.default_rng(5).standard_normal(256) * 2).astype(np.float32)
    y = np.zeros(256, np.float32)
    h = np.zeros(256, np.float16)
    kernel(x, y, h)
    ref = np.where(x > 1.5, -1.0, x) + (x.view(np.int32) & 1)
    np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(h, (x.astype(np.float16) * np.float16(0.5)))


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_forward(path, causal):
    from flash_attention import flash_attention, reference

    # Two simdgroups: the 32 x 32 score tile splits into 16 x 32 blocks for matmul2d.
    batch, heads, seq, dim = 1, 2, 72, 64
    kernel = tilelang.compile(
        flash_attention.get_tir(batch, heads, seq, dim, causal, threads=64),
        out_idx=[3],
        target=PATHS[path],
    )
    source = kernel.get_kernel_source(kernel_only=False)
    if path == "simdgroup_matrix":
        assert "simdgroup_float8x8 acc_s[" in source and "simdgroup_float8x8 acc_o[" in source
    else:
        assert "tl_mpp_gemm<" in source
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((batch, seq, heads, dim)).astype(np.float16) for _ in range(3))
    out = kernel(q, k, v)
    np.testing.assert_allclose(
        out.astype(np.float64), reference(q, k, v, causal), rtol=1e-2, atol=1e-2
    )
    assert math.isfinite(float(np.abs(out).max()))
