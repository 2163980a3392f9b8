"""Reductions, scans and reducers on the CPU target, compared with numpy on random data:
every reduce kind over both dims (negative ones too) with clear=True/False, a 3-D case
keeping the reduced dim, cumsum/cummax forward and reversed, alloc_reducer; and the
errors a misuse gets (dim out of range, wrong destination shape ...)."""

import inspect

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T

rng = np.random.default_rng(7)
M, N = 7, 13  # not multiples of anything
KINDS = ["sum", "max", "min", "abssum", "absmax"]
# (dim as written, the numpy axis, clear) for each of the four reductions per kind
CASES = [(-1, 1, True), (0, 0, False), (1, 1, False), (-2, 0, True)]

NP_REDUCE = {
    "sum": lambda a, ax: a.sum(ax),
    "max": lambda a, ax: a.max(ax),
    "min": lambda a, ax: a.min(ax),
    "abssum": lambda a, ax: np.abs(a).sum(ax),
    "absmax": lambda a, ax: np.abs(a).max(ax),
}
NP_COMBINE = {"sum": np.add, "max": np.maximum, "min": np.minimum, "abssum": np.add}
NP_COMBINE["absmax"] = np.maximum


def line_of(marker):
    lines, _ = inspect.findsource(inspect.getmodule(line_of))
    return next(i + 1 for i, text in enumerate(lines) if marker in text and "line_of" not in text)


@pytest.fixture(scope="module")
def all_kinds_kernel():
    """One kernel: for every kind, the four CASES; Rows[k, c] / Cols[k, c] hold the initial
    destination values (for clear=False) and receive the results."""

    @T.prim_func
    def main(
        A: T.Tensor((M, N), "float32"),
        Rows: T.Tensor((len(KINDS), 4, M), "float32"),
        Cols: T.Tensor((len(KINDS), 4, N), "float32"),
    ):
        with T.Kernel(1, threads=128):
            a = T.alloc_fragment((M, N), "float32")
            T.copy(A, a)
            for k, kind in enumerate(KINDS):
                for c, (dim, axis, clear) in enumerate(CASES):
                    if axis == 1:
                        out = T.alloc_fragment((M,), "float32")
                        T.copy(Rows[k, c, :], out)
                    else:
                        out = T.alloc_shared((N,), "float32")
                        T.copy(Cols[k, c, :], out)
                    if kind == "abssum":
                        T.reduce_abssum(a, out, dim=dim)
                    else:
                        getattr(T, f"reduce_{kind}")(a, out, dim=dim, clear=clear)
                    if axis == 1:
                        T.copy(out, Rows[k, c, :])
                    else:
                        T.copy(out, Cols[k, c, :])

    return tilelang.compile(main, target="cpu")


@pytest.mark.parametrize("kind", KINDS)
def test_reduce_kinds_dims_and_clear(all_kinds_kernel, kind):
    a = rng.standard_normal((M, N)).astype(np.float32)
    rows = rng.standard_normal((len(KINDS), 4, M)).astype(np.float32)
    cols = rng.standard_normal((len(KINDS), 4, N)).astype(np.float32)
    rows0, cols0 = rows.copy(), cols.copy()
    all_kinds_kernel(a, rows, cols)
    k = KINDS.index(kind)
    for c, (dim, axis, clear) in enumerate(CASES):
        got = (rows if axis == 1 else cols)[k, c]
        init = (rows0 if axis == 1 else cols0)[k, c]
        want = NP_REDUCE[kind](a, axis)
        if not clear and kind != "abssum":  # reduce_abssum always clears
            want = NP_COMBINE[kind](init, want)
        np.testing.assert_allclose(
            got, want, rtol=1e-5, atol=1e-5, err_msg=f"dim={dim} clear={clear}"
        )


def test_reduce_3d_keepdim_and_mixed_dtypes():
    @T.prim_func
    def main(
        A: T.Tensor((3, 5, 6), "float16"),
        S: T.Tensor((3, 1, 6), "float32"),
        X: T.Tensor((3, 5), "float16"),
        I: T.Tensor((4, 6), "int32"),
        B: T.Tensor((3, 4), "int32"),
    ):
        with T.Kernel(1, threads=64):
            a = T.alloc_fragment((3, 5, 6), "float16")
            s = T.alloc_fragment((3, 1, 6), "float32")
            x = T.alloc_fragment((3, 5), "float16")
            i = T.alloc_shared((4, 6), "int32")
            b = T.alloc_fragment((3, 4), "int32")
            T.copy(A, a)
            T.copy(I, i)
            T.reduce_sum(a, s, dim=1)  # kept unit dim; accumulates in float32
            T.reduce_max(a, x, dim=-1)
            T.reduce_bitand(i, b[0, :], dim=1)
            T.reduce_bitor(i, b[1, :], dim=-1)
            T.reduce_bitxor(i, b[2, :], dim=1)
            T.copy(s, S)
            T.copy(x, X)
            T.copy(b, B)

    kernel = tilelang.compile(main, target="cpu")
    a = rng.standard_normal((3, 5, 6)).astype(np.float16)
    ints = rng.integers(0, 1 << 20, (4, 6)).astype(np.int32)
    s = np.zeros((3, 1, 6), np.float32)
    x = np.zeros((3, 5), np.float16)
    b = np.zeros((3, 4), np.int32)
    kernel(a, s, x, ints, b)
    np.testing.assert_allclose(s, a.astype(np.float32).sum(1, keepdims=True), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(x, a.max(-1))
    np.testing.assert_array_equal(b[0], np.bitwise_and.reduce(ints, axis=1))
    np.testing.assert_array_equal(b[1], np.bitwise_or.reduce(ints, axis=1))
    np.testing.assert_array_equal(b[2], np.bitwise_xor.reduce(ints, axis=1))


def test_cumsum_and_cummax_forward_and_reverse():
    R, C = 6, 11

    @T.prim_func
    def main(A: T.Tensor((R, C), "float32"), Out: T.Tensor((5, R, C), "float32")):
        with T.Kernel(1, threads=128):
            src = T.alloc_shared((R, C), "float32")
            dst = T.alloc_shared((R, C), "float32")
            T.copy(A, src)
            T.cumsum(src, dst, dim=0)
            T.copy(dst, Out[0, :, :])
            T.cumsum(src, dst, dim=-1, reverse=True)
            T.copy(dst, Out[1, :, :])
            T.cummax(src, dst, dim=1)
            T.copy(dst, Out[2, :, :])
            T.cummax(src, dst, dim=0, reverse=True)
            T.copy(dst, Out[3, :, :])
            T.cumsum(src, dim=1)  # in place (dst defaults to src)
            T.copy(src, Out[4, :, :])

    kernel = tilelang.compile(main, target="cpu")
    a = rng.standard_normal((R, C)).astype(np.float32)
    out = np.zeros((5, R, C), np.float32)
    kernel(a, out)
    np.testing.assert_allclose(out[0], np.cumsum(a, 0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[1], np.cumsum(a[:, ::-1], 1)[:, ::-1], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out[2], np.maximum.accumulate(a, 1))
    np.testing.assert_array_equal(out[3], np.maximum.accumulate(a[::-1], 0)[::-1])
    np.testing.assert_allclose(out[4], np.cumsum(a, 1), rtol=1e-5, atol=1e-5)


def test_scan_annotations_show_in_the_script_and_change_nothing():
    """TileLang's annotations of T.cumsum / T.cummax stay on the op: func.script() prints
    them (and the scan under the name that wrote it); the result is the plain scan's. A
    key naming one of the scan's own arguments is refused."""

    @T.prim_func
    def main(A: T.Tensor((32,), "float32"), B: T.Tensor((2, 32), "float32")):
        with T.Kernel(1, threads=32):
            s = T.alloc_fragment((32,), "float32")
            m = T.alloc_fragment((32,), "float32")
            T.copy(A, s)
            T.copy(A, m)
            T.cumsum(s, annotations={"test.scan": "cumsum", "unroll": 4})
            T.cummax(m, annotations={"test.scan": "cummax"})
            T.copy(s, B[0, :])
            T.copy(m, B[1, :])

    lines = main.script().splitlines()
    assert any(
        "T.cumsum(" in ln and 'test.scan="cumsum"' in ln and "unroll=4" in ln for ln in lines
    )
    assert any(
        "T.cummax(" in ln and 'test.scan="cummax"' in ln and "kind" not in ln for ln in lines
    )
    a = rng.standard_normal(32).astype(np.float32)
    b = np.zeros((2, 32), np.float32)
    tilelang.compile(main, target="cpu")(a, b)
    np.testing.assert_allclose(b[0], np.cumsum(a), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(b[1], np.maximum.accumulate(a))

    with pytest.raises(
        tilelang.TileLangError, match="the annotation 'dim' is an argument of T.cumsum"
    ):

        @T.prim_func
        def bad(A: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=32):
                s = T.alloc_fragment((32,), "float32")
                T.copy(A, s)
                T.cumsum(s, annotations={"dim": 0})


def test_alloc_reducer_sum_and_max():
    R, C = 9, 10

    @T.prim_func
    def main(
        A: T.Tensor((R, C), "float32"), S: T.Tensor((R,), "float32"), X: T.Tensor((C,), "float32")
    ):
        with T.Kernel(1, threads=32):
            total = T.alloc_reducer((R,), "float32", op="sum", replication="all")
            best = T.alloc_reducer((C,), "float32", op="max")
            for i, j in T.Parallel(R, C):
                total[i] += A[i, j]
                best[j] = T.max(best[j], A[i, j])
            T.finalize_reducer(total)
            T.finalize_reducer(best)
            T.copy(total, S)
            T.copy(best, X)

    kernel = tilelang.compile(main, target="cpu")
    a = rng.standard_normal((R, C)).astype(np.float32) - 5  # all negative: max must start at -inf
    s, x = np.zeros(R, np.float32), np.zeros(C, np.float32)
    kernel(a, s, x)
    np.testing.assert_allclose(s, a.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(x, a.max(0))


def _trace_error(body):
    with pytest.raises(tilelang.TileLangError) as info:
        body()
    return str(info.value)


def test_dim_out_of_range_names_dim_rank_and_line():
    def build():
        @T.prim_func
        def main(A: T.Tensor((4, 8), "float32")):
            with T.Kernel(1, threads=32):
                a = T.alloc_fragment((4, 8), "float32")
                out = T.alloc_fragment((4,), "float32")
                T.reduce_max(a, out, dim=2)  # MARK-dim

    msg = _trace_error(build)
    assert f"{__file__}:{line_of('MARK-dim')}:" in msg
    assert "T.reduce_max dim 2 is out of range for source 'a' of rank 2 (shape [4, 8])" in msg
    assert "use a dim in [-2, 1]" in msg


def test_destination_shape_mismatch():
    def build():
        @T.prim_func
        def main(A: T.Tensor((4, 8), "float32")):
            with T.Kernel(1, threads=32):
                a = T.alloc_fragment((4, 8), "float32")
                out = T.alloc_fragment((8,), "float32")
                T.reduce_sum(a, out, dim=-1)  # MARK-shape

    msg = _trace_error(build)
    assert f":{line_of('MARK-shape')}:" in msg
    assert (
        "T.reduce_sum destination 'out' has shape [8], but reducing 'a' of shape [4, 8] over "
        "dim 1 gives [4] (or [4, 1] keeping the dim)"
    ) in msg


@pytest.mark.parametrize(
    "case, expected",
    [
        (
            "global",
            "T.reduce_min operands must be in shared or fragment memory, but 'A' is a global",
        ),
        ("bitand_float", "T.reduce_bitand needs integer buffers, got 'a' (float32)"),
        ("cumsum_dim", "T.cumsum dim -3 is out of range for source 'a' of rank 2"),
        (
            "cumsum_shape",
            "T.cumsum destination 'b' has shape [4, 4] but source 'a' has shape [4, 8]",
        ),
        (
            "reducer_op",
            "T.alloc_reducer op must be one of sum, max, min, bitand, bitor, bitxor, got 'prod'",
        ),
        ("finalize", "T.finalize_reducer expects a buffer made by T.alloc_reducer"),
        ("dim_type", "T.reduce_sum dim must be a Python int, got float 1.0"),
    ],
)
def test_misuse_errors(case, expected):
    def build():
        @T.prim_func
        def main(A: T.Tensor((4, 8), "float32")):
            with T.Kernel(1, threads=32):
                a = T.alloc_fragment((4, 8), "float32")
                b = T.alloc_fragment((4, 4), "float32")
                out = T.alloc_fragment((4,), "float32")
                if case == "global":
                    T.reduce_min(A, out)
                elif case == "bitand_float":
                    T.reduce_bitand(a, out)
                elif case == "cumsum_dim":
                    T.cumsum(a, dim=-3)
                elif case == "cumsum_shape":
                    T.cumsum(a, b, dim=1)
                elif case == "reducer_op":
                    T.alloc_reducer((4,), "float32", op="prod")
                elif case == "finalize":
                    T.finalize_reducer(out)
                else:
                    T.reduce_sum(a, out, dim=1.0)

    assert expected in _trace_error(build)


@pytest.mark.parametrize(
    "target", ["cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate", "metal -emulate"]
)
def test_a_reduction_left_to_shared_memory_is_spread_over_the_block(target):
    """A fragment reduced over its first dim is demoted to shared memory (TileLang's
    split-KV combine: `T.reduce_max(lse_local, lse_max_local, dim=0)`); each destination
    element is then folded by one thread, the elements dealt over the block's threads,
    not the whole reduction run by its first thread."""
    S, W = 8, 200  # W: not a multiple of the 128 threads

    @T.prim_func
    def combine(
        A: T.Tensor((S, W), T.float32),
        Mx: T.Tensor((W,), T.float32),
        Sm: T.Tensor((W,), T.float32),
    ):
        with T.Kernel(1, threads=128):
            frag = T.alloc_fragment((S, W), T.float32)
            mx = T.alloc_fragment((W,), T.float32)
            sm = T.alloc_fragment((W,), T.float32)
            T.copy(A, frag)
            T.fill(sm, 1.0)
            T.reduce_max(frag, mx, dim=0)
            T.reduce_sum(frag, sm, dim=0, clear=False)
            T.copy(mx, Mx)
            T.copy(sm, Sm)

    kernel = tilelang.compile(combine, target=target)
    src = kernel.get_kernel_source()
    assert "tl_thread_rank == 0" not in src
    a = rng.standard_normal((S, W)).astype(np.float32)
    mx, sm = np.zeros(W, np.float32), np.zeros(W, np.float32)
    kernel(a, mx, sm)
    np.testing.assert_allclose(mx, a.max(0), rtol=1e-6)
    np.testing.assert_allclose(sm, 1.0 + a.astype(np.float64).sum(0), rtol=1e-5, atol=1e-5)


def _one_row_kernel(L, threads, dtype):
    """Every kind of reduction of a whole 1-d fragment into a (1,) one (a sum with
    clear=False too), each result copied out."""

    @T.prim_func
    def one_row(A: T.Tensor((L,), dtype), Out: T.Tensor((6,), dtype)):
        with T.Kernel(1, threads=threads):
            frag = T.alloc_fragment((L,), dtype)
            s = T.alloc_fragment((1,), dtype)
            mx = T.alloc_fragment((1,), dtype)
            mn = T.alloc_fragment((1,), dtype)
            asum = T.alloc_fragment((1,), dtype)
            amax = T.alloc_fragment((1,), dtype)
            acc = T.alloc_fragment((1,), dtype)
            T.copy(A, frag)
            T.fill(acc, 2)
            T.reduce_sum(frag, s)
            T.reduce_max(frag, mx)
            T.reduce_min(frag, mn, dim=0)
            T.reduce_abssum(frag, asum)
            T.reduce_absmax(frag, amax, dim=-1)
            T.reduce_sum(frag, acc, clear=False)
            T.copy(s, Out[0:1])
            T.copy(mx, Out[1:2])
            T.copy(mn, Out[2:3])
            T.copy(asum, Out[3:4])
            T.copy(amax, Out[4:5])
            T.copy(acc, Out[5:6])

    return one_row


@pytest.mark.parametrize(
    "target", ["cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate", "metal -emulate", "cpu"]
)
@pytest.mark.parametrize(
    ("L", "threads", "dtype"), [(256, 64, "float32"), (1000, 128, "float32"), (48, 128, "float16")]
)
def test_a_1d_fragment_reduced_into_one_element_stays_in_registers(target, L, threads, dtype):
    """TileLang's `T.reduce_max(frag, out)` of a 1-d fragment into a (1,) one: each
    thread folds the registers it holds and the holders combine their partials (warp
    shuffles, then a shared row across warps), as a 2-d tile's rows; no thread folds
    the whole fragment out of shared memory. Lengths below, above and not a power of
    two times the block size."""
    kernel = tilelang.compile(_one_row_kernel(L, threads, dtype), target=target)
    src = kernel.get_kernel_source()
    assert "tl_thread_rank == 0" not in src
    if target.startswith("cuda"):
        assert "tl::AllReduce<tl::SumOp" in src and "tl::AllReduce<tl::MaxOp" in src
        assert "frag[" in src and "TL_SMEM(frag" not in src  # the fragment stays in registers
    a = rng.standard_normal(L).astype(dtype)
    out = np.zeros(6, dtype)
    kernel(a, out)
    a64 = a.astype(np.float64)
    want = [a64.sum(), a64.max(), a64.min(), np.abs(a64).sum(), np.abs(a64).max(), 2 + a64.sum()]
    tol = 1e-5 if dtype == "float32" else 2e-2
    np.testing.assert_allclose(out.astype(np.float64), want, rtol=tol, atol=tol * 4)
    # max, min and absmax are exact
    np.testing.assert_array_equal(
        out[[1, 2, 4]], np.array([a.max(), a.min(), np.abs(a).max()], dtype)
    )


@pytest.mark.parametrize("target", ["cuda -arch=sm_80 -emulate", "cpu"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_1d_fragment_max_min_with_nan_propagate(target, dtype):
    """`nan_propagate=True` on the one-row reduction: a NaN anywhere gives NaN; without
    it NaNs are skipped (TileLang's reduce_maxmin_nan kernel: 64 elements, 32 threads).
    On CUDA the fold and the shuffle name the NaN-propagating forms."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    np_dtype = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    L = 64

    def make(fn, nan):
        @T.prim_func
        def k(a: T.Tensor((L,), dtype), out: T.Tensor((1,), dtype)):
            with T.Kernel(1, threads=32):
                frag = T.alloc_fragment((L,), dtype)
                o = T.alloc_fragment((1,), dtype)
                T.copy(a, frag)
                fn(frag, o, nan_propagate=nan)
                T.copy(o, out)

        return tilelang.compile(k, target=target)

    a = rng.standard_normal(L).astype(np_dtype)
    a[37] = np.nan
    finite = a.astype(np.float32)[~np.isnan(a.astype(np.float32))]
    for fn, ref in [
        (T.reduce_max, finite.max()),
        (T.reduce_min, finite.min()),
        (T.reduce_absmax, np.abs(finite).max()),
    ]:
        out = np.zeros(1, np_dtype)
        plain, nan = make(fn, False), make(fn, True)
        plain(a, out)
        assert float(out[0]) == float(ref), fn.__name__
        nan(a, out)
        assert np.isnan(float(out[0])), fn.__name__
        if target.startswith("cuda"):
            op = "Min" if fn is T.reduce_min else "Max"
            assert f"tl::{op}OpNan" in nan.get_kernel_source()
            assert (
                f"tl::{op}Op," in plain.get_kernel_source()
                and "Nan" not in plain.get_kernel_source()
            )
            if dtype == "float16":
                assert f"__h{op.lower()}_nan(" in nan.get_kernel_source()
                assert f"__h{op.lower()}(" in plain.get_kernel_source()


@pytest.mark.parametrize("target", ["cuda -arch=sm_80 -emulate", "cpu"])
def test_a_1d_softmax_reads_its_row_max_in_registers(target):
    """A (1,) fragment read `[0]` in a T.Parallel loop over a 1-d fragment (the row max
    and sum of a 1-d softmax) is that fragment's one row: both stay in registers."""
    L = 256

    @T.prim_func
    def softmax(a: T.Tensor((L,), "float32"), out: T.Tensor((L,), "float32")):
        with T.Kernel(1, threads=128):
            frag = T.alloc_fragment((L,), "float32")
            m = T.alloc_fragment((1,), "float32")
            s = T.alloc_fragment((1,), "float32")
            T.copy(a, frag)
            T.reduce_max(frag, m)
            for i in T.Parallel(L):
                frag[i] = T.exp(frag[i] - m[0])
            T.reduce_sum(frag, s)
            for i in T.Parallel(L):
                frag[i] = frag[i] / s[0]
            T.copy(frag, out)

    kernel = tilelang.compile(softmax, target=target)
    if target.startswith("cuda"):
        src = kernel.get_kernel_source()
        assert "float m[1];" in src and "float frag[4];" in src and "TL_SMEM(m," not in src
    a = rng.standard_normal(L).astype(np.float32)
    out = np.zeros(L, np.float32)
    kernel(a, out)
    e = np.exp(a.astype(np.float64) - a.max())
    np.testing.assert_allclose(out, e / e.sum(), rtol=1e-5, atol=1e-7)


def _batched_rows(M, N, threads, batch, kind, dtype, shared=False):
    """B = reduce_<kind>(A, dim=1) through a fragment (or, `shared`, a shared tile
    named S) into a fragment."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M,), dtype)):
        with T.Kernel(1, threads=threads):
            S = T.alloc_shared((M, N), dtype) if shared else T.alloc_fragment((M, N), dtype)
            dst = T.alloc_fragment((M,), dtype)
            T.copy(A, S)
            getattr(T, "reduce_" + kind)(S, dst, dim=1, batch=batch)
            T.copy(dst, B)

    return main


BATCH_CASES = [
    (64, 128, 256, 4, "sum", "float32", 32),
    (128, 128, 256, 8, "max", "float16", 16),
    (128, 128, 256, 4, "abssum", "float32", 32),
    (64, 128, 128, 2, "min", "bfloat16", 16),
]


@pytest.mark.parametrize("M, N, threads, batch, kind, dtype, lanes", BATCH_CASES)
def test_a_batch_of_rows_is_one_lane_reduction_with_the_same_bits(
    M, N, threads, batch, kind, dtype, lanes
):
    """T.reduce_*(..., batch=b) on CUDA combines b rows per call, printed as TileLang's
    tl::AllReduce<Op, lanes, 1, 0, tl::SyncThreadsBarrier, b, 0>::run_batch: the same
    shuffles in the same order as batch=1 (bit-identical results under the emulator);
    the cpu target, which has no lanes, ignores batch; NVRTC builds it for sm_90a."""
    emu = "cuda -arch=sm_80 -emulate"
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    x = np.random.default_rng(batch).standard_normal((M, N)).astype(np_dtype)
    outs = {}
    for b in (1, batch):
        kernel = tilelang.compile(_batched_rows(M, N, threads, b, kind, dtype), target=emu)
        src = kernel.get_kernel_source()
        op = {"sum": "SumOp", "abssum": "SumOp", "max": "MaxOp", "min": "MinOp"}[kind]
        if b > 1:
            call = f"tl::AllReduce<tl::{op}, {lanes}, 1, 0, tl::SyncThreadsBarrier, {b}, 0>::run_batch("
            assert call in src, src
            assert "::run(" not in src, src
        else:  # TileLang's spelling of one row's lane reduction
            assert f"tl::AllReduce<tl::{op}, {lanes}, 1, 0>::run(" in src, src
        out = np.zeros(M, np_dtype)
        kernel(x, out)
        outs[b] = out
    np.testing.assert_array_equal(outs[batch], outs[1])
    x64 = x.astype(np.float64)
    if kind == "sum":
        want = x64.sum(1)
    elif kind == "abssum":
        want = np.abs(x64).sum(1)
    else:
        want = getattr(np, kind)(x64, axis=1)
    np.testing.assert_allclose(outs[1].astype(np.float64), want, rtol=2e-2, atol=2e-1)
    cpu = tilelang.compile(_batched_rows(M, N, threads, batch, kind, dtype), target="cpu")
    assert "run_batch" not in cpu.get_kernel_source()
    # NVRTC builds the batched form for the GPU.
    gpu = tilelang.compile(
        _batched_rows(M, N, threads, batch, kind, dtype), target="cuda -arch=sm_90a"
    )
    assert "::run_batch(" in gpu.get_kernel_source()


SHARED_CASES = [
    (128, 64, 256, "sum", "float32", 2),
    (64, 128, 128, "min", "float32", 2),
    (128, 64, 256, "max", "bfloat16", 2),
    (32, 32, 128, "absmax", "float16", 1),
    (16, 256, 128, "abssum", "float32", 1),
]


@pytest.mark.parametrize("M, N, threads, kind, dtype, batch", SHARED_CASES)
def test_a_shared_tile_is_reduced_from_registers(M, N, threads, kind, dtype, batch):
    """T.reduce_* of a whole shared tile into a fragment on CUDA reads the tile into a
    register fragment first (stage_reduction_sources), then reduces on the register path:
    the lanes holding a row combine it (run_batch with batch=), and no thread folds a
    row out of shared memory (a column walk, one bank for rows of 32 words). The result
    matches numpy; the cpu target keeps its loop."""
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    x = np.random.default_rng(M + N).standard_normal((M, N)).astype(np_dtype)
    kernel = tilelang.compile(
        _batched_rows(M, N, threads, batch, kind, dtype, shared=True),
        target="cuda -arch=sm_80 -emulate",
    )
    src = kernel.get_kernel_source()
    body = src[src.find("__global__") : src.find("#ifdef TL_EMULATE")]
    assert "S_regs[" in body, body
    assert ("::run_batch(" if batch > 1 else "::run(") in body, body
    assert "TL_SMEM(S, ((i0 *" not in body, body
    out = np.zeros(M, np_dtype)
    kernel(x, out)
    x64 = x.astype(np.float64)
    want = {
        "sum": lambda: x64.sum(1),
        "abssum": lambda: np.abs(x64).sum(1),
        "max": lambda: x64.max(1),
        "min": lambda: x64.min(1),
        "absmax": lambda: np.abs(x64).max(1),
    }[kind]()
    np.testing.assert_allclose(out.astype(np.float64), want, rtol=2e-2, atol=1e-1)
    cpu = tilelang.compile(
        _batched_rows(M, N, threads, batch, kind, dtype, shared=True), target="cpu"
    )
    cpu_out = np.zeros(M, np_dtype)
    cpu(x, cpu_out)
    np.testing.assert_allclose(cpu_out.astype(np.float64), want, rtol=2e-2, atol=1e-1)


def test_a_shared_tile_of_odd_rows_keeps_the_shared_fold():
    """Rows of 3 elements (mla_decode's split weights): no register layout keeps such a
    fragment in registers, so the reduction stays one thread per row over shared memory
    (staging would only add a copy)."""
    kernel = tilelang.compile(
        _batched_rows(8, 3, 128, 1, "max", "float32", shared=True), target="cuda -arch=sm_80"
    )
    assert "S_regs" not in kernel.get_kernel_source()


def test_a_shared_tile_reduced_into_a_tied_row_vector_is_not_staged():
    """FlashAttention's shape: the row max of a shared copy of a gemm accumulator is
    subtracted from that accumulator in a T.Parallel loop, which ties the row vector's
    layout to the accumulator's. Staging the shared tile would leave its register copy
    in shared memory as well (a copy and its bytes for nothing): it is not staged, and
    the accumulator stays on the tensor cores."""
    M = N = K = 64

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((N, K), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(1, threads=128):
            As = T.alloc_shared((M, K), "float16")
            Bs = T.alloc_shared((N, K), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            Ss = T.alloc_shared((M, N), "float32")
            m = T.alloc_fragment((M,), "float32")
            T.copy(A, As)
            T.copy(B, Bs)
            T.clear(acc)
            T.gemm(As, Bs, acc, transpose_B=True)
            T.copy(acc, Ss)
            T.reduce_max(Ss, m, dim=1)
            for i, j in T.Parallel(M, N):
                acc[i, j] = acc[i, j] - m[i]
            T.copy(acc, C)

    kernel = tilelang.compile(main, target="cuda -arch=sm_80 -emulate")
    src = kernel.get_kernel_source()
    assert "Ss_regs" not in src and "tl::gemm_ss<" in src, src
    rng = np.random.default_rng(7)
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (N, K)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    kernel(a, b, c)
    s = a.astype(np.float32) @ b.astype(np.float32).T
    np.testing.assert_array_equal(c, s - s.max(1, keepdims=True))
