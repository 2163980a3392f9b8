"""Packed pairs (device/cuda/packed.cuh): float16 / bfloat16 element loops of T.Parallel
that the CUDA lowering vectorizes compute two lanes per instruction (tl::add2 ... with
add.rn.f16x2, fma.rn.bf16x2 ...), as do the T.Ramp pairs of T.add2 ... T.min2 and T.abs2
(pass pair_lane_stores) and serial float16 / bfloat16 reductions. Each lane is rounded
once, as the element loop rounds it: checked bit for bit against numpy / ml_dtypes in the
emulator and on the cpu target over random values of several magnitudes with zeros,
infinities, a subnormal and the largest finite values mixed in (a NaN where inf - inf),
and by NVRTC's PTX."""

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_device_sm80 import needs_nvrtc, nvrtc_compile

M = 64
NP = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32}
OPS = {
    "add": (lambda a, b: a + b, "add2"),
    "sub": (lambda a, b: a - b, "sub2"),
    "mul": (lambda a, b: a * b, "mul2"),
    "max": (T.max, "max2"),
    "min": (T.min, "min2"),
}


def elementwise(op, dtype, width=4):
    fn = OPS[op][0]

    @T.prim_func
    def main(
        A: T.Tensor((M, width), dtype),
        B: T.Tensor((M, width), dtype),
        C: T.Tensor((M, width), dtype),
    ):
        with T.Kernel(1, threads=M):
            for i, v in T.Parallel(M, width):
                C[i, v] = fn(A[i, v], B[i, v])

    return main


def operands(dtype, shape, seed):
    """Random values with the special ones mixed in, as `dtype`."""
    rng = np.random.default_rng(seed)
    t = NP[dtype]
    x = (rng.standard_normal(shape) * rng.choice([1e-6, 1e-3, 1, 1e3], shape)).astype(t)
    special = np.array(
        [0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 2.0**-24, 65504.0, 3.0e38], np.float32
    )
    flat = x.reshape(-1)
    with np.errstate(over="ignore"):  # 3e38 is inf in float16
        slots = flat[: 3 * len(special) : 3]
        slots[:] = special[: len(slots)].astype(t)
    return x


def reference(op, a, b, dtype):
    fn = {
        "add": np.add,
        "sub": np.subtract,
        "mul": np.multiply,
        "max": np.fmax,
        "min": np.fmin,
    }[op]
    # float16 / bfloat16 operations rounded once: computed in float64, rounded to the type.
    with np.errstate(all="ignore"):
        return fn(a.astype(np.float64), b.astype(np.float64)).astype(NP[dtype])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", list(OPS))
def test_parallel_loop_pairs_are_exact(op, dtype):
    f = elementwise(op, dtype)
    source = tilelang.compile(f, target="cuda -arch=sm_80").get_kernel_source()
    pair = {"float16": "tl::__half2", "bfloat16": "tl::__nv_bfloat162"}[dtype]
    assert f"tl::{OPS[op][1]}<{pair}>(" in source
    a, b = operands(dtype, (M, 4), 1), operands(dtype, (M, 4), 2)
    for target in ("cuda -arch=sm_80 -emulate", "cpu"):
        c = np.zeros((M, 4), NP[dtype])
        tilelang.compile(f, target=target)(a, b, c)
        np.testing.assert_array_equal(c.view(np.uint16), reference(op, a, b, dtype).view(np.uint16))


def test_float32_and_mixed_loops_stay_element_by_element():
    assert (
        "add2"
        not in tilelang.compile(
            elementwise("add", "float32"), target="cuda -arch=sm_80"
        ).get_kernel_source()
    )

    @T.prim_func
    def scaled(A: T.Tensor((M, 4), "float16"), C: T.Tensor((M, 4), "float16")):
        with T.Kernel(1, threads=M):
            for i, v in T.Parallel(M, 4):
                C[i, v] = A[i, v] * 2.0  # one operand is not a loaded run

    assert "mul2" not in tilelang.compile(scaled, target="cuda -arch=sm_80").get_kernel_source()


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90a"])
def test_pairs_are_single_instructions(arch):
    want = {
        ("float16", "add"): "add.rn.f16x2",
        ("float16", "max"): "max.f16x2",
        ("bfloat16", "add"): "fma.rn.bf16x2",
        ("bfloat16", "min"): "min.bf16x2",
    }
    for (dtype, op), insn in want.items():
        src = tilelang.compile(
            elementwise(op, dtype), target=f"cuda -arch={arch}"
        ).get_kernel_source()
        ok, log, ptx = nvrtc_compile(arch, source=src, want_ptx=True)
        assert ok, log
        if arch == "sm_75" and (dtype == "bfloat16" or op != "add"):
            assert insn not in ptx  # lane by lane before sm_80
        else:
            assert insn in ptx, (arch, dtype, op)


LANE_OPS = {
    "add2": "add",
    "sub2": "sub",
    "mul2": "mul",
    "max2": "max",
    "min2": "min",
    "abs2": "abs",
}


def lane_pairs(op, dtype):
    """TileLang's packed x2 form: C[idx] = T.<op>(A[idx], B[idx]), idx a T.Ramp pair."""
    fn = getattr(T, op)

    @T.prim_func
    def main(
        A: T.Tensor((2 * M,), dtype), B: T.Tensor((2 * M,), dtype), C: T.Tensor((2 * M,), dtype)
    ):
        with T.Kernel(1, threads=M):
            tid = T.get_thread_binding()
            idx = T.Ramp(tid * 2, 1, 2)
            C[idx] = fn(A[idx]) if op == "abs2" else fn(A[idx], B[idx])

    return main


def lane_reference(op, a, b, dtype):
    if op == "abs2":
        return np.abs(a)
    return reference(LANE_OPS[op], a, b, dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("op", list(LANE_OPS))
def test_ramp_pair_stores_are_one_call(op, dtype):
    f = lane_pairs(op, dtype)
    pair = {"float16": "tl::__half2", "bfloat16": "tl::__nv_bfloat162", "float32": "tl::float2"}[
        dtype
    ]
    assert (
        f"tl::{op}<{pair}>(" in tilelang.compile(f, target="cuda -arch=sm_80").get_kernel_source()
    )
    a, b = operands(dtype, (2 * M,), 3), operands(dtype, (2 * M,), 4)
    bits = np.uint32 if dtype == "float32" else np.uint16
    for target in ("cuda -arch=sm_80 -emulate", "cpu"):
        c = np.zeros(2 * M, NP[dtype])
        tilelang.compile(f, target=target)(a, b, c)
        np.testing.assert_array_equal(c.view(bits), lane_reference(op, a, b, dtype).view(bits))


@T.prim_func
def in_place(A: T.Tensor((2 * M,), "float16"), B: T.Tensor((2 * M,), "float16")):
    with T.Kernel(1, threads=M):
        tid = T.get_thread_binding()
        idx = T.Ramp(tid * 2, 1, 2)
        A[idx] = T.add2(A[idx], B[idx])  # each lane reads the element it writes


@T.prim_func
def shifted(A: T.Tensor((2 * M + 1,), "float16"), B: T.Tensor((2 * M,), "float16")):
    with T.Kernel(1, threads=1):
        for t in T.serial(M):
            # lane 1 reads A[2t + 1], which lane 0 writes: both lanes are read first
            A[T.Ramp(2 * t + 1, 1, 2)] = T.add2(A[T.Ramp(2 * t, 1, 2)], B[T.Ramp(2 * t, 1, 2)])


@T.prim_func
def in_shared(A: T.Tensor((2 * M,), "float16"), B: T.Tensor((2 * M,), "float16")):
    with T.Kernel(1, threads=M):
        S = T.alloc_shared((2 * M,), "float16")
        tid = T.get_thread_binding()
        idx = T.Ramp(tid * 2, 1, 2)
        S[idx] = T.add2(A[idx], A[idx])
        T.sync_threads()
        B[idx] = S[idx]


def test_pairs_keep_the_order_of_the_stores():
    assert "tl::add2<" in tilelang.compile(in_place, target="cuda -arch=sm_80").get_kernel_source()
    assert (
        "tl::add2<" not in tilelang.compile(shifted, target="cuda -arch=sm_80").get_kernel_source()
    )
    # Shared memory stays element by element (the emulation's race detector sees it).
    assert (
        "tl::add2<"
        not in tilelang.compile(in_shared, target="cuda -arch=sm_80").get_kernel_source()
    )
    a, b = operands("float16", (2 * M + 1,), 5), operands("float16", (2 * M,), 6)
    want = a.copy()
    with np.errstate(over="ignore"):
        for t in range(M):  # each vector read whole, then stored (TileLang's vector load)
            v0, v1 = (want[2 * t : 2 * t + 2].astype(np.float64) + b[2 * t : 2 * t + 2]).astype(
                np.float16
            )
            want[2 * t + 1], want[2 * t + 2] = v0, v1
    for target in ("cuda -arch=sm_80 -emulate", "cpu"):
        x = a.copy()
        tilelang.compile(shifted, target=target)(x, b)
        np.testing.assert_array_equal(x.view(np.uint16), want.view(np.uint16))


REDUCE = {
    "sum": (T.reduce_sum, "add2"),
    "max": (T.reduce_max, "max2"),
    "min": (T.reduce_min, "min2"),
}


def column_reduce(op, dtype):
    """A reduction over dim 0 of a local (8, 4) array: two columns folded at a time."""
    fn = REDUCE[op][0]

    @T.prim_func
    def main(A: T.Tensor((8, 4), dtype), B: T.Tensor((4,), dtype)):
        with T.Kernel(1, threads=1):
            src = T.alloc_local((8, 4), dtype)
            dst = T.alloc_local((4,), dtype)
            for i in T.serial(8):
                for j in T.serial(4):
                    src[i, j] = A[i, j]
            fn(src, dst, dim=0)
            for j in T.serial(4):
                B[j] = dst[j]

    return main


def row_reduce(op, dtype):
    """A reduction of a local (8,) array into one element."""
    fn = REDUCE[op][0]

    @T.prim_func
    def main(A: T.Tensor((8,), dtype), B: T.Tensor((1,), dtype)):
        with T.Kernel(1, threads=1):
            src = T.alloc_local((8,), dtype)
            dst = T.alloc_local((1,), dtype)
            for i in T.serial(8):
                src[i] = A[i]
            fn(src, dst, dim=0)
            B[0] = dst[0]

    return main


def fold(op, x, dtype):
    """The fold in order, rounding to `dtype` after each step."""
    t = NP[dtype]
    acc = np.full(x.shape[1:], {"sum": 0.0, "max": -np.inf, "min": np.inf}[op]).astype(t)
    for row in x:
        with np.errstate(all="ignore"):
            if op == "sum":
                acc = (acc.astype(np.float64) + row.astype(np.float64)).astype(t)
            else:
                acc = (np.fmax if op == "max" else np.fmin)(acc, row)
    return acc


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", list(REDUCE))
def test_local_reductions_fold_pairs(op, dtype):
    pair = {"float16": "tl::__half2", "bfloat16": "tl::__nv_bfloat162"}[dtype]
    cols = column_reduce(op, dtype)
    assert (
        f"tl::{REDUCE[op][1]}<{pair}>("
        in tilelang.compile(cols, target="cuda -arch=sm_80").get_kernel_source()
    )
    rows = row_reduce(op, dtype)
    row_source = tilelang.compile(rows, target="cuda -arch=sm_80").get_kernel_source()
    # Along the contiguous dim the even and the odd elements fold apart, then combine:
    # any order for max and min, TileLang's order for a sum (the even elements' sum plus
    # the odd elements' sum).
    assert f"tl::{REDUCE[op][1]}<" in row_source
    a = operands(dtype, (8, 4), 21)
    r = operands(dtype, (8,), 22)
    for target in ("cuda -arch=sm_80 -emulate", "cpu"):
        b = np.zeros(4, NP[dtype])
        tilelang.compile(cols, target=target)(a, b)
        np.testing.assert_array_equal(b.view(np.uint16), fold(op, a, dtype).view(np.uint16))
        c = np.zeros(1, NP[dtype])
        tilelang.compile(rows, target=target)(r, c)
        halves = np.stack([fold(op, r[0::2, None], dtype), fold(op, r[1::2, None], dtype)])
        np.testing.assert_array_equal(c.view(np.uint16), fold(op, halves, dtype).view(np.uint16))
