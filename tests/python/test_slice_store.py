"""A slice stored into a slice (`A[0, 4:8] = A[0, 0:4]`): element i of the source, in
row-major order, goes to element i of the target, every source element read before any
is stored; slices of different element counts are refused naming both."""

import re

import numpy as np
import pytest
import tilelang
import tilelang.language as T

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate"]


def rand(seed, shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("target", TARGETS)
def test_tvm_style_kernel_copies_a_slice_by_element(target):
    @T.prim_func
    def let_copy(A: T.Tensor((16, 16), T.float32)):
        for _bx in T.thread_binding(1, thread="blockIdx.x"):
            for _tx in T.thread_binding(128, thread="threadIdx.x"):
                b = A[0, 0:4]
                A[0, 4:8] = b

    kernel = tilelang.compile(let_copy, target=target)
    a = rand(1, (16, 16))
    want = a.astype(np.float64)
    want[0, 4:8] = want[0, 0:4]
    kernel(a)
    np.testing.assert_array_equal(a.astype(np.float64), want)


@pytest.mark.parametrize("target", TARGETS)
def test_overlapping_slices_read_before_store(target):
    @T.prim_func
    def shift(A: T.Tensor((8, 8), T.float32)):
        with T.Kernel(1, threads=8):
            t = T.get_thread_binding()
            A[t, 1:6] = A[t, 0:5]

    kernel = tilelang.compile(shift, target=target)
    a = rand(2, (8, 8))
    want = a.astype(np.float64)
    want[:, 1:6] = want[:, 0:5].copy()
    kernel(a)
    np.testing.assert_array_equal(a.astype(np.float64), want)


@pytest.mark.parametrize("target", TARGETS)
def test_slices_of_other_shapes_and_buffers_copy_in_row_major_order(target):
    @T.prim_func
    def reshape_copy(A: T.Tensor((4, 6), T.float32), B: T.Tensor((4, 2, 3), T.float16)):
        with T.Kernel(1, threads=4):
            t = T.get_thread_binding()
            S = T.alloc_shared((4, 6), T.float32)
            S[t, 0:6] = A[t, 0:6]
            T.sync_threads()
            B[t, 0:2, 0:3] = S[3 - t, 0:6]

    kernel = tilelang.compile(reshape_copy, target=target)
    a = rand(3, (4, 6))
    b = np.zeros((4, 2, 3), np.float16)
    kernel(a, b)
    want = a.astype(np.float64)[::-1].reshape(4, 2, 3).astype(np.float16)
    np.testing.assert_array_equal(b, want)


def test_slices_of_different_sizes_are_refused_naming_both():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def bad(A: T.Tensor((16, 16), T.float32)):
            with T.Kernel(1, threads=1):
                A[0, 4:8] = A[1, 0:3]

    assert re.search(
        r"test_slice_store.py:\d+: storing the slice A\[1:1 \+ 1, 0:0 \+ 3\] of 'A' "
        r"\(3 element\(s\)\) into the slice A\[0:0 \+ 1, 4:4 \+ 4\] of 'A' \(4 element\(s\)\): "
        r"the element counts differ",
        str(info.value),
    ), str(info.value)
