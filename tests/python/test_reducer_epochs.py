"""Reducer epochs (T.alloc_reducer + T.reducer_init / T.reducer_update /
T.finalize_reducer(acc, dst)), the older fragment form (`acc[i] += x`, then
T.finalize_reducer(acc)) and the bitwise atomics (T.atomic_and / or / xor): results on
the cpu target and in the CUDA emulator (sm_80) against numpy on random data, where an
epoch keeps its partials (registers, no atomics), and the frontend's errors for misuse
of an epoch."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate"]
rng = np.random.default_rng(23)


def row_reduce(m, k, op, dtype, threads, seed=None):
    """out[i] = seed (op) A[i, 0] (op) ... over two serial tiles of k columns."""

    @T.prim_func
    def main(A: T.Tensor((m, 2 * k), dtype), B: T.Tensor((m,), dtype)):
        with T.Kernel(1, threads=threads):
            tile = T.alloc_fragment((m, k), dtype)
            acc = T.alloc_reducer((m,), dtype, op=op)
            if seed is None:
                T.reducer_init(acc)
            else:
                T.reducer_init(acc, seed)
            for t in T.serial(2):
                T.copy(A[:, t * k : (t + 1) * k], tile)
                for i, j in T.Parallel(m, k):
                    T.reducer_update(acc[i], tile[i, j])
            out = T.alloc_fragment((m,), dtype)
            T.finalize_reducer(acc, out)
            T.copy(out, B)

    return main


NUMPY = {
    "sum": np.sum,
    "max": np.max,
    "min": np.min,
    "bitand": np.bitwise_and.reduce,
    "bitor": np.bitwise_or.reduce,
    "bitxor": np.bitwise_xor.reduce,
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "op,dtype,seed",
    [("sum", "float32", None), ("max", "float32", None), ("min", "float32", 0.25),
     ("sum", "int32", 7), ("bitand", "int32", None), ("bitor", "int32", None),
     ("bitxor", "int32", 5)],
)  # fmt: skip
def test_row_reduce(target, op, dtype, seed):
    m, k = 16, 8
    kernel = tilelang.compile(row_reduce(m, k, op, dtype, 64, seed), out_idx=[1], target=target)
    if dtype == "float32":
        a = rng.standard_normal((m, 2 * k)).astype(np.float32)
    else:
        a = rng.integers(1, 1 << 16, (m, 2 * k)).astype(np.int32)
    got = kernel(a)
    cols = a if seed is None else np.concatenate([np.full((m, 1), seed, a.dtype), a], axis=1)
    ref = NUMPY[op](cols.astype(np.float64) if op == "sum" and dtype == "float32" else cols, axis=1)
    if dtype == "float32":
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, ref.astype(np.int32))


@pytest.mark.parametrize("target", TARGETS)
def test_scalar_sum_counts_each_iteration_once(target):
    """8 iterations over 128 threads: each contributes once (36 for 1..8)."""

    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((8,), "float32")
            T.copy(A, src)
            acc = T.alloc_reducer((1,), "float32", op="sum")
            T.reducer_init(acc)
            for i in T.Parallel(8):
                T.reducer_update(acc[0], src[i])
            out = T.alloc_fragment((1,), "float32")
            T.finalize_reducer(acc, out, batch=1)
            if T.get_thread_binding() == 0:
                B[0] = out[0]

    kernel = tilelang.compile(main, out_idx=[1], target=target)
    a = rng.standard_normal(8).astype(np.float32)
    np.testing.assert_allclose(kernel(a), [a.astype(np.float64).sum()], rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_bitwise_atomics(target):
    n = 64

    @T.prim_func
    def main(A: T.Tensor((n,), "int32"), Init: T.Tensor((3,), "int32"), B: T.Tensor((3,), "int32")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            S = T.alloc_shared((3,), "int32")
            if tx < 3:
                S[tx] = Init[tx]
            T.sync_threads()
            T.atomic_and(S[0], A[tx])
            T.atomic_or(S[1], A[tx], memory_order="release")
            T.atomic_xor(S[2], A[tx])
            T.sync_threads()
            if tx < 3:
                B[tx] = S[tx]

    kernel = tilelang.compile(main, out_idx=[2], target=target)
    a = rng.integers(0, 1 << 30, n).astype(np.int32) | 0x101
    init = rng.integers(0, 1 << 30, 3).astype(np.int32)
    ref = [
        np.bitwise_and.reduce(np.append(a, init[0])),
        np.bitwise_or.reduce(np.append(a, init[1])),
        np.bitwise_xor.reduce(np.append(a, init[2])),
    ]
    np.testing.assert_array_equal(kernel(a, init), ref)


@pytest.mark.parametrize(
    "case,message",
    [
        ("no_init", "T.reducer_update of reducer 'acc' before T.reducer_init"),
        ("double_init", "double T.reducer_init of reducer 'acc'"),
        ("store", "illegal read of reducer 'acc'"),
        ("read", "illegal read of reducer 'acc'"),
        ("outside", "T.reducer_update of reducer 'acc' outside any T.Parallel loop"),
        ("no_finalize", "reducer 'acc' was opened by T.reducer_init but never finalized"),
        ("seed_dtype", "the starting value's dtype float16 does not match reducer 'acc'"),
        ("dst_shape", "destination 'frag' must have the reducer's shape [1] and dtype float32"),
    ],
)
def test_epoch_errors(case, message):
    def trace():
        @T.prim_func
        def main(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
            with T.Kernel(1, threads=32):
                src = T.alloc_fragment((8,), "float32")
                T.copy(A, src)
                acc = T.alloc_reducer((1,), "float32", op="sum")
                out = T.alloc_fragment((1,), "float32")
                if case == "seed_dtype":
                    T.reducer_init(acc, T.float16(1.0))
                elif case != "no_init":
                    T.reducer_init(acc)
                if case == "double_init":
                    T.reducer_init(acc)
                if case == "read":
                    out[0] = acc[0]
                if case == "outside":
                    T.reducer_update(acc[0], src[0])
                for i in T.Parallel(8):
                    if case == "store":
                        acc[0] += src[i]
                    else:
                        T.reducer_update(acc[0], src[i])
                if case == "dst_shape":
                    T.finalize_reducer(acc, T.alloc_fragment((2,), "float32"))
                if case != "no_finalize":
                    T.finalize_reducer(acc, out)
                B[0] = out[0]

    with pytest.raises(Exception, match=message.replace("[", r"\[").replace("]", r"\]")):
        trace()


def scoped_epoch(where):
    """A sum epoch per iteration of a serial loop over the 4 rows of A; `where` places
    the init and the finalize relative to that loop."""

    @T.prim_func
    def main(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=64):
            src = T.alloc_fragment((4, 8), "float32")
            T.copy(A, src)
            acc = T.alloc_reducer((1,), "float32", op="sum")
            out = T.alloc_fragment((1,), "float32")
            if where == "extra_loop":
                T.reducer_init(acc)
            for r in T.serial(4):
                if where != "extra_loop":
                    T.reducer_init(acc)
                for i in T.Parallel(8):
                    T.reducer_update(acc[0], src[r, i])
                if where == "in_loop":
                    T.finalize_reducer(acc, out)
                elif where == "in_loop_if":
                    if r >= 0:
                        T.finalize_reducer(acc, out)
                elif where == "extra_loop":
                    T.finalize_reducer(acc, out)
                if where in ("in_loop", "in_loop_if") and T.get_thread_binding() == 0:
                    B[r] = out[0]
            if where == "after_loop":
                T.finalize_reducer(acc, out)

    return main


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("where", ["in_loop", "in_loop_if"])
def test_an_epoch_per_iteration_finalized_in_its_loop(target, where):
    kernel = tilelang.compile(scoped_epoch(where), out_idx=[1], target=target)
    a = rng.standard_normal((4, 8)).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "where,message",
    [
        ("after_loop", "is outside a loop that encloses its T.reducer_init"),
        ("extra_loop", "is inside a loop that does not enclose its T.reducer_init"),
    ],
)
def test_a_finalize_outside_the_scope_of_its_init_is_refused(where, message):
    with pytest.raises(
        Exception,
        match="T.finalize_reducer of reducer 'acc' is not in the scope of its T.reducer_init: "
        "it " + message,
    ):
        scoped_epoch(where)


def test_bitwise_reducer_needs_integers():
    with pytest.raises(
        AssertionError, match="bitwise reducer op 'bitand' requires an integer dtype"
    ):

        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32):
                T.alloc_reducer((1,), "float32", op="bitand")


@pytest.mark.parametrize("target", TARGETS)
def test_reduce_tuning_arguments(target):
    """TileLang's batch= and annotations= change no result: with nan_propagate=True a row
    max with a NaN is NaN, the others are the row maxima; sums and scans as without them."""
    m, n = 16, 32

    @T.prim_func
    def main(A: T.Tensor((m, n), "float32"), Mx: T.Tensor((m,), "float32"),
             S: T.Tensor((m,), "float32"), C: T.Tensor((m, n), "float32")):  # fmt: skip
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((m, n), "float32")
            mx = T.alloc_fragment((m,), "float32")
            sm = T.alloc_fragment((m,), "float32")
            T.copy(A, src)
            T.reduce_max(src, mx, dim=1, batch=2, nan_propagate=True)
            T.reduce_sum(src, sm, dim=1, batch=4, annotations={"enable_fadd2": False})
            T.copy(mx, Mx)
            T.copy(sm, S)
            tile = T.alloc_shared((m, n), "float32")
            T.copy(A, tile)
            T.cumsum(tile, dim=1, annotations={})
            T.copy(tile, C)

    kernel = tilelang.compile(main, out_idx=[1, 2, 3], target=target)
    a = rng.standard_normal((m, n)).astype(np.float32)
    a[3, 17] = np.nan
    mx, sm, c = kernel(a)
    np.testing.assert_array_equal(mx, a.max(axis=1))
    np.testing.assert_allclose(sm, a.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c, np.cumsum(a.astype(np.float64), axis=1), rtol=1e-5, atol=1e-5)


def test_reduce_tuning_errors():
    with pytest.raises(Exception, match=r"T.reduce_sum: batch must be >= 1 \(an int\), got 0"):

        @T.prim_func
        def main(A: T.Tensor((4, 4), "float32"), B: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=32):
                T.reduce_sum(A, B, dim=1, batch=0)


@pytest.mark.parametrize(
    ("batch", "match"),
    [
        (128, r"batch=128 exceeds total output elements \(64\)"),
        (3, r"batch=3 must evenly divide the 64 output elements"),
    ],
)
@pytest.mark.parametrize("finalize", [True, False])
def test_a_batch_that_does_not_divide_the_outputs_is_refused(batch, match, finalize):
    """TileLang batches `batch` outputs per collective, so it must divide them."""
    with pytest.raises(
        Exception, match=("T.finalize_reducer: " if finalize else "T.reduce_sum: ") + match
    ):

        @T.prim_func
        def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=256):
                acc = T.alloc_reducer(64, "float32", op="sum", replication="all")
                src = T.alloc_fragment((64, 64), "float32")
                T.copy(A, src)
                if finalize:
                    T.clear(acc)
                    for i, j in T.Parallel(64, 64):
                        acc[i] += src[i, j]
                    T.finalize_reducer(acc, batch=batch)
                else:
                    T.reduce_sum(src, acc, dim=1, batch=batch)
                T.copy(acc, B)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_reduce_into_a_scalar_variable(target, kind):
    """A T.alloc_var is a destination of one element (TileLang's local-to-var reduction)."""

    @T.prim_func
    def main(A: T.Tensor((8,), "float16"), B: T.Tensor((1,), "float16")):
        with T.Kernel(1, threads=1):
            src = T.alloc_local((8,), "float16")
            dst = T.alloc_var("float16")
            for i in T.serial(8):
                src[i] = A[i]
            getattr(T, "reduce_" + kind)(src, dst, dim=0)
            B[0] = dst

    a = rng.standard_normal(8).astype(np.float16)
    b = np.zeros(1, np.float16)
    tilelang.compile(main, target=target)(a, b)
    ref = {"sum": a.astype(np.float32).sum(), "max": a.max(), "min": a.min()}[kind]
    np.testing.assert_allclose(b[0], ref, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_row_max_across_threads(target, dtype):
    """Rows of 16-bit floats reduced across the threads of a warp: the CUDA header's
    warp_allreduce moves them as lane words (the emulator once refused 2-byte shuffles)."""
    import ml_dtypes

    m, n = 16, 64
    np_dtype = np.float16 if dtype == "float16" else ml_dtypes.bfloat16

    @T.prim_func
    def main(A: T.Tensor((m, n), dtype), B: T.Tensor((m,), dtype)):
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((m, n), dtype)
            dst = T.alloc_fragment((m,), dtype)
            T.copy(A, src)
            T.reduce_max(src, dst, dim=1, nan_propagate=True)
            T.copy(dst, B)

    kernel = tilelang.compile(main, out_idx=[1], target=target)
    a = rng.standard_normal((m, n)).astype(np_dtype)
    a[5, 9] = np.nan
    got = kernel(a).astype(np.float32)
    ref = a.astype(np.float32).max(axis=1)
    np.testing.assert_array_equal(got, ref)


def _rows_from(m, k, tiles, threads, epoch, pipelined, shared):
    """out[i] = sum of A[i, :] over `tiles` tiles of k columns, each read into a shared
    tile (`shared`) or a fragment, by a reducer epoch (`epoch`) or the older fragment
    form, in a T.Pipelined or a serial loop."""

    @T.prim_func
    def main(A: T.Tensor((m, tiles * k), "float32"), B: T.Tensor((m,), "float32")):
        with T.Kernel(1, threads=threads):
            acc = T.alloc_reducer((m,), "float32", op="sum")
            if epoch:
                T.reducer_init(acc)
            else:
                T.clear(acc)
            tile = (
                T.alloc_shared((m, k), "float32") if shared else T.alloc_fragment((m, k), "float32")
            )
            loop = T.Pipelined(tiles, num_stages=2) if pipelined else T.serial(tiles)
            for t in loop:
                T.copy(A[0, t * k], tile)
                for i, j in T.Parallel(m, k):
                    if epoch:
                        T.reducer_update(acc[i], tile[i, j])
                    else:
                        acc[i] += tile[i, j]
            if epoch:
                out = T.alloc_fragment((m,), "float32")
                T.finalize_reducer(acc, out)
                T.copy(out, B)
            else:
                T.finalize_reducer(acc)
                T.copy(acc, B)

    return main


@pytest.mark.parametrize("target", [*TARGETS, "metal -emulate"])
@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("pipelined", [False, True])
def test_epoch_partials_are_registers(target, shared, pipelined):
    """An epoch combines each thread's updates in its own registers and the threads'
    partials by the fragment reduction's lane and cross-warp steps, as the older form
    `acc[i] += x` does: no atomics, no shared copy of the reducer, and the same bits
    as that form (the same combination order on every run). Also where the updates
    read a shared tile that no register fragment lays out (each thread then keeps a
    partial of every output; a race on a shared reducer before)."""
    m, k, tiles, threads = 32, 64, 3, 128
    a = rng.standard_normal((m, tiles * k)).astype(np.float32)
    got = {}
    for epoch in (True, False):
        kernel = tilelang.compile(
            _rows_from(m, k, tiles, threads, epoch, pipelined, shared), out_idx=[1], target=target
        )
        if target.startswith("cuda"):
            body = kernel.get_kernel_source().split("#ifdef TL_EMULATE")[0]
            assert "Atomic" not in body and "TL_SMEM(acc," not in body, body
            assert "float acc[" in body and "tl::AllReduce<tl::SumOp" in body, body
        got[epoch] = kernel(a)
    np.testing.assert_allclose(got[True], a.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[True], got[False])


@pytest.mark.parametrize("target", TARGETS)
def test_epoch_seed_is_read_at_init(target):
    """T.reducer_init(acc, x[0]) reads x[0] once, where it stands: a store into x
    afterwards does not change the epoch's starting value."""

    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((8,), "float32")
            T.copy(A, src)
            seed = T.alloc_fragment((1,), "float32")
            seed[0] = 5.0
            acc = T.alloc_reducer((1,), "float32", op="sum")
            T.reducer_init(acc, seed[0])
            seed[0] = 100.0
            for i in T.Parallel(8):
                T.reducer_update(acc[0], src[i])
            out = T.alloc_fragment((1,), "float32")
            T.finalize_reducer(acc, out)
            if T.get_thread_binding() == 0:
                B[0] = out[0]

    kernel = tilelang.compile(main, out_idx=[1], target=target)
    a = np.arange(1, 9, dtype=np.float32)
    np.testing.assert_array_equal(kernel(a), [41.0])


@pytest.mark.parametrize("target", [*TARGETS, "metal -emulate"])
def test_epoch_over_a_row_vector_held_by_several_lanes(target):
    """The rows of a T.reduce_max result are held by every lane of their row; an epoch
    updated in a loop over them counts each row once (one holder runs the iteration),
    not once per lane."""
    m, n = 16, 64

    @T.prim_func
    def main(A: T.Tensor((m, n), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((m, n), "float32")
            T.copy(A, src)
            rowmax = T.alloc_fragment((m,), "float32")
            T.reduce_max(src, rowmax, dim=1)
            acc = T.alloc_reducer((1,), "float32", op="sum")
            T.reducer_init(acc)
            for i in T.Parallel(m):
                T.reducer_update(acc[0], rowmax[i])
            out = T.alloc_fragment((1,), "float32")
            T.finalize_reducer(acc, out)
            if T.get_thread_binding() == 0:
                B[0] = out[0]

    a = rng.standard_normal((m, n)).astype(np.float32)
    got = tilelang.compile(main, out_idx=[1], target=target)(a)
    np.testing.assert_allclose(got, [a.max(axis=1).astype(np.float64).sum()], rtol=1e-5)
