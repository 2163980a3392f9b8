"""Eager `T.const` names bound from a tensor's strides, not only its shape."""

import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit(target="cpu")
def copy_rows(A):
    M, N, S = T.const("M, N, S")
    A: T.StridedTensor((M, N), (S, 1), T.float32)
    B = T.empty((M, N), T.float32)
    with T.Kernel(M, threads=32) as bx:
        for j in T.serial(N):
            B[bx, j] = A[bx, j] * 2
    return B


def test_const_bound_from_a_stride():
    base = np.random.default_rng(0).standard_normal((6, 10)).astype(np.float32)
    view = base[:, :7]  # row stride 10 elements, shape (6, 7)
    np.testing.assert_allclose(copy_rows(view), view * 2)
    kernel = copy_rows.compile(M=6, N=7, S=10)
    assert "10" in kernel.get_kernel_source()
