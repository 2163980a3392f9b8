"""Atomics on the CPU target, where thread blocks run on parallel OS threads, so several
blocks really race on the same memory: split-K GEMM adding tiles into one C, element
atomics across blocks (add, max, min, return_prev, load/store), the CAS path of half and
bfloat16, and the errors a misuse gets."""

import inspect

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_device_sm80 import needs_nvrtc, nvrtc_compile

rng = np.random.default_rng(11)


def line_of(marker):
    lines, _ = inspect.findsource(inspect.getmodule(line_of))
    return next(i + 1 for i, text in enumerate(lines) if marker in text and "line_of" not in text)


def split_k_gemm(M, N, K, bM=16, bN=16, bK=32, splits=4):
    """C += A @ B with K split over `splits` blocks that atomic_add their tiles."""
    k_per_split = T.ceildiv(K, splits * bK)

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float32"),
        B: T.Tensor((K, N), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), splits, threads=128) as (bx, by, bz):
            a = T.alloc_shared((bM, bK), "float32")
            b = T.alloc_shared((bK, bN), "float32")
            c = T.alloc_fragment((bM, bN), "float32")
            T.clear(c)
            for ko in T.Pipelined(k_per_split, num_stages=2):
                k = bz * k_per_split + ko
                T.copy(A[by * bM, k * bK], a)
                T.copy(B[k * bK, bx * bN], b)
                T.gemm(a, b, c)
            T.atomic_add(C[by * bM : (by + 1) * bM, bx * bN : (bx + 1) * bN], c)

    return main


def test_split_k_gemm_region_atomic_add():
    M, N, K = 50, 40, 200  # tails in every dim
    main = split_k_gemm(M, N, K)
    kernel = tilelang.compile(main, target="cpu")
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = rng.standard_normal((M, N)).astype(np.float32)
    want = c + a @ b
    kernel(a, b, c)
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def element_kernel():
    """64 blocks of 16 elements each: every element does atomic add / max / min into a
    few shared cells, returns the previous sum, and block 0 stores and loads a flag."""
    n, per = 1024, 16

    @T.prim_func
    def main(
        X: T.Tensor((n,), "int32"),
        F: T.Tensor((n,), "float32"),
        Acc: T.Tensor((2,), "int32"),
        Ext: T.Tensor((2,), "float32"),
        Prev: T.Tensor((n,), "int32"),
        Flag: T.Tensor((2,), "int64"),
    ):
        with T.Kernel(n // per, threads=per) as bx:
            for i in T.Parallel(per):
                g = bx * per + i
                Prev[g] = T.atomic_add(Acc[0], X[g], return_prev=True)
                T.atomic_add(Acc[1], 1, memory_order="relaxed")
                T.atomic_max(Ext[0], F[g], memory_order="acq_rel")
                T.atomic_min(Ext[1], F[g])
            if bx == 0:
                T.atomic_store(Flag[0], 41, memory_order="release")
                Flag[1] = T.atomic_load(Flag[0], memory_order="acquire") + 1

    return tilelang.compile(main, target="cpu"), n


def test_element_atomics_across_blocks(element_kernel):
    kernel, n = element_kernel
    x = rng.integers(1, 1000, n).astype(np.int32)  # positive: previous sums strictly increase
    f = rng.standard_normal(n).astype(np.float32)
    acc = np.array([5, 0], np.int32)
    ext = np.array([-100.0, 100.0], np.float32)
    prev = np.zeros(n, np.int32)
    flag = np.zeros(2, np.int64)
    for _ in range(3):  # races show up as lost updates; repeat to make one likely
        acc[:] = (5, 0)
        ext[:] = (-100.0, 100.0)
        kernel(x, f, acc, ext, prev, flag)
        assert acc[0] == 5 + x.sum() and acc[1] == n
        np.testing.assert_array_equal(ext, [f.max(), f.min()])
        # return_prev: the previous values form one chain 5, 5 + x_a, 5 + x_a + x_b, ...
        order = np.argsort(prev)
        assert prev[order[0]] == 5
        np.testing.assert_array_equal(prev[order][1:], (prev + x)[order][:-1])
        np.testing.assert_array_equal(flag, [41, 42])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_low_precision_and_double_atomics(dtype):
    n, per = 256, 8
    np_dtype = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float64": np.float64}[dtype]

    @T.prim_func
    def main(V: T.Tensor((n,), dtype), Out: T.Tensor((3,), dtype)):
        with T.Kernel(n // per, threads=per) as bx:
            for i in T.Parallel(per):
                T.atomic_add(Out[0], V[bx * per + i])
                T.atomic_max(Out[1], V[bx * per + i])
                T.atomic_min(Out[2], V[bx * per + i])

    kernel = tilelang.compile(main, target="cpu")
    v = rng.integers(-4, 5, n).astype(np_dtype)  # small integers: every partial sum is exact
    out = np.array([0, -50, 50], np_dtype)
    kernel(v, out)
    want = np.array([v.astype(np.float64).sum(), v.max(), v.min()], np.float64)
    np.testing.assert_array_equal(out.astype(np.float64), want)


def test_region_forms_start_point_and_scalar():
    R, C = 6, 10

    @T.prim_func
    def main(
        A: T.Tensor((4, R, C), "float32"),
        Out: T.Tensor((R, C), "float32"),
        Hi: T.Tensor((R, C), "int32"),
    ):
        with T.Kernel(4, threads=32) as bx:
            tile = T.alloc_fragment((R, C), "float32")
            T.copy(A[bx, :, :], tile)
            T.atomic_add(Out[0, 0], tile)  # a start point takes the value's extents
            T.atomic_max(Hi, bx)  # one scalar into every element

    kernel = tilelang.compile(main, target="cpu")
    a = rng.standard_normal((4, R, C)).astype(np.float32)
    out = rng.standard_normal((R, C)).astype(np.float32)
    hi = rng.integers(-5, 2, (R, C)).astype(np.int32)
    want_out, want_hi = out + a.sum(0), np.maximum(hi, 3)
    kernel(a, out, hi)
    np.testing.assert_allclose(out, want_out, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(hi, want_hi)


def _trace_error(body):
    with pytest.raises(tilelang.TileLangError) as info:
        body()
    return str(info.value)


@pytest.mark.parametrize(
    "case, expected",
    [
        (
            "return_prev_region",
            "T.atomic_add with return_prev=True needs one element as destination",
        ),
        ("order", "T.atomic_max memory_order must be one of relaxed, consume, acquire, release"),
        (
            "load_order",
            (
                "T.atomic_load does not support memory_order 'release'; use one of relaxed, "
                "consume, acquire, seq_cst"
            ),
        ),
        (
            "store_order",
            (
                "T.atomic_store does not support memory_order 'acquire'; use one of relaxed, "
                "release, seq_cst"
            ),
        ),
        (
            "extents",
            "T.atomic_add extents do not match: destination 'C' covers [4, 8] but value 'c' covers [4, 4]",
        ),
        ("bool", "T.atomic_add cannot update 'Bits' of dtype bool"),
        ("dst", "T.atomic_min destination must be an element such as C[i, j]"),
        ("load_region", "T.atomic_load needs one element such as flag[0] or C[i, j]"),
    ],
)
def test_misuse_errors(case, expected):
    def build():
        @T.prim_func
        def main(C: T.Tensor((4, 8), "float32"), Bits: T.Tensor((4,), "bool")):
            with T.Kernel(1, threads=32):
                c = T.alloc_fragment((4, 4), "float32")
                if case == "return_prev_region":
                    T.atomic_add(C[0:4, 0:4], c, return_prev=True)  # MARK-prev
                elif case == "order":
                    T.atomic_max(C[0, 0], 1.0, memory_order="sometimes")
                elif case == "load_order":
                    C[0, 0] = T.atomic_load(C[0, 1], memory_order="release")
                elif case == "store_order":
                    T.atomic_store(C[0, 1], 2.0, memory_order="acquire")
                elif case == "extents":
                    T.atomic_add(C, c)
                elif case == "bool":
                    T.atomic_add(Bits[0], True)
                elif case == "dst":
                    T.atomic_min(3.0, 1.0)
                else:
                    C[0, 0] = T.atomic_load(C[0:2, 0])

    msg = _trace_error(build)
    assert expected in msg
    if case == "return_prev_region":
        assert f"{__file__}:{line_of('MARK-prev')}:" in msg


@needs_nvrtc
def test_cuda_memory_orders_put_the_fence_on_the_right_side():
    """tl::atomic_* are relaxed atomics with fences (device/cuda/atomic.cuh): a release
    store or add fences before it, an acquire load after it (the wait on a flag, then
    reads of what its setter wrote), seq_cst on both sides. Checked in NVRTC's PTX."""
    source = """
#include "tl_cuda.cuh"
extern "C" __global__ void release_store(int* f) { tl::atomic_store<3>(f, 1); }
extern "C" __global__ void acquire_load(int* f, int* out) { out[0] = tl::atomic_load<2>(f); }
extern "C" __global__ void release_add(int* f) { tl::atomic_add<3>(f, 1); }
extern "C" __global__ void relaxed_add(int* f) { tl::atomic_add<0>(f, 1); }
"""
    ok, log, ptx = nvrtc_compile("compute_90", source, want_ptx=True)
    assert ok, log

    def body(name):
        start = ptx.index(f".entry {name}(")
        end = ptx.find(".entry", start + 1)
        text = ptx[start : end if end > 0 else len(ptx)]
        return [line.strip() for line in text.splitlines() if line.strip()]

    def first(lines, *needles):
        return next(i for i, line in enumerate(lines) if any(n in line for n in needles))

    fence = ("membar.gl", "fence.sc.gpu", "fence.acq_rel.gpu")
    lines = body("acquire_load")
    assert first(lines, "ld.volatile") < first(lines, *fence), lines
    lines = body("release_store")
    assert first(lines, *fence) < first(lines, "atom."), lines
    lines = body("release_add")
    assert first(lines, *fence) < first(lines, "atom.", "red."), lines
    assert not any(f in line for line in body("relaxed_add") for f in fence)


def test_a_tile_atomic_from_a_pipelined_shared_tile_keeps_the_pipeline():
    """T.atomic_add(Out, A_s) writes Out, not A_s (the op table's written region): the
    loop that fills A_s stays a cp.async pipeline (it once counted A_s as written by the
    atomic and left the loop unpipelined), and the sums are right."""

    @T.prim_func
    def main(A: T.Tensor((8, 64, 32), "float32"), Out: T.Tensor((64, 32), "float32")):
        with T.Kernel(8, threads=128) as bx:
            A_s = T.alloc_shared((64, 32), "float32")
            for k in T.Pipelined(4, num_stages=2):
                T.copy(A[(bx + k * 2) % 8, :, :], A_s)
                T.atomic_add(Out, A_s)

    kernel = tilelang.compile(main, target="cuda -arch=sm_80 -emulate")
    assert "tl::cp_async_wait<" in kernel.get_kernel_source()
    a = np.random.default_rng(5).standard_normal((8, 64, 32)).astype(np.float32)
    out = np.zeros((64, 32), np.float32)
    kernel(a, out)
    ref = sum(a[(bx + k * 2) % 8].astype(np.float64) for bx in range(8) for k in range(4))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-4)


def row_sums_added(M, N, kind):
    """O[i] op= the sum of row i of A, the sums a T.reduce_sum result: a vector every
    thread that holds part of row i keeps a copy of."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), O: T.Tensor((M,), "float32")):
        with T.Kernel(2, threads=128):
            A_f = T.alloc_fragment((M, N), "float32")
            r = T.alloc_fragment((M,), "float32")
            T.copy(A, A_f)
            T.reduce_sum(A_f, r, dim=1)
            for i in T.Parallel(M):
                if kind == "add":
                    T.atomic_add(O[i], r[i])
                else:
                    T.atomic_max(O[i], r[i])

    return main


@pytest.mark.parametrize("kind", ["add", "max"])
@pytest.mark.parametrize(
    "target", ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate", "metal -emulate"]
)
def test_element_atomic_of_a_row_vector_runs_once_per_row(kind, target):
    """Each of the 16 threads holding a row's sum ran the T.Parallel iteration of the
    row, and every one of them added it: O came out 16 times the sum per block (a
    silent wrong result on the CUDA and Metal targets). Only the row's first thread
    updates memory now, as for plain stores."""
    M, N = 64, 64
    kernel = tilelang.compile(row_sums_added(M, N, kind), target=target)
    a = rng.standard_normal((M, N)).astype(np.float32)
    o0 = rng.standard_normal(M).astype(np.float32)
    o = o0.copy()
    kernel(a, o)
    sums = a.astype(np.float64).sum(axis=1)
    ref = o0 + 2 * sums if kind == "add" else np.maximum(o0, sums)
    np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-4)
