"""T.max / T.min and T.reduce_max / reduce_min / reduce_absmax on floats follow the
GPU's max and min, as TileLang's CUDA code (fmaxf, __hmax) does: a NaN operand gives
the other operand (numpy's fmax / fmin), two NaNs give the canonical NaN (0x7fffffff,
0x7fff), and -0 orders below +0. A row of NaNs only reduces to the fold's start (-inf,
+inf, 0 for absmax). With nan_propagate=True (TileLang's keyword, also given as the
annotation {"nan_propagate": True}) a NaN anywhere in a row gives the canonical NaN
(max.NaN / min.NaN). The results are compared bit for bit with a reference written
from those rules, on the cpu target and in the CUDA emulator; tests/gpu/test_minmax_nan_gpu.py
runs the same kernels on a GPU."""

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_device_sm80 import needs_nvrtc, nvrtc_compile

ROWS, COLS = 8, 64
DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
UINT = {2: np.uint16, 4: np.uint32}
TARGETS = ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90 -emulate"]


def minmax_kernel(dtype):
    """Out: T.max and T.min of X and Y. Red: per row of X, reduce_max, reduce_min,
    reduce_absmax by default, then the three with nan_propagate=True, then reduce_max
    into Y's first column with clear=False (both flags)."""

    @T.prim_func
    def minmax(
        X: T.Tensor((ROWS, COLS), dtype),
        Y: T.Tensor((ROWS, COLS), dtype),
        Out: T.Tensor((2, ROWS, COLS), dtype),
        Red: T.Tensor((8, ROWS), dtype),
    ):
        with T.Kernel(1, threads=128):
            for i, j in T.Parallel(ROWS, COLS):
                Out[0, i, j] = T.max(X[i, j], Y[i, j])
                Out[1, i, j] = T.min(X[i, j], Y[i, j])
            x = T.alloc_fragment((ROWS, COLS), dtype)
            T.copy(X, x)
            r = T.alloc_fragment((ROWS,), dtype)
            # Rows spread over lanes: the reductions end in warp shuffles.
            for k, (fn, nan) in enumerate(
                [
                    (T.reduce_max, False),
                    (T.reduce_min, False),
                    (T.reduce_absmax, False),
                    (T.reduce_max, True),
                    (T.reduce_min, True),
                    (T.reduce_absmax, True),
                ]
            ):
                fn(x, r, dim=1, nan_propagate=nan)
                T.copy(r, Red[k, :])
            for k, nan in ((6, False), (7, True)):
                for i in T.Parallel(ROWS):
                    r[i] = Y[i, 0]
                T.reduce_max(x, r, dim=1, clear=False, annotations={"nan_propagate": nan})
                T.copy(r, Red[k, :])

    return minmax


def canonical_nan(np_dtype):
    bits = 0x7FFFFFFF if np.dtype(np_dtype).itemsize == 4 else 0x7FFF
    return np.array(bits, UINT[np.dtype(np_dtype).itemsize]).view(np_dtype)


def gpu_max(x, y, is_min=False):
    """PTX max / min of arrays x and y, elementwise (IEEE 754-2019 maximumNumber)."""
    x, y = np.broadcast_arrays(x, y)
    xf, yf = x.astype(np.float64), y.astype(np.float64)
    take_y = (yf < xf) if is_min else (xf < yf)
    zeros = (xf == yf) & (xf == 0)
    take_y |= zeros & (np.signbit(xf) != is_min)  # max: +0 over -0; min: -0 over +0
    take_y |= np.isnan(xf) & ~np.isnan(yf)
    out = np.where(take_y, y, x)
    out[np.isnan(xf) & np.isnan(yf)] = canonical_nan(x.dtype)
    return out


def gpu_reduce(x, kind, nan_propagate, start=None):
    """The row folds: from the kind's identity (or `start`), combined with gpu_max."""
    is_min = kind == "min"
    v = np.abs(x) if kind == "absmax" else x
    acc = np.full(x.shape[0], 0 if kind == "absmax" else (np.inf if is_min else -np.inf), x.dtype)
    for j in range(x.shape[1]):
        acc = gpu_max(acc, v[:, j], is_min)
    if start is not None:
        acc = gpu_max(start, acc, is_min)
    if nan_propagate:
        acc[np.isnan(x.astype(np.float64)).any(axis=1)] = canonical_nan(x.dtype)
    return acc


def inputs(np_dtype):
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, (ROWS, COLS)).astype(np_dtype)
    y = rng.uniform(-3, 3, (ROWS, COLS)).astype(np_dtype)
    x[1, 0] = np.nan  # first in its row
    x[2, COLS - 1] = np.nan  # last in its row
    x[3, 17] = np.nan
    y[0, 5] = np.nan  # the second operand only
    y[3, 17] = np.nan  # both
    x[0, 9], y[0, 9] = np.inf, np.nan
    x[0, 10], y[0, 10] = -np.inf, np.nan
    x[4, :] = np.nan  # a row of NaNs only
    x[5, :] = -np.abs(x[5, :])  # a row whose maximum is a zero of either sign
    x[5, 3], x[5, 40] = -0.0, 0.0
    x[6, :] = np.abs(x[6, :])
    x[6, 7], x[6, 50] = 0.0, -0.0
    x[7, 0:4], y[7, 0:4] = [-0.0, 0.0, -0.0, 0.0], [0.0, -0.0, -0.0, 0.0]
    y[:, 0] = rng.uniform(-1, 5, ROWS).astype(np_dtype)  # clear=False starts
    y[2, 0] = np.nan
    return x, y


def check(out, red, x, y):
    """Bit for bit: NaN payloads and zero signs included."""
    u = UINT[x.dtype.itemsize]
    want = [gpu_max(x, y), gpu_max(x, y, is_min=True)]
    for k, w in enumerate(want):
        np.testing.assert_array_equal(out[k].view(u), w.view(u), err_msg=f"elementwise {k}")
    kinds = ["max", "min", "absmax"]
    for k in range(6):
        w = gpu_reduce(x, kinds[k % 3], nan_propagate=k >= 3)
        np.testing.assert_array_equal(red[k].view(u), w.view(u), err_msg=f"reduction {k}")
    for k, nan in ((6, False), (7, True)):
        w = gpu_reduce(x, "max", nan, start=y[:, 0])
        np.testing.assert_array_equal(red[k].view(u), w.view(u), err_msg=f"clear=False {k}")
    # The rules themselves, on the values numpy documents.
    f = red.astype(np.float64)
    assert np.isnan(f[3:6, 1:4]).all()  # nan_propagate: rows 1 to 3 hold a NaN
    assert not np.isnan(f[0:3, 1:4]).any()  # by default they ignore it
    assert f[0, 4] == -np.inf and f[1, 4] == np.inf and f[2, 4] == 0  # a row of NaNs only
    assert f[0, 5] == 0 and not np.signbit(f[0, 5])  # max of a row with -0 and +0: +0
    assert f[1, 6] == 0 and np.signbit(f[1, 6])  # min of one with +0 and -0: -0
    assert not np.isnan(f[6, 2]) and np.isnan(f[7, 2])  # clear=False from a NaN


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("target", TARGETS)
def test_min_max_follow_the_gpu(target, dtype):
    np_dtype = DTYPES[dtype]
    kernel = tilelang.compile(minmax_kernel(dtype), target=target)
    x, y = inputs(np_dtype)
    out = np.zeros((2, ROWS, COLS), np_dtype)
    red = np.zeros((8, ROWS), np_dtype)
    kernel(x, y, out, red)
    check(out, red, x, y)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_min_max_on_metal(dtype):
    """Metal: MSL's fmax / fmin (which ignore a NaN operand) and, for nan_propagate=True,
    folds with an explicit NaN test (no simd_ built-in promises NaN). The values equal the
    other targets'; NaN payloads and the sign of a zero are MSL's own, so compared as
    values."""
    np_dtype = DTYPES[dtype]
    kernel = tilelang.compile(minmax_kernel(dtype), target="metal -emulate")
    x, y = inputs(np_dtype)
    out = np.zeros((2, ROWS, COLS), np_dtype)
    red = np.zeros((8, ROWS), np_dtype)
    kernel(x, y, out, red)
    f64 = np.float64
    np.testing.assert_array_equal(out[0].astype(f64), gpu_max(x, y).astype(f64))
    np.testing.assert_array_equal(out[1].astype(f64), gpu_max(x, y, is_min=True).astype(f64))
    kinds = ["max", "min", "absmax"]
    for k in range(6):
        want = gpu_reduce(x, kinds[k % 3], nan_propagate=k >= 3)
        np.testing.assert_array_equal(red[k].astype(f64), want.astype(f64), err_msg=str(k))
    source = kernel.get_kernel_source()
    assert "fmax(" in source and "tl_xor_max_nan(" in source


def reshaped_reduce_kernel(nan):
    @T.prim_func
    def main(A: T.Tensor((ROWS * COLS,), "float32"), B: T.Tensor((ROWS,), "float32")):
        with T.Kernel(1, threads=32):
            a = T.alloc_fragment((ROWS * COLS,), "float32")
            b = T.alloc_fragment((ROWS,), "float32")
            T.copy(A, a)
            T.reduce_max(T.reshape(a, [ROWS, COLS]), b, dim=1, nan_propagate=nan)
            T.copy(b, B)

    return main


@pytest.mark.parametrize("target", TARGETS[:2])
@pytest.mark.parametrize("nan", [False, True])
def test_reduce_of_a_view_takes_the_flag(target, nan):
    """A reduction of a T.reshape view (folded by the frontend's own loops) follows the
    same rules."""
    x, _ = inputs(np.float32)
    out = np.zeros(ROWS, np.float32)
    tilelang.compile(reshaped_reduce_kernel(nan), target=target)(x.reshape(-1), out)
    want = gpu_reduce(x, "max", nan)
    np.testing.assert_array_equal(out.view(np.uint32), want.view(np.uint32))


def test_cuda_source_names_the_gpu_rules():
    """The CUDA code says which rule each fold follows, in TileLang's names: tl::MaxOp,
    __hmax and tl::max2 ignore NaN, tl::MaxOpNan, __hmax_nan and tl::max2_nan propagate
    it."""
    plain = tilelang.compile(
        minmax_kernel("float16"), target="cuda -arch=sm_80"
    ).get_kernel_source()
    for name in ("__hmax(", "__hmin(", "__hmax_nan(", "__hmin_nan(", "tl::MaxOp,", "tl::MaxOpNan,"):
        assert name in plain, name
    # 16-bit rows fold two registers at once: tl::max2 (max.f16x2), tl::max2_nan ...
    for name in ("tl::max2<", "tl::min2_nan<", "tl::abs_max2<", "tl::abs_max2_nan<"):
        assert name in plain, name
    f32 = tilelang.compile(minmax_kernel("float32"), target="cuda -arch=sm_80").get_kernel_source()
    for name in ("tl::max<float>(", "tl::max_nan<float>(", "tl::MinOpNan,"):
        assert name in f32, name


@needs_nvrtc
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_gpu_code_is_one_instruction_per_rule(dtype):
    """NVRTC turns each rule into PTX's own instruction: max / min ignore NaN, max.NaN /
    min.NaN propagate it (16-bit ones on their bits, without a trip through float; the
    reductions fold two registers of a row at once, max.f16x2 ...)."""
    source = tilelang.compile(minmax_kernel(dtype), target="cuda -arch=sm_80").get_kernel_source()
    ok, log, ptx = nvrtc_compile("compute_80", source, want_ptx=True)
    assert ok, log
    suffix = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}[dtype]
    for insn in ("max", "min", "max.NaN", "min.NaN"):
        assert f"{insn}.{suffix} " in ptx, insn
        if dtype != "float32":
            assert f"{insn}.{suffix}x2 " in ptx, insn


@pytest.mark.parametrize("value", ["yes", 2, None])
def test_nan_propagate_must_be_a_bool(value):
    with pytest.raises(
        tilelang.TileLangError, match=r"T.reduce_max: nan_propagate must be True or False"
    ):

        @T.prim_func
        def bad(X: T.Tensor((4, 8), "float32"), Y: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=32):
                x = T.alloc_fragment((4, 8), "float32")
                y = T.alloc_fragment((4,), "float32")
                T.copy(X, x)
                T.reduce_max(x, y, dim=1, nan_propagate=value)
                T.copy(y, Y)
