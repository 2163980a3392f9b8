"""Negative buffer indices count from the end of their dimension, as Python's do
(TileLang's rule): a constant at once, an index the loop ranges prove negative in the
compiler (src/transform/legalize_negative_indices.cpp), a lane of a vector index at run
time; an index of unknown sign is kept as written."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate"]


def rand(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("target", TARGETS)
def test_loop_index_proven_negative_reads_from_the_end(target):
    @T.prim_func
    def main(A: T.Tensor((16,), T.float32), B: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=1):
            for i in T.serial(4):
                B[i] = A[-i - 1]

    a, b = rand(1, 16), np.zeros(4, np.float32)
    tilelang.compile(main, target=target)(a, b)
    np.testing.assert_array_equal(b, a[::-1][:4])


@pytest.mark.parametrize("target", TARGETS)
def test_loop_index_proven_negative_writes_from_the_end(target):
    @T.prim_func
    def main(A: T.Tensor((8, 16), T.float32), B: T.Tensor((8, 16), T.float32)):
        with T.Kernel(1, threads=8) as _:
            r = T.get_thread_binding()
            for i in T.serial(1, 17):
                B[-r - 1, -i] = A[r, 16 - i]

    a, b = rand(2, 8, 16), np.zeros((8, 16), np.float32)
    tilelang.compile(main, target=target)(a, b)
    np.testing.assert_array_equal(b, a[::-1])


@pytest.mark.parametrize("target", TARGETS)
def test_shared_tile_read_from_the_end(target):
    @T.prim_func
    def main(A: T.Tensor((32,), T.float32), B: T.Tensor((32,), T.float32)):
        with T.Kernel(1, threads=32) as _:
            t = T.get_thread_binding()
            S = T.alloc_shared((32,), T.float32)
            S[t] = A[t]
            T.sync_threads()
            B[t] = S[-t - 1]

    a, b = rand(3, 32), np.zeros(32, np.float32)
    tilelang.compile(main, target=target)(a, b)
    np.testing.assert_array_equal(b, a[::-1])


@pytest.mark.parametrize("target", TARGETS)
def test_vector_lanes_of_unknown_sign_wrap_at_run_time(target):
    n = T.symbolic("n")

    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), B: T.Tensor((4, 4), T.float32)):
        with T.Kernel(1, threads=1):
            for t in T.serial(4):
                B[t, T.Ramp(0, 1, 4)] = A[T.Ramp(t - 2, 1, 4)]

    a, b = rand(4, 1000), np.zeros((4, 4), np.float32)
    tilelang.compile(main, target=target)(a, b)
    want = np.array([[a[(t + k - 2) % 1000] for k in range(4)] for t in range(4)])
    np.testing.assert_array_equal(b, want)


@pytest.mark.parametrize("target", TARGETS)
def test_vector_store_lanes_of_unknown_sign_wrap_at_run_time(target):
    @T.prim_func
    def main(B: T.Tensor((4, 4), T.float32), A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=1):
            for t in T.serial(4):
                A[T.Ramp(t * 4 - 6, 1, 4)] = B[t, T.Ramp(0, 1, 4)]

    b = rand(5, 4, 4)
    a = rand(6, 64)
    want = a.copy()
    for t in range(4):
        for k in range(4):
            want[(t * 4 - 6 + k) % 64] = b[t, k]
    tilelang.compile(main, target=target)(b, a)
    np.testing.assert_array_equal(a, want)


def test_vector_lanes_proven_non_negative_keep_plain_indices():
    @T.prim_func
    def main(A: T.Tensor((128,), T.float32), C: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=64):
            t = T.get_thread_binding()
            idx = T.Ramp(t * 2, 1, 2)
            C[idx] = A[idx]

    kernel = tilelang.compile(main, target="cuda -arch=sm_80 -emulate")
    assert "< 0" not in kernel.get_kernel_source()
    a, c = rand(7, 128), np.zeros(128, np.float32)
    kernel(a, c)
    np.testing.assert_array_equal(c, a)


@pytest.mark.parametrize("target", TARGETS)
def test_scalar_index_of_unknown_sign_is_kept(target):
    # i - 2 is negative for i < 2 only: kept as written, so those reads fall before the
    # tensor and read 0, as every out-of-bounds global read does.
    @T.prim_func
    def main(A: T.Tensor((16,), T.float32), B: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=1):
            for i in T.serial(4):
                B[i] = A[i - 2]

    a, b = rand(8, 16), np.full(4, 7.0, np.float32)
    tilelang.compile(main, target=target)(a, b)
    np.testing.assert_array_equal(b, [0.0, 0.0, a[0], a[1]])
