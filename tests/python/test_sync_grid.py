"""T.sync_grid(), the barrier of every thread of every block of a launch, on the cpu
target and the CUDA emulator (sm_80 and sm_90a sources) against numpy: blocks write
partial results, meet at the barrier, then read what the other blocks wrote. Also: the
CUDA source compiles with NVRTC, a barrier that not every thread or block reaches is
reported instead of hanging, and the errors (outside a kernel, Metal, clusters, a grid
too large to run at once)."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.jit import load_kernel
from tilelang.utils.target import available_targets

SM80 = "cuda -arch=sm_80 -emulate"
SM90A = "cuda -arch=sm_90a -emulate"
TARGETS = ["cpu", SM80, SM90A]
rng = np.random.default_rng(11)


def normalize_by_total(blocks, threads=64):
    """B = A / sum(A): each block sums its slice into Partial, then every block reads all
    the partial sums. Partial starts as NaN, so a block that read one early shows it."""
    n = blocks * threads

    @T.prim_func
    def normalize(
        A: T.Tensor((n,), "float32"),
        Partial: T.Tensor((blocks,), "float32"),
        B: T.Tensor((n,), "float32"),
    ):
        with T.Kernel(blocks, threads=threads) as bx:
            tx = T.get_thread_binding()
            s = T.alloc_shared((threads,), "float32")
            acc = T.alloc_local((1,), "float32")
            s[tx] = A[bx * threads + tx]
            T.sync_threads()
            if tx == 0:
                acc[0] = 0
                for i in T.serial(threads):
                    acc[0] += s[i]
                Partial[bx] = acc[0]
            T.sync_grid()
            acc[0] = 0
            for j in T.serial(blocks):
                acc[0] += Partial[j]
            B[bx * threads + tx] = s[tx] / acc[0]

    return normalize


def rotate(blocks, steps, threads=32):
    """`steps` rounds of: each block takes its right neighbour's row plus one, into the
    other half of Buf. One barrier per round, so the barrier is reused."""

    @T.prim_func
    def rotate_rows(Buf: T.Tensor((2, blocks, threads), "int32")):
        with T.Kernel(blocks, threads=threads) as bx:
            tx = T.get_thread_binding()
            for step in T.serial(steps):
                src = step % 2
                Buf[1 - src, bx, tx] = Buf[src, (bx + 1) % blocks, tx] + 1
                T.sync_grid()

    return rotate_rows


def doubled_then_shifted(blocks, n=48):
    """Tile-level code only (the cpu target runs each block as one executor): A doubles in
    place, then B reads the next block's row and block 0's."""

    @T.prim_func
    def shifted(A: T.Tensor((blocks, n), "float32"), B: T.Tensor((blocks, n), "float32")):
        with T.Kernel(blocks, threads=64) as bx:
            for i in T.Parallel(n):
                A[bx, i] = A[bx, i] * 2
            T.sync_grid()
            for i in T.Parallel(n):
                B[bx, i] = A[(bx + 1) % blocks, i] + A[0, i]

    return shifted


@pytest.mark.parametrize("target", TARGETS)
def test_blocks_read_the_partial_sums_of_all_blocks(target):
    blocks, threads = 12, 64
    a = rng.uniform(0.5, 1.5, blocks * threads).astype(np.float32)
    partial = np.full(blocks, np.nan, np.float32)
    b = np.zeros_like(a)
    tilelang.compile(normalize_by_total(blocks, threads), target=target)(a, partial, b)
    np.testing.assert_allclose(
        partial, a.reshape(blocks, threads).sum(1, dtype=np.float64), rtol=1e-5
    )
    np.testing.assert_allclose(b, a / a.sum(dtype=np.float64), rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_the_barrier_is_reused_round_after_round(target):
    blocks, steps = 9, 7
    buf = np.zeros((2, blocks, 32), np.int32)
    buf[0] = rng.integers(-1000, 1000, (blocks, 32))
    start = buf[0].copy()
    tilelang.compile(rotate(blocks, steps), target=target)(buf)
    np.testing.assert_array_equal(buf[steps % 2], np.roll(start, -steps, axis=0) + steps)


@pytest.mark.parametrize("target", TARGETS)
def test_tile_level_blocks_meet_at_the_barrier(target):
    blocks = 6
    a = rng.standard_normal((blocks, 48)).astype(np.float32)
    doubled = 2 * a
    b = np.zeros_like(a)
    tilelang.compile(doubled_then_shifted(blocks), target=target)(a, b)
    np.testing.assert_allclose(a, doubled, rtol=1e-6)
    np.testing.assert_allclose(b, np.roll(doubled, -1, axis=0) + doubled[0], rtol=1e-6)


@pytest.mark.parametrize("target", ["cpu", SM80])
def test_an_exported_kernel_still_launches_its_blocks_together(target, tmp_path):
    """The signature text an exported kernel keeps says it needs a cooperative launch."""
    path = tmp_path / "rotate.tlkernel"
    tilelang.compile(rotate(5, 3), target=target).export_library(str(path))
    buf = np.zeros((2, 5, 32), np.int32)
    buf[0] = rng.integers(-1000, 1000, (5, 32))
    start = buf[0].copy()
    load_kernel(str(path))(buf)
    np.testing.assert_array_equal(buf[1], np.roll(start, -3, axis=0) + 3)


@pytest.mark.skipif(
    "cuda" not in available_targets(), reason="NVRTC (libnvrtc.so) is not on this machine"
)
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_cuda_source_compiles_with_nvrtc(arch):
    for func in (normalize_by_total(12), rotate(9, 7), doubled_then_shifted(6)):
        kernel = tilelang.compile(func, target=f"cuda -arch={arch}")
        assert "tl::sync_grid();" in kernel.get_kernel_source()


def some_threads_only(blocks=4, threads=64):
    @T.prim_func
    def branch(A: T.Tensor((blocks, threads), "int32")):
        with T.Kernel(blocks, threads=threads) as bx:
            tx = T.get_thread_binding()
            A[bx, tx] = 1
            if tx < 16:
                T.sync_grid()
            A[bx, tx] = 2

    return branch


def one_block_only(blocks=4, n=64):
    @T.prim_func
    def branch(A: T.Tensor((blocks, n), "int32")):
        with T.Kernel(blocks, threads=64) as bx:
            for i in T.Parallel(n):
                A[bx, i] = 1
            if bx == 0:
                T.sync_grid()
            for i in T.Parallel(n):
                A[bx, i] = 2

    return branch


@pytest.mark.parametrize("target", TARGETS)
def test_a_barrier_that_some_threads_skip_is_reported(target):
    kernel = tilelang.compile(some_threads_only(), target=target)
    expected = (
        r"only 16 of the block's 64 threads reached the grid barrier"
        if target == "cpu"
        else r"T.sync_grid\(\): deadlock: .*threads 0-15 wait at T.sync_grid"
    )
    with pytest.raises(tilelang.TileLangError, match=expected):
        kernel(np.zeros((4, 64), np.int32))


@pytest.mark.parametrize("target", TARGETS)
def test_a_barrier_that_some_blocks_skip_is_reported(target):
    kernel = tilelang.compile(one_block_only(), target=target)
    with pytest.raises(
        tilelang.TileLangError,
        match=r"T.sync_grid\(\): 3 of the grid's 4 blocks returned without reaching the grid barrier that "
        r"the other 1 wait at",
    ):
        kernel(np.zeros((4, 64), np.int32))
    # The failure is the launch's own: the next launch runs clean.
    a = rng.standard_normal((6, 48)).astype(np.float32)
    b = np.zeros_like(a)
    tilelang.compile(doubled_then_shifted(6), target=target)(a.copy(), b)
    np.testing.assert_allclose(b, np.roll(2 * a, -1, axis=0) + 2 * a[0], rtol=1e-6)


@pytest.mark.parametrize("target", ["cpu", SM80])
def test_a_grid_too_large_to_run_at_once_is_refused(target):
    kernel = tilelang.compile(rotate(T.dynamic("blocks"), 1), target=target)
    with pytest.raises(
        tilelang.TileLangError,
        match=r"calls T.sync_grid\(\), so the target .* runs each of its blocks on an OS thread of its own, all "
        r"at once; its grid \(1025, 1, 1\) has 1025 blocks of 32 threads, more than the 1024 it runs at once",
    ):
        kernel(np.zeros((2, 1025, 32), np.int32))


def test_sync_grid_outside_a_kernel_is_an_error():
    with pytest.raises(
        tilelang.TileLangError, match=r"T.sync_grid can only be used inside a @T.prim_func"
    ):
        T.sync_grid()
    with pytest.raises(
        tilelang.TileLangError, match=r"T.sync_grid must be inside a `with T.Kernel\(...\)` block"
    ):

        @T.prim_func
        def outside(A: T.Tensor((4,), "float32")):
            T.sync_grid()


def test_metal_refuses_sync_grid():
    with pytest.raises(tilelang.TileLangError) as err:
        tilelang.compile(rotate(4, 2), target="metal -emulate")
    assert "T.sync_grid() needs every block of the launch resident at once" in str(err.value)
    assert "target 'metal -emulate'" in str(err.value)
    assert "test_sync_grid.py" in str(err.value)


def test_clusters_with_sync_grid_are_refused():
    @T.prim_func
    def clustered(A: T.Tensor((4, 32), "int32")):
        with T.Kernel(4, threads=32, cluster_dims=2) as bx:
            tx = T.get_thread_binding()
            A[bx, tx] = 1
            T.sync_grid()

    with pytest.raises(
        tilelang.TileLangError, match=r"T.sync_grid\(\) in a kernel with cluster_dims is not"
    ):
        tilelang.compile(clustered, target=SM90A)


def test_the_host_source_names_the_cooperative_launch():
    host = tilelang.compile(rotate(5, 3), target="cuda -arch=sm_80 -emulate").get_host_source()
    assert "launch_cooperative(rotate_rows, args, grid, threads)" in host
    assert "every block resident at once" in host
