"""Results TileLang's own suite (tests/upstream/run.py) found silently wrong, each checked
against numpy on the CPU and the emulated CUDA targets:
- T.any_of / T.all_of of a buffer or slice test its elements (a tile given to `if` is an
  error, not Python's truth value), and an `if` that reads shared memory the threads
  just wrote waits for the writes;
- T.annotate_safe_value applies to every load of the tensor outside it (T.Parallel
  loops, scalar code), not only to T.copy;
- T.atomic_add of a one-element buffer (not an element) is a tile atomic: the block
  adds once, not once per thread;
- tfloat32 tensor parameters take float32 arrays, and T.gemm of tfloat32 tiles runs on
  the tf32 tensor cores (operands rounded to 10 mantissa bits) on the CUDA targets;
- T.finalize_reducer of a reducer updated in place (the older API) combines the
  partials of every thread that holds a row (lanes of a warp and several warps);
- a pipelined loop entered again (in a serial loop, as stream-K's tiles do) waits for
  the previous instance's last gemm before its first copies overwrite that stage."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate"]


def mask_tests(blocks, steps, width, mask_dtype):
    """Out[b, k, 0..2]: any_of of the global slice, all_of of a shared copy, any_of of a
    local copy of Mask[b, k, :]; a float tile guarded by the slice's any_of sums rows."""

    @T.prim_func
    def k(
        Mask: T.Tensor((blocks, steps, width), mask_dtype),
        X: T.Tensor((blocks, steps, 32), "float32"),
        Out: T.Tensor((blocks, steps, 3), "int32"),
        Sum: T.Tensor((blocks, 32), "float32"),
    ):
        with T.Kernel(blocks, threads=32) as bx:
            m_shared = T.alloc_shared((width,), mask_dtype)
            m_local = T.alloc_local((width,), mask_dtype)
            acc = T.alloc_fragment((32,), "float32")
            T.clear(acc)
            for s in T.serial(steps):
                for i in T.serial(width):
                    m_shared[i] = Mask[bx, s, i]
                    m_local[i] = Mask[bx, s, i]
                if T.any_of(Mask[bx, s, :]):
                    for j in T.Parallel(32):
                        acc[j] += X[bx, s, j]
                tx = T.get_thread_binding()
                if tx == 0:
                    Out[bx, s, 0] = T.if_then_else(T.any_of(Mask[bx, s, 0:width]), 1, 0)
                    Out[bx, s, 2] = T.if_then_else(T.any_of(m_local), 1, 0)
                if T.all_of(m_shared):
                    if tx == 0:
                        Out[bx, s, 1] = 1
                else:
                    if tx == 0:
                        Out[bx, s, 1] = 0
            T.copy(acc, Sum[bx, :])

    return k


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("mask_dtype", ["bool", "int32"])
def test_any_of_all_of_read_every_element(target, mask_dtype):
    rng = np.random.default_rng(7)
    blocks, steps, width = 3, 6, 3
    mask = rng.random((blocks, steps, width)) < 0.35
    mask[0, 0] = True  # all_of true somewhere
    mask[0, 1] = False  # any_of false somewhere
    x = rng.standard_normal((blocks, steps, 32)).astype(np.float32)
    out = np.full((blocks, steps, 3), -1, np.int32)
    total = np.zeros((blocks, 32), np.float32)
    kernel = tilelang.compile(mask_tests(blocks, steps, width, mask_dtype), target=target)
    given = mask if mask_dtype == "bool" else mask.astype(np.int32) * rng.integers(1, 9, mask.shape)
    kernel(given.astype(mask_dtype), x, out, total)
    np.testing.assert_array_equal(out[..., 0], mask.any(-1))
    np.testing.assert_array_equal(out[..., 1], mask.all(-1))
    np.testing.assert_array_equal(out[..., 2], mask.any(-1))
    want = (x.astype(np.float64) * mask.any(-1)[..., None]).sum(1)
    np.testing.assert_allclose(total, want, rtol=1e-5, atol=1e-5)


def test_a_tile_as_a_condition_is_an_error():
    with pytest.raises(tilelang.TileLangError, match=r"a condition got the tile M\[.*T\.any_of"):

        @T.prim_func
        def k(M: T.Tensor((4, 8), "bool"), Out: T.Tensor((4,), "int32")):
            with T.Kernel(4, threads=32) as bx:
                if M[bx, :]:
                    Out[bx] = 1

    with pytest.raises(tilelang.TileLangError, match=r"T\.any_of\(M\[.*extents must be constants"):

        @T.prim_func
        def d(M: T.Tensor((4, 8), "bool"), Out: T.Tensor((4,), "int32"), n: T.int32):
            with T.Kernel(4, threads=32) as bx:
                Out[bx] = T.if_then_else(T.any_of(M[bx, 0:n]), 1, 0)


def shifted_with_safe_value(m, n, shift, safe):
    @T.prim_func
    def k(
        A: T.Tensor((m, n), "float32"), B: T.Tensor((m, n), "float32"), C: T.Tensor((m,), "float32")
    ):
        with T.Kernel(T.ceildiv(m, 16), threads=64) as bx:
            T.annotate_safe_value({A: safe})
            tile = T.alloc_shared((16, n), "float32")
            for i, j in T.Parallel(16, n):
                tile[i, j] = A[bx * 16 + i - shift, j]
            T.copy(tile, B[bx * 16, 0])
            if T.get_thread_binding() == 0:
                for i in T.serial(16):
                    C[bx * 16 + i] = A[bx * 16 + i + shift, n - 1]

    return k


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("safe", [10.0, -3])
def test_safe_value_fills_parallel_and_scalar_loads(target, safe):
    m, n, shift = 48, 24, 5
    a = np.random.default_rng(3).standard_normal((m, n)).astype(np.float32)
    b = np.zeros((m, n), np.float32)
    c = np.zeros(m, np.float32)
    tilelang.compile(shifted_with_safe_value(m, n, shift, safe), target=target)(a, b, c)
    want_b = np.full((m, n), safe, np.float32)
    want_b[shift:] = a[:-shift]
    want_c = np.full(m, safe, np.float32)
    want_c[:-shift] = a[shift:, n - 1]
    np.testing.assert_array_equal(b, want_b)
    np.testing.assert_array_equal(c, want_c)


def one_element_tile_atomics():
    @T.prim_func
    def k(A: T.Tensor((1,), "float32"), B: T.Tensor((1,), "float32"), C: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=128) as _:
            counter = T.alloc_shared((1,), "int32")
            a_local = T.alloc_local((1,), "float32")
            T.copy(A, a_local)
            T.clear(counter)
            T.atomic_add(B, a_local)
            T.atomic_add(B, 2.5)
            T.atomic_max(B, -100.0)
            T.atomic_add(counter, 3)
            T.copy(counter, C)

    return k


@pytest.mark.parametrize("target", TARGETS)
def test_atomic_on_a_one_element_buffer_adds_once(target):
    a = np.random.default_rng(5).standard_normal(1).astype(np.float32)
    b = np.array([0.75], np.float32)
    c = np.zeros(1, np.int32)
    tilelang.compile(one_element_tile_atomics(), target=target)(a, b, c)
    np.testing.assert_allclose(b, np.float32(0.75 + a[0] + 2.5), rtol=1e-6)
    np.testing.assert_array_equal(c, [3])


def tf32_gemm(m, n, k):
    @T.prim_func
    def g(
        A: T.Tensor((m, k), "tfloat32"),
        B: T.Tensor((k, n), "tfloat32"),
        C: T.Tensor((m, n), "float32"),
    ):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_shared((m, k), "tfloat32")
            b = T.alloc_shared((k, n), "tfloat32")
            c = T.alloc_fragment((m, n), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, clear_accum=True)
            T.copy(c, C)

    return g


def to_tf32(x):
    """x rounded to the nearest tf32 (10 mantissa bits), ties away from zero (cvt.rna)."""
    bits = x.view(np.uint32).astype(np.uint64)
    return ((bits + 0x1000) & ~np.uint64(0x1FFF)).astype(np.uint32).view(np.float32)


@pytest.mark.parametrize("target", TARGETS)
def test_tfloat32_parameters_take_float32_and_gemm_at_tf32(target):
    m, n, k = 64, 64, 32
    rng = np.random.default_rng(11)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    tilelang.compile(tf32_gemm(m, n, k), target=target)(a, b, c)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, exact, rtol=1e-2, atol=1e-2)  # TileLang's tolerance for tf32
    # The CUDA targets multiply tf32 operands (the tensor cores); the CPU multiplies the floats.
    cuda = target.startswith("cuda")
    want = to_tf32(a).astype(np.float64) @ to_tf32(b).astype(np.float64) if cuda else exact
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)


def row_reducers(rows, cols, threads, dtype, op):
    @T.prim_func
    def k(
        X: T.Tensor((rows, cols), dtype),
        Y: T.Tensor((rows, cols), dtype),
        O: T.Tensor((rows, cols), dtype),
    ):
        with T.Kernel(1, threads=threads):
            x = T.alloc_fragment((rows, cols), dtype)
            y = T.alloc_fragment((rows, cols), dtype)
            out = T.alloc_fragment((rows, cols), dtype)
            acc = T.alloc_reducer((rows,), dtype, op=op)
            T.copy(X, x)
            T.copy(Y, y)
            if op == "sum":
                T.clear(acc)
            for i, j in T.Parallel(rows, cols):
                if op == "sum":
                    acc[i] += x[i, j] * y[i, j]
                elif op == "max":
                    acc[i] = T.max(acc[i], x[i, j] * y[i, j])
                else:
                    acc[i] = T.min(acc[i], x[i, j] * y[i, j])
            T.finalize_reducer(acc)
            for i, j in T.Parallel(rows, cols):
                out[i, j] = x[i, j] - acc[i]
            T.copy(out, O)

    return k


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "rows, cols, threads, dtype, op",
    [
        (64, 8, 128, "float32", "sum"),  # two lanes per row
        (8, 256, 128, "float32", "sum"),  # a row spread over several warps
        (32, 128, 128, "float16", "max"),
        (16, 64, 256, "float32", "min"),
    ],
)
def test_finalize_reducer_combines_every_holder(target, rows, cols, threads, dtype, op):
    rng = np.random.default_rng(13)
    x = rng.standard_normal((rows, cols)).astype(dtype)
    y = rng.standard_normal((rows, cols)).astype(dtype)
    o = np.zeros((rows, cols), dtype)
    tilelang.compile(row_reducers(rows, cols, threads, dtype, op), target=target)(x, y, o)
    prod = x.astype(np.float64) * y.astype(np.float64)
    if dtype == "float16":
        prod = prod.astype(np.float16).astype(np.float64)  # each product rounds to the dtype
    red = {"sum": prod.sum(1), "max": prod.max(1), "min": prod.min(1)}[op]
    want = x.astype(np.float64) - red[:, None]
    tol = 2e-3 if dtype == "float16" else 1e-4
    np.testing.assert_allclose(o.astype(np.float64), want, rtol=tol, atol=tol)


def repeated_pipeline(m, n, k, bk, rounds, stages):
    steps = k // bk // rounds

    @T.prim_func
    def g(
        A: T.Tensor((m, k), "float16"),
        B: T.Tensor((n, k), "float16"),
        C: T.Tensor((m, n), "float32"),
    ):
        with T.Kernel(1, threads=128) as _:
            a_s = T.alloc_shared((m, bk), "float16")
            b_s = T.alloc_shared((n, bk), "float16")
            c = T.alloc_fragment((m, n), "float32")
            T.clear(c)
            for r in T.serial(rounds):
                for s in T.Pipelined(steps, num_stages=stages):
                    T.copy(A[0, (r * steps + s) * bk], a_s)
                    T.copy(B[0, (r * steps + s) * bk], b_s)
                    T.gemm(a_s, b_s, c, transpose_B=True)
            T.copy(c, C)

    return g


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("stages", [2, 3])
def test_a_pipeline_entered_again_waits_for_its_last_gemm(target, stages):
    m, n, k, bk, rounds = 16, 128, 3 * 4 * 32, 32, 4  # 3 steps a round: the last reads stage 0 or 2
    rng = np.random.default_rng(17)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((n, k)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    tilelang.compile(repeated_pipeline(m, n, k, bk, rounds, stages), target=target)(a, b, c)
    want = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-2)
