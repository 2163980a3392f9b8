"""T.max / T.min and T.reduce_max / T.reduce_min on floats propagate NaN, as numpy's
maximum, minimum, max and min do, whichever operand holds it: on the cpu target, in
the CUDA emulator, and on the GPU (tests/gpu/test_minmax_nan_gpu.py), where sm_80 and
later compute them with one instruction each (max.NaN.f32 / min.NaN.f32). The old
compare-and-select kept the first operand when only the second was NaN, so a row
maximum dropped a NaN that came after its first element."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

ROWS, COLS = 4, 64


@T.prim_func
def minmax(
    X: T.Tensor((ROWS, COLS), "float32"),
    Y: T.Tensor((ROWS, COLS), "float32"),
    Out: T.Tensor((2, ROWS, COLS), "float32"),
    Red: T.Tensor((2, ROWS), "float32"),
):
    with T.Kernel(1, threads=128):
        for i, j in T.Parallel(ROWS, COLS):
            Out[0, i, j] = T.max(X[i, j], Y[i, j])
            Out[1, i, j] = T.min(X[i, j], Y[i, j])
        x = T.alloc_fragment((ROWS, COLS), "float32")
        hi = T.alloc_fragment((ROWS,), "float32")
        lo = T.alloc_fragment((ROWS,), "float32")
        T.copy(X, x)
        # Rows spread over lanes: the reductions end in warp shuffles.
        T.reduce_max(x, hi, dim=1)
        T.reduce_min(x, lo, dim=1)
        T.copy(hi, Red[0, :])
        T.copy(lo, Red[1, :])


def inputs():
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, (ROWS, COLS)).astype(np.float32)
    y = rng.uniform(-3, 3, (ROWS, COLS)).astype(np.float32)
    x[1, 0] = np.nan  # first in its row
    x[2, COLS - 1] = np.nan  # last in its row
    x[3, 17] = np.nan
    y[0, 5] = np.nan  # the second operand only
    y[3, 17] = np.nan  # both
    x[0, 9], y[0, 9] = np.inf, np.nan
    return x, y


def check(out, red, x, y):
    np.testing.assert_array_equal(out[0], np.maximum(x, y))
    np.testing.assert_array_equal(out[1], np.minimum(x, y))
    np.testing.assert_array_equal(red[0], np.max(x, axis=1))
    np.testing.assert_array_equal(red[1], np.min(x, axis=1))
    assert np.isnan(red[0, 1:]).all() and not np.isnan(red[0, 0])


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_90 -emulate"])
def test_min_max_propagate_nan(target):
    kernel = tilelang.compile(minmax, target=target)
    x, y = inputs()
    out = np.zeros((2, ROWS, COLS), np.float32)
    red = np.zeros((2, ROWS), np.float32)
    kernel(x, y, out, red)
    check(out, red, x, y)
