"""Reducers updated in place at indices a fragment layout does not follow
(`total[0] += x[i]`, `best[j]` in a loop over i, j), then combined by
T.finalize_reducer(acc): every thread keeps its own partial in registers, and the
finalize combines them across the block (lane shuffles, then the warps through
shared memory). Results on the cpu target and in the CUDA emulators against numpy on
random data; the emulators' race detector raises on any unsynchronized shared access,
so each call also shows the lowering is race-free."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate", "metal -emulate"]
rng = np.random.default_rng(41)

NUMPY = {
    "sum": np.sum,
    "max": np.max,
    "min": np.min,
    "bitand": np.bitwise_and.reduce,
    "bitor": np.bitwise_or.reduce,
    "bitxor": np.bitwise_xor.reduce,
}


def combine(op, acc, x):
    if op == "sum":
        return acc + x
    if op == "max":
        return T.max(acc, x)
    if op == "min":
        return T.min(acc, x)
    if op == "bitand":
        return acc & x
    if op == "bitor":
        return acc | x
    return acc ^ x


def inputs(n, dtype):
    if dtype == "int32":
        return rng.integers(-(1 << 20), 1 << 20, n).astype(np.int32)
    return rng.standard_normal(n).astype(np.float32)


def check(got, ref, dtype):
    if dtype == "int32":
        np.testing.assert_array_equal(got, np.asarray(ref).astype(np.int32))
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


OPS = [("sum", "int32"), ("sum", "float32"), ("max", "float32"), ("min", "float32"),
       ("bitand", "int32"), ("bitor", "int32"), ("bitxor", "int32")]  # fmt: skip


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op,dtype", OPS)
def test_scalar_reducer_over_a_short_loop(target, op, dtype):
    """A (1,) reducer fed by a loop of 8 iterations over a block of 128 threads."""
    n = 8

    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((1,), dtype)):
        with T.Kernel(1, threads=128):
            vals = T.alloc_fragment((n,), dtype)
            T.copy(A, vals)
            acc = T.alloc_reducer((1,), dtype, op=op, replication="all")
            if op == "sum":
                T.clear(acc)
            for i in T.Parallel(n):
                acc[0] = combine(op, acc[0], vals[i])
            T.finalize_reducer(acc)
            if T.get_thread_binding() == 0:
                B[0] = acc[0]

    kernel = tilelang.compile(main, out_idx=[1], target=target)
    a = inputs(n, dtype)
    ref = NUMPY[op](a.astype(np.float64) if dtype == "float32" and op == "sum" else a)
    check(kernel(a), [ref], dtype)


@pytest.mark.parametrize("target", TARGETS)
def test_two_loops_of_different_extents_feed_one_reducer(target):
    @T.prim_func
    def main(A: T.Tensor((8,), "int32"), B: T.Tensor((16,), "int32"), C: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_fragment((8,), "int32")
            b = T.alloc_fragment((16,), "int32")
            T.copy(A, a)
            T.copy(B, b)
            total = T.alloc_reducer((1,), "int32", replication="all")
            T.clear(total)
            for i in T.Parallel(8):
                total[0] += a[i]
            for j in T.Parallel(16):
                total[0] += b[j] * 3
            T.finalize_reducer(total)
            if T.get_thread_binding() == 0:
                C[0] = total[0]

    kernel = tilelang.compile(main, out_idx=[2], target=target)
    a, b = inputs(8, "int32"), inputs(16, "int32")
    check(kernel(a, b), [a.sum() + 3 * b.sum()], "int32")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("threads", [16, 48, 256])
def test_reducer_over_a_tile_and_from_shared_memory(target, threads):
    """A 2-d fragment loop and a loop over a shared tile (no register fragment spreads
    it) update a (2,) reducer; blocks of half a warp, of whole warps plus a half, and
    of 8 warps."""
    M, N = 16, 32

    @T.prim_func
    def main(A: T.Tensor((M, N), "int32"), S: T.Tensor((N,), "int32"), B: T.Tensor((2,), "int32")):
        with T.Kernel(1, threads=threads):
            tile = T.alloc_fragment((M, N), "int32")
            T.copy(A, tile)
            s = T.alloc_shared((N,), "int32")
            T.copy(S, s)
            acc = T.alloc_reducer((2,), "int32", replication="all")
            T.clear(acc)
            for i, j in T.Parallel(M, N):
                acc[0] += tile[i, j]
            for j in T.Parallel(N):
                acc[1] += s[j] * j
            T.finalize_reducer(acc)
            T.copy(acc, B)

    kernel = tilelang.compile(main, out_idx=[2], target=target)
    a, s = inputs(M * N, "int32").reshape(M, N), inputs(N, "int32")
    check(kernel(a, s), [a.sum(), (s * np.arange(N)).sum()], "int32")


@pytest.mark.parametrize("target", TARGETS)
def test_reducer_indexed_by_the_inner_variable(target):
    """best[j] in a loop over i, j: every column's maximum, read back in a loop over
    i, j and in one over j alone (where it would otherwise be the loop's layout)."""
    R, C = 12, 8

    @T.prim_func
    def main(
        A: T.Tensor((R, C), "float32"), B: T.Tensor((R, C), "float32"), X: T.Tensor((C,), "float32")
    ):
        with T.Kernel(1, threads=64):
            tile = T.alloc_fragment((R, C), "float32")
            T.copy(A, tile)
            best = T.alloc_reducer((C,), "float32", op="max", replication="all")
            for i, j in T.Parallel(R, C):
                best[j] = T.max(best[j], tile[i, j])
            T.finalize_reducer(best)
            for i, j in T.Parallel(R, C):
                tile[i, j] = tile[i, j] - best[j]
            T.copy(tile, B)
            for j in T.Parallel(C):
                X[j] = best[j] * 2

    kernel = tilelang.compile(main, out_idx=[1, 2], target=target)
    a = rng.standard_normal((R, C)).astype(np.float32) - 4  # all negative: max starts at -inf
    b, x = kernel(a)
    np.testing.assert_allclose(b, a - a.max(0), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(x, a.max(0) * 2)


@pytest.mark.parametrize("target", TARGETS)
def test_reducer_fed_by_a_row_vector(target):
    """A loop over a per-row vector whose rows several threads hold: each row counts
    once."""
    M, N = 32, 64

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=128):
            tile = T.alloc_fragment((M, N), "float32")
            T.copy(A, tile)
            rows = T.alloc_fragment((M,), "float32")
            T.reduce_max(tile, rows, dim=1)
            total = T.alloc_reducer((1,), "float32", replication="all")
            T.clear(total)
            for i in T.Parallel(M):
                total[0] += rows[i]
            T.finalize_reducer(total)
            if T.get_thread_binding() == 0:
                B[0] = total[0]

    kernel = tilelang.compile(main, out_idx=[1], target=target)
    a = rng.standard_normal((M, N)).astype(np.float32)
    np.testing.assert_allclose(kernel(a), [a.max(1).astype(np.float64).sum()], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_reducers_reopened_in_a_pipelined_loop(target):
    """Online log-sum-exp: a max and a sum reducer refilled and finalized once per
    tile of a T.Pipelined loop, the max seeded with the running maximum."""
    K, BK = 512, 128

    @T.prim_func
    def main(A: T.Tensor((K,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=128):
            a_s = T.alloc_shared((BK,), "float32")
            a = T.alloc_fragment((BK,), "float32")
            run_max = T.alloc_fragment((1,), "float32")
            run_sum = T.alloc_fragment((1,), "float32")
            run_max[0] = -T.infinity("float32")
            run_sum[0] = 0.0
            for k in T.Pipelined(K // BK, num_stages=2):
                T.copy(A[k * BK], a_s)
                T.copy(a_s, a)
                m = T.alloc_reducer((1,), "float32", op="max", replication="all")
                T.fill(m, run_max[0])
                for i in T.Parallel(BK):
                    m[0] = T.max(m[0], a[i])
                T.finalize_reducer(m)
                s = T.alloc_reducer((1,), "float32", replication="all")
                T.clear(s)
                for i in T.Parallel(BK):
                    s[0] += T.exp(a[i] - m[0])
                T.finalize_reducer(s)
                # (One thread keeps the running values: on the cpu target a fragment
                # is one array for the block, which every thread would update.)
                if T.get_thread_binding() == 0:
                    run_sum[0] = T.exp(run_max[0] - m[0]) * run_sum[0] + s[0]
                    run_max[0] = m[0]
            if T.get_thread_binding() == 0:
                B[0] = T.log(run_sum[0]) + run_max[0]

    kernel = tilelang.compile(main, out_idx=[1], target=target)
    a = rng.standard_normal(K).astype(np.float32) * 3
    a64 = a.astype(np.float64)
    ref = np.log(np.exp(a64 - a64.max()).sum()) + a64.max()
    np.testing.assert_allclose(kernel(a), [ref], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_reducer_finalized_in_one_arm_of_a_uniform_branch(target):
    n = 8

    @T.prim_func
    def main(A: T.Tensor((n,), "int32"), F: T.Tensor((2,), "int32"), B: T.Tensor((2,), "int32")):
        with T.Kernel(2, threads=128) as bx:
            vals = T.alloc_fragment((n,), "int32")
            T.copy(A, vals)
            total = T.alloc_reducer((1,), "int32", op="bitxor", replication="all")
            T.clear(total)
            if F[bx] > 0:
                for i in T.Parallel(n):
                    total[0] = total[0] ^ vals[i]
                T.finalize_reducer(total)
                if T.get_thread_binding() == 0:
                    B[bx] = total[0]
            else:
                if T.get_thread_binding() == 0:
                    B[bx] = -1

    kernel = tilelang.compile(main, out_idx=[2], target=target)
    a = inputs(n, "int32")
    check(kernel(a, np.array([1, -1], np.int32)), [np.bitwise_xor.reduce(a), -1], "int32")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", ["bitand", "bitor", "bitxor"])
def test_row_reducer_of_a_bitwise_op(target, op):
    """A per-row reducer (several threads hold each row) of a bitwise op: the lanes
    combine with that op (Metal's simd_and / simd_or / simd_xor), not with a sum."""
    M, N = 8, 64

    @T.prim_func
    def main(A: T.Tensor((M, N), "int32"), B: T.Tensor((M,), "int32")):
        with T.Kernel(1, threads=128):
            tile = T.alloc_fragment((M, N), "int32")
            T.copy(A, tile)
            acc = T.alloc_reducer((M,), "int32", op=op, replication="all")
            for i, j in T.Parallel(M, N):
                acc[i] = combine(op, acc[i], tile[i, j])
            T.finalize_reducer(acc)
            T.copy(acc, B)

    kernel = tilelang.compile(main, out_idx=[1], target=target)
    a = inputs(M * N, "int32").reshape(M, N)
    check(kernel(a), NUMPY[op](a, axis=1), "int32")
