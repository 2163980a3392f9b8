"""T.Persistent: a persistent kernel's loop over tiles (TileLang's helper). Worker `pid`
of `T.Kernel(workers)` takes tiles pid, pid + workers, ...; the tests check that a GEMM
written that way is correct on the cpu and in the CUDA emulator (sm_90a: TMA pipeline
inside the tile loop), and the order in which tiles are numbered."""

import re

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang import TileLangError


def persistent_gemm(M, N, K, bM, bN, bK, workers, group, shared_out=False):
    """shared_out: the tile goes out through a shared tile (a TMA store on sm_90)."""

    @T.prim_func
    def gemm(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(workers, threads=128) as pid:
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            acc = T.alloc_fragment((bM, bN), "float32")
            if shared_out:
                C_s = T.alloc_shared((bM, bN), "float32")
            for bx, by in T.Persistent([T.ceildiv(M, bM), T.ceildiv(N, bN)], workers, pid, group):
                T.clear(acc)
                for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                    T.copy(A[bx * bM, k * bK], A_s)
                    T.copy(B[k * bK, by * bN], B_s)
                    T.gemm(A_s, B_s, acc)
                if shared_out:
                    T.copy(acc, C_s)
                    T.copy(C_s, C[bx * bM, by * bN])
                else:
                    T.copy(acc, C[bx * bM, by * bN])

    return gemm


def check_gemm(kernel, M, N, K, seed, a_keep=None):
    """kernel(a, b, c) on random float16 a, b must give c = (a * a_keep) @ b."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    kernel(a, b, c)
    a32 = a.astype(np.float32) if a_keep is None else a.astype(np.float32) * a_keep
    np.testing.assert_allclose(c, a32 @ b.astype(np.float32), rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize(
    "target, workers, group",
    [
        ("cpu", 5, 8),
        ("cpu", 7, 1),
        ("cpu", 64, 2),
        ("cuda -arch=sm_90a -emulate", 7, 2),
        ("cuda -arch=sm_90a -emulate", 64, 8),
    ],
)
def test_persistent_gemm_matches_numpy(target, workers, group):
    M, N, K = 200, 264, 96  # 4 x 5 tiles of 64 x 64, with tails
    kernel = tilelang.compile(persistent_gemm(M, N, K, 64, 64, 32, workers, group), target=target)
    check_gemm(kernel, M, N, K, workers)


def test_tile_coordinates_are_computed_once_per_tile():
    # The panel order divides by the rows of the current panel (a runtime value). The
    # coordinates are bound once per tile, so the K loop's copies and the epilogue
    # reuse them instead of repeating that arithmetic: one tl::min per coordinate.
    kernel = tilelang.compile(
        persistent_gemm(200, 264, 96, 64, 64, 32, 7, 2), target="cuda -arch=sm_90a -emulate"
    )
    # On sm_90a the producer warpgroup runs the tile loop too and binds its own copies.
    source = kernel.get_kernel_source()
    assert source.count("tl::min<int32_t>(") == 4, source
    assert len(re.findall(r"const int32_t bx\w* = .*\n\s*const int32_t by\w* = ", source)) == 2, (
        source
    )


def test_the_producer_warpgroup_runs_the_tile_loop():
    # sm_90a: the T.Pipelined loop inside T.Persistent is warp-specialized. The producer
    # warpgroup runs the tile loop too, so the next tile's first stages load during the
    # epilogue; both sides count the pipeline's iterations over the tiles (pipe_count).
    kernel = tilelang.compile(
        persistent_gemm(200, 264, 96, 64, 64, 32, 7, 2), target="cuda -arch=sm_90a -emulate"
    )
    source = kernel.get_kernel_source()
    assert "tl::setmaxnreg_dec<24>()" in source, source
    assert source.count("int32_t pipe_count") == 2, source
    assert source.count("for (int32_t wave") == 2, source


@pytest.mark.parametrize("workers, group", [(7, 2), (3, 8)])
def test_a_shared_output_tile_is_stored_through_tma(workers, group):
    # T.Persistent's tile coordinates are provably >= 0 (its panel height is at least 1),
    # so the shared tile's copy to C may be a TMA store, whose box must not start before
    # the tensor.
    M, N, K = 200, 264, 96
    kernel = tilelang.compile(
        persistent_gemm(M, N, K, 64, 64, 32, workers, group, shared_out=True),
        target="cuda -arch=sm_90a -emulate",
    )
    assert "tl::tma_store<2>(" in kernel.get_kernel_source()
    check_gemm(kernel, M, N, K, workers)


def triangular_gemm(M, N, K, bM, bN, bK, workers, stages, dtype="float16"):
    """C = tril(A) @ B in tiles of bM = bK rows: tile row `by` reads only the K tiles
    0..by, so the pipeline has a different length in every round."""

    @T.prim_func
    def gemm(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(workers, threads=128) as pid:
            A_s = T.alloc_shared((bM, bK), dtype)
            B_s = T.alloc_shared((bK, bN), dtype)
            acc = T.alloc_fragment((bM, bN), "float32")
            for by, bx in T.Persistent([T.ceildiv(M, bM), T.ceildiv(N, bN)], workers, pid, 1):
                T.clear(acc)
                for k in T.Pipelined(by + 1, num_stages=stages):
                    T.copy(A[by * bM, k * bK], A_s)
                    T.copy(B[k * bK, bx * bN], B_s)
                    T.gemm(A_s, B_s, acc)
                T.copy(acc, C[by * bM, bx * bN])

    return gemm


@pytest.mark.parametrize("workers, stages", [(3, 2), (5, 3), (16, 4)])
def test_pipelines_of_different_lengths_in_one_persistent_loop(workers, stages):
    # Rounds of 1 to 4 iterations against 2-4 versions of the tiles: the counts carried
    # from round to round keep the producer and the consumers on the same versions and
    # mbarrier phases (the emulator reports a deadlock or a wrong parity otherwise).
    M, N, K, b = 256, 192, 256, 64
    kernel = tilelang.compile(
        triangular_gemm(M, N, K, b, b, b, workers, stages), target="cuda -arch=sm_90a -emulate"
    )
    assert "tl::setmaxnreg_dec<24>()" in kernel.get_kernel_source()
    # Tile row r sums the K tiles 0..r of its rows: A's blocks right of the diagonal are out.
    check_gemm(
        kernel, M, N, K, stages, np.kron(np.tril(np.ones((M // b, K // b))), np.ones((b, b)))
    )


def tile_numbers(domain, workers, group):
    """Out[coords] = the number of the tile (wave * workers + worker) that has them."""
    shape = tuple(domain)

    @T.prim_func
    def order(Out: T.Tensor(shape, "int32"), Count: T.Tensor((workers,), "int32")):
        with T.Kernel(workers, threads=1) as pid:
            n = T.alloc_var("int32", init=0)
            for coords in T.Persistent(list(domain), workers, pid, group):
                c = coords if isinstance(coords, tuple) else (coords,)
                Out[c] = n * workers + pid
                n = n + 1
            Count[pid] = n

    return order


@pytest.mark.parametrize(
    "domain, workers, group",
    [([5, 3], 4, 2), ([4, 6], 3, 1), ([7, 2], 16, 8), ([10], 3, 8), ([2, 3, 4], 5, 8)],
)
def test_tile_numbering(domain, workers, group):
    out = np.full(domain, -1, np.int32)
    count = np.zeros(workers, np.int32)
    tilelang.compile(tile_numbers(domain, workers, group), target="cpu")(out, count)
    total = int(np.prod(domain))
    assert sorted(out.ravel().tolist()) == list(range(total))  # every tile once
    assert count.tolist() == [len(range(w, total, workers)) for w in range(workers)]
    if len(domain) == 2:
        d0, d1 = domain
        for t in range(total):  # panels of `group` rows of tiles, column by column inside
            panel, within = divmod(t, group * d1)
            rows = min(group, d0 - panel * group)
            assert out[panel * group + within % rows, within // rows] == t
    else:
        np.testing.assert_array_equal(out.ravel(), np.arange(total))  # row-major


@pytest.mark.parametrize(
    "args, message",
    [
        (([], 4, 0), "domain must be a non-empty list"),
        (([4, 0], 4, 0), "domain entries must be positive integers"),
        (([4, 4], 0, 0), "wave_size must be positive"),
        (([4, 4], 4, 0, 0), "group_size must be a positive Python int or None"),
    ],
)
def test_bad_arguments(args, message):
    with pytest.raises(TileLangError, match=message):
        T.Persistent(*args)
