"""A barrier in a T.Parallel body (TileLang's own test of T.sync_grid puts one there):
every iteration's statements before it happen before any iteration's statements after
it, however the iterations are dealt to threads (src/transform/split_parallel_at_barriers).
Checked against numpy on the cpu target and the emulators; a barrier under a branch in
the body is refused at its line."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

ALL = ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate", "metal -emulate"]
GRID = ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate"]
rng = np.random.default_rng(5)


def reverse_through_shared(n, threads):
    """B = A reversed: each iteration stores its element, then (after the barrier) reads
    the mirrored one, which another iteration (another thread, or a later iteration of
    the same thread) stored."""

    @T.prim_func
    def k(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=threads) as _:
            s = T.alloc_shared((n,), "float32")
            r = T.alloc_fragment((n,), "float32")
            for i in T.Parallel(n):
                s[i] = A[i]
                T.sync_threads()
                r[i] = s[n - 1 - i]
            T.copy(r, B)

    return k


@pytest.mark.parametrize("target", ALL)
@pytest.mark.parametrize("n,threads", [(64, 128), (256, 32), (96, 64)])
def test_a_barrier_splits_a_parallel_loop(target, n, threads):
    a = rng.standard_normal(n).astype(np.float32)
    b = tilelang.compile(reverse_through_shared(n, threads), out_idx=[1], target=target)(a)
    np.testing.assert_array_equal(b, a[::-1])


def transpose_twice(m, n):
    """Two barriers in a T.Parallel(m, n) body: three parts, each reading what the
    part before it wrote at another element."""

    @T.prim_func
    def k(A: T.Tensor((m, n), "float32"), B: T.Tensor((m, n), "float32")):
        with T.Kernel(1, threads=64) as _:
            s = T.alloc_shared((m, n), "float32")
            t = T.alloc_shared((m, n), "float32")
            for i, j in T.Parallel(m, n):
                s[i, j] = A[i, j] * 2
                T.sync_threads()
                t[i, j] = s[m - 1 - i, n - 1 - j] + 1
                T.sync_threads()
                B[i, j] = t[m - 1 - i, j]

    return k


@pytest.mark.parametrize("target", ALL)
def test_two_barriers_in_a_two_dimensional_parallel_loop(target):
    a = rng.standard_normal((16, 32)).astype(np.float32)
    b = np.zeros_like(a)
    tilelang.compile(transpose_twice(16, 32), target=target)(a, b)
    np.testing.assert_array_equal(b, a[:, ::-1] * 2 + 1)


def mirror_across_blocks(n, block=64):
    """TileLang's test of T.sync_grid, in our words: every element i first holds i; after
    the grid barrier each adds the value of element n - 1 - i, held by another block, so
    all become n - 1. A block's iterations (64) are fewer than its threads (128)."""

    @T.prim_func
    def k(A: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            mirrored = T.alloc_fragment((block,), "float32")
            base = bx * block
            for i in T.Parallel(block):
                if base + i < n:
                    A[base + i] = base + i
            T.sync_grid()
            for i in T.Parallel(block):
                if base + i < n:
                    mirrored[i] = A[n - base - i - 1]
                T.sync_grid()
                if base + i < n:
                    A[base + i] = A[base + i] + mirrored[i]

    return k


@pytest.mark.parametrize("target", GRID)
@pytest.mark.parametrize("n", [1024, 1000])
def test_a_grid_barrier_in_a_parallel_loop(target, n):
    a = np.full(n, np.nan, np.float32)
    tilelang.compile(mirror_across_blocks(n), target=target)(a)
    np.testing.assert_array_equal(a, np.full(n, n - 1, np.float32))


def test_a_barrier_under_a_branch_in_the_loop_is_refused():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as _:
            s = T.alloc_shared((64,), "float32")
            for i in T.Parallel(64):
                s[i] = A[i]
                if i < 32:
                    T.sync_threads()
                A[i] = s[63 - i]

    with pytest.raises(
        tilelang.TileLangError,
        match=r"test_split_parallel_at_barriers.py:\d+: a barrier inside a T.Parallel loop must sit directly",
    ):
        tilelang.compile(k, target="cpu")
