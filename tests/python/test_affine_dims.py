"""A symbolic size that a tensor parameter uses only inside a dimension expression
(`T.Tensor((n * 4,), ...)`, `n * 3 + 1`) is bound at call time from that dimension,
and a dimension no integer value fits is an error naming it."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate"]
rng = np.random.default_rng(41)


def affine_kernel():
    n = T.symbolic("n")
    m = T.symbolic("m")

    @T.prim_func
    def kernel(
        A: T.Tensor((n * 4,), T.float32),
        B: T.Tensor((n * 3 + 1, m + 2), T.float32),
        C: T.Tensor((n,), T.float32),
    ):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                C[i] = A[i * 4] + A[i * 4 + 3] + B[i * 3 + 1, m + 1]

    return kernel


@pytest.mark.parametrize("target", TARGETS)
def test_sizes_bound_from_affine_dimensions(target):
    kernel = tilelang.compile(affine_kernel(), out_idx=[2], target=target)
    for n, m in [(5, 3), (9, 1)]:
        a = rng.standard_normal(n * 4).astype(np.float32)
        b = rng.standard_normal((n * 3 + 1, m + 2)).astype(np.float32)
        c = kernel(a, b)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        want = a64[0::4] + a64[3::4] + b64[1::3, m + 1]
        assert c.shape == (n,)
        np.testing.assert_allclose(c, want, rtol=1e-6, atol=1e-6)


def test_dimension_no_value_fits_is_an_error():
    kernel = tilelang.compile(affine_kernel(), out_idx=[2], target="cpu")
    a = rng.standard_normal(15).astype(np.float32)
    b = rng.standard_normal((5, 3)).astype(np.float32)
    with pytest.raises(
        tilelang.TileLangError,
        match=r"argument 'A' of kernel 'kernel' has shape \(15,\): dimension 0 is 15, which is "
        r"n \* 4 for no integer n",
    ):
        kernel(a, b)
    a = rng.standard_normal(16).astype(np.float32)
    with pytest.raises(
        tilelang.TileLangError, match=r"dimension 0 is 5, expected \(\(n \* 3\) \+ 1\) = 13"
    ):
        kernel(a, b)
