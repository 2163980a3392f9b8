"""T.PersistentTileScheduler (python/tilelang/language/tile_schedule.py): each worker of a
persistent grid walks tiles w, w + num_workers, ... of TileLang's order (column- or
row-major, swizzled panels, clusters along M), and T.launch_thread reads a launched
index. Checked against the order written out independently below."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate"]


def expected_linear(m, n, M, N, swizzle, column_major):
    """The linear index of tile (m, n): panels of `swizzle` slow-axis tiles, each swept
    along the fast axis first (the last panel may be narrower)."""
    fast, slow, n_fast, n_slow = (m, n, M, N) if column_major else (n, m, N, M)
    panel = slow // swizzle
    width = min(swizzle, n_slow - panel * swizzle)
    return panel * swizzle * n_fast + fast * width + slow % width


def persistent_kernel(M, N, workers, swizzle, column_major, block=4):
    @T.prim_func
    def walk(
        A: T.Tensor((M * block, N * block), "float32"),
        B: T.Tensor((M * block, N * block), "float32"),
        Order: T.Tensor((M, N), "int32"),
        Iter: T.Tensor((M, N), "int32"),
    ):
        with T.Kernel(workers, threads=4) as w:
            tx = T.launch_thread("threadIdx.x", 4)
            sched = T.PersistentTileScheduler(
                M,
                N,
                num_workers=workers,
                swizzle_size=swizzle,
                column_major=column_major,
                name="sched",
            )
            sched.init(w)
            while sched.valid():
                for j in T.serial(block):
                    B[sched.m_idx * block + tx, sched.n_idx * block + j] = (
                        A[sched.m_idx * block + tx, sched.n_idx * block + j] * 2.0
                    )
                if tx == 0:
                    Order[sched.m_idx, sched.n_idx] = sched.linear_idx
                    Iter[sched.m_idx, sched.n_idx] = sched.current_iter
                sched.next_tile()

    return walk


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "M, N, workers, swizzle, column_major",
    [(5, 3, 4, 1, True), (5, 7, 3, 3, True), (6, 4, 5, 2, False), (3, 3, 16, 1, False)],
)
def test_every_tile_once_in_tilelangs_order(target, M, N, workers, swizzle, column_major):
    kernel = tilelang.compile(
        persistent_kernel(M, N, workers, swizzle, column_major), target=target
    )
    a = np.random.default_rng(M * N + swizzle).standard_normal((M * 4, N * 4)).astype(np.float32)
    b = np.zeros_like(a)
    order = np.full((M, N), -1, np.int32)
    it = np.full((M, N), -1, np.int32)
    kernel(a, b, order, it)
    np.testing.assert_array_equal(b, a * 2)  # every tile processed
    ref = np.array(
        [[expected_linear(m, n, M, N, swizzle, column_major) for n in range(N)] for m in range(M)]
    )
    np.testing.assert_array_equal(order, ref)
    np.testing.assert_array_equal(
        it, ref // workers
    )  # worker ref % workers reaches it at that step


@pytest.mark.parametrize("target", TARGETS)
def test_clusters_group_m_and_stateless_coord_decodes(target):
    """cluster_size=2 schedules cluster rows; coord() of a stateless scheduler gives the
    same coordinates without state."""
    M, N, cluster = 5, 4, 2

    @T.prim_func
    def decode(Rows: T.Tensor((12,), "int32"), Cols: T.Tensor((12,), "int32")):
        with T.Kernel(12, threads=1) as t:
            sched = T.PersistentTileScheduler(
                M, N, num_workers=1, cluster_size=cluster, stateful=False
            )
            m, n = sched.coord(t)
            Rows[t] = m
            Cols[t] = n

    kernel = tilelang.compile(decode, target=target)
    rows = np.full(12, -1, np.int32)
    cols = np.full(12, -1, np.int32)
    kernel(rows, cols)
    m_clusters = -(-M // cluster)
    np.testing.assert_array_equal(rows, np.arange(12) % m_clusters)
    np.testing.assert_array_equal(cols, np.arange(12) // m_clusters)


def test_stateless_scheduler_has_no_state():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def bad(A: T.Tensor((4,), "int32")):
            with T.Kernel(1, threads=1):
                sched = T.PersistentTileScheduler(2, 2, num_workers=1, stateful=False)
                A[0] = sched.m_idx

    msg = str(info.value)
    assert "T.PersistentTileScheduler(stateful=False) keeps no m_idx" in msg
    assert "test_tile_schedule.py" in msg


@pytest.mark.parametrize(
    "call, expected",
    [
        (
            lambda: T.launch_thread("threadIdx.x", 64),
            "T.launch_thread('threadIdx.x', 64): T.Kernel launched 32",
        ),
        (lambda: T.launch_thread("warp", 32), "T.launch_thread: thread must be one of threadIdx.x"),
        (
            lambda: T.PersistentTileScheduler(2, 2, swizzle_size=0),
            "swizzle_size must be a positive Python int, got 0",
        ),
    ],
)
def test_misuse_is_reported_at_the_users_line(call, expected):
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def bad(A: T.Tensor((4,), "int32")):
            with T.Kernel(1, threads=32):
                call()

    assert expected in str(info.value)
    assert "test_tile_schedule.py" in str(info.value)


@pytest.mark.parametrize("target", TARGETS)
def test_launch_thread_gives_the_block_and_thread_indices(target):
    @T.prim_func
    def ids(A: T.Tensor((3, 8), "int32")):
        with T.Kernel(3, threads=8):
            b = T.launch_thread("blockIdx.x", 3)
            t = T.launch_thread("threadIdx.x", 8)
            A[b, t] = b * 100 + t

    kernel = tilelang.compile(ids, target=target)
    out = np.zeros((3, 8), np.int32)
    kernel(out)
    np.testing.assert_array_equal(out, np.arange(3)[:, None] * 100 + np.arange(8)[None, :])
