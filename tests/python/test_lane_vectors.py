"""Short vector values (python/tilelang/language/vector.py): T.Ramp as a buffer index,
T.Broadcast, T.extract_lane, lane-wise arithmetic and TileLang's packed x2 operations
(T.add2, sub2, mul2, max2, min2, fma2, abs2), each lane one scalar expression."""

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate"]
M = 64  # threads, one pair of elements each
NP = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}

PACKED = {
    "add2": (T.add2, lambda a, b: a + b),
    "sub2": (T.sub2, lambda a, b: a - b),
    "mul2": (T.mul2, lambda a, b: a * b),
    "max2": (T.max2, np.maximum),
    "min2": (T.min2, np.minimum),
}


def rand(seed, dtype, n=2 * M):
    return np.random.default_rng(seed).standard_normal(n).astype(NP[dtype])


def rounded(x, dtype):
    """float64 results rounded once to `dtype`, as a packed op of that type rounds."""
    return x.astype(NP[dtype])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("op", sorted(PACKED))
def test_packed_binary_ops_match_numpy(target, dtype, op):
    fn, ref = PACKED[op]

    @T.prim_func
    def packed(
        A: T.Tensor((2 * M,), dtype), B: T.Tensor((2 * M,), dtype), C: T.Tensor((2 * M,), dtype)
    ):
        with T.Kernel(1, threads=M):
            t = T.get_thread_binding()
            idx = T.Ramp(t * 2, 1, 2)
            C[idx] = fn(A[idx], B[idx])

    kernel = tilelang.compile(packed, target=target)
    a, b = rand(1, dtype), rand(2, dtype)
    c = np.zeros_like(a)
    kernel(a, b, c)
    want = rounded(ref(a.astype(np.float64), b.astype(np.float64)), dtype)
    np.testing.assert_array_equal(c.astype(np.float64), want.astype(np.float64))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_fma2_and_abs2(target, dtype):
    @T.prim_func
    def fused(
        A: T.Tensor((2 * M,), dtype),
        B: T.Tensor((2 * M,), dtype),
        C: T.Tensor((2 * M,), dtype),
        D: T.Tensor((2 * M,), dtype),
        E: T.Tensor((2 * M,), dtype),
    ):
        with T.Kernel(1, threads=M):
            t = T.get_thread_binding()
            idx = T.Ramp(t * 2, 1, 2)
            D[idx] = T.fma2(A[idx], B[idx], C[idx])
            E[idx] = T.abs2(A[idx])

    kernel = tilelang.compile(fused, target=target)
    a, b, c = rand(3, dtype), rand(4, dtype), rand(5, dtype)
    d, e = np.zeros_like(a), np.zeros_like(a)
    kernel(a, b, c, d, e)
    exact = a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)
    np.testing.assert_allclose(d.astype(np.float64), exact, rtol=np.finfo(NP[dtype]).eps, atol=1e-6)
    np.testing.assert_array_equal(e, np.abs(a))


@pytest.mark.parametrize("target", TARGETS)
def test_ramp_indices_broadcast_and_lane_arithmetic(target):
    """A 2-D read with a strided ramp, lane-wise arithmetic with a scalar, a broadcast
    into a slice and single lanes taken out."""

    @T.prim_func
    def lanes(
        A: T.Tensor((8, 16), "float32"),
        B: T.Tensor((8, 4), "float32"),
        C: T.Tensor((8, 4), "float32"),
        D: T.Tensor((8,), "float32"),
    ):
        with T.Kernel(8, threads=1) as r:
            v = A[r, T.Ramp(1, 4, 4)]  # columns 1, 5, 9, 13
            B[r, T.Ramp(0, 1, 4)] = v * 2.0 + 1.0
            C[r, 0:4] = T.Broadcast(A[r, 0], 4)
            D[r] = T.extract_lane(v, 3) - T.extract_lane(v, 0)

    kernel = tilelang.compile(lanes, target=target)
    a = np.random.default_rng(9).standard_normal((8, 16)).astype(np.float32)
    b, c, d = np.zeros((8, 4), np.float32), np.zeros((8, 4), np.float32), np.zeros(8, np.float32)
    kernel(a, b, c, d)
    np.testing.assert_array_equal(b, a[:, 1::4] * np.float32(2) + np.float32(1))
    np.testing.assert_array_equal(c, np.repeat(a[:, :1], 4, axis=1))
    np.testing.assert_array_equal(d, a[:, 13] - a[:, 1])


@pytest.mark.parametrize(
    "body, expected",
    [
        (
            lambda A: T.add2(A[T.Ramp(0, 1, 2)], A[T.Ramp(0, 1, 4)]),
            "T.add2 needs all operands of the same dtype",
        ),
        (lambda A: T.add2(A[0], A[1]), "T.add2 takes values of float32x2, float16x2, bfloat16x2"),
        (
            lambda A: T.extract_lane(A[T.Ramp(0, 1, 2)], 2),
            "T.extract_lane: lane 2 is out of bounds for float32x2",
        ),
        (lambda A: T.Ramp(0, 1, 0), "T.Ramp: lanes must be a positive constant integer, got 0"),
        (
            lambda A: T.Ramp(0.5, 1, 2),
            "T.Ramp: base must be an integer or an integer expression, got 0.5",
        ),
        (lambda A: A.__setitem__(T.Ramp(0, 1, 2), T.Broadcast(1.0, 3)), "the lane counts differ"),
    ],
)
def test_misuse_is_reported_at_the_users_line(body, expected):
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def bad(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=1):
                body(A)

    assert expected in str(info.value)
    assert "test_lane_vectors.py" in str(info.value)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("width", [2, 4])
def test_atomic_add_run_returns_previous_values_and_takes_ramps(target, width):
    """T.atomic_addx2 / x4 with return_prev=True give the previous values as a vector;
    a ramp-indexed run of a buffer is accepted as either operand."""
    add = T.atomic_addx2 if width == 2 else T.atomic_addx4

    @T.prim_func
    def run(
        Dst: T.Tensor((8,), "float32"),
        Val: T.Tensor((8,), "float32"),
        Prev: T.Tensor((8,), "float32"),
    ):
        with T.Kernel(1, threads=1):
            for r in T.serial(8 // width):
                Prev[r * width : r * width + width] = add(
                    Dst[T.Ramp(r * width, 1, width)],
                    Val[r * width : r * width + width],
                    return_prev=True,
                )

    kernel = tilelang.compile(run, target=target)
    dst = np.random.default_rng(11).standard_normal(8).astype(np.float32)
    val = np.random.default_rng(12).standard_normal(8).astype(np.float32)
    prev = np.zeros(8, np.float32)
    before = dst.copy()
    kernel(dst, val, prev)
    np.testing.assert_array_equal(prev, before)
    np.testing.assert_array_equal(dst, before + val)


def test_atomic_add_run_needs_consecutive_lanes():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def bad(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=1):
                T.atomic_addx2(A[T.Ramp(0, 2, 2)], A[0:2])

    assert "T.atomic_addx2 dst must be 2 consecutive elements of one buffer" in str(info.value)
    assert "test_lane_vectors.py" in str(info.value)


@pytest.mark.parametrize("target", TARGETS)
def test_atomic_add_ramp_in_a_row_of_a_matrix(target):
    @T.prim_func
    def rows(Dst: T.Tensor((4, 6), "float32"), Val: T.Tensor((4, 2), "float32")):
        with T.Kernel(4, threads=1) as r:
            T.atomic_addx2(Dst[r, T.Ramp(3, 1, 2)], Val[r, T.Ramp(0, 1, 2)])

    kernel = tilelang.compile(rows, target=target)
    dst = np.random.default_rng(13).standard_normal((4, 6)).astype(np.float32)
    val = np.random.default_rng(14).standard_normal((4, 2)).astype(np.float32)
    ref = dst.copy()
    ref[:, 3:5] += val
    kernel(dst, val)
    np.testing.assert_array_equal(dst, ref)


# ---- variables of a vector dtype: T.alloc_var(T.float16x2), T.float16x2(a, b)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_vector_variables_hold_one_value_per_lane(target, dtype):
    vec = getattr(T, f"{dtype}x2")

    @T.prim_func
    def pairs(
        A: T.Tensor((2 * M,), dtype), B: T.Tensor((2 * M,), dtype), C: T.Tensor((2 * M,), dtype)
    ):
        with T.Kernel(1, threads=M):
            t = T.get_thread_binding()
            v = T.alloc_var(vec)
            v = vec(A[2 * t], A[2 * t + 1])
            w = T.alloc_var(vec, init=1.5)  # a scalar fills every lane
            w = w * v
            B[2 * t] = T.extract_lane(v, 1)
            B[2 * t + 1] = T.extract_lane(v, 0)
            C[2 * t] = T.extract_lane(T.add2(w, v), 0)
            C[2 * t + 1] = T.extract_lane(w, 1)

    k = tilelang.compile(pairs, target=target)
    a = rand(7, dtype)
    b, c = np.zeros_like(a), np.zeros_like(a)
    k(a, b, c)
    a64 = a.astype(np.float64)
    np.testing.assert_array_equal(b.reshape(M, 2), a.reshape(M, 2)[:, ::-1])
    w = rounded(1.5 * a64, dtype).astype(np.float64)
    np.testing.assert_array_equal(c[1::2], w[1::2].astype(NP[dtype]))
    if dtype == "float32":  # the host compiler may fuse 1.5 * v + v into one rounding
        np.testing.assert_allclose(c[0::2], 2.5 * a64[0::2], rtol=3e-7, atol=0)
    else:
        np.testing.assert_array_equal(c[0::2], rounded(w[0::2] + a64[0::2], dtype))


@pytest.mark.parametrize(
    "body, expected",
    [
        ("v = T.float16x2(A[0], A[1], A[2])", "T.float16x2(...) takes one value per lane (2), got 3"),
        ("v = T.Broadcast(A[0], 4)", "cannot assign a float16x4 value (4 lanes) to 'v' (float16x2, 2 lanes)"),
        ("A[0] = v", "'v' is a float16x2 variable, not a scalar: read a lane with T.extract_lane(v, i)"),
    ],
)  # fmt: skip
def test_vector_variable_misuse_is_named(body, expected, tmp_path):
    src = tmp_path / "vector_var_kernel.py"
    src.write_text(
        "import tilelang.language as T\n\n"
        "@T.prim_func\n"
        "def main(A: T.Tensor((4,), 'float16')):\n"
        "    with T.Kernel(1, threads=1):\n"
        "        v = T.alloc_var(T.float16x2)\n"
        f"        {body}\n"
    )
    import importlib.util

    spec = importlib.util.spec_from_file_location("vector_var_kernel", src)
    module = importlib.util.module_from_spec(spec)
    with pytest.raises(tilelang.TileLangError) as info:
        spec.loader.exec_module(module)
    assert "vector_var_kernel.py:7:" in str(info.value)
    assert expected in str(info.value), str(info.value)


def test_extract_lane_of_a_tvm_vector_expression_is_a_shuffle():
    """TileLang's T.extract_lane over an expression of TVM's IR (tvm.tirx.Var of a
    vector dtype) builds tirx.Shuffle: T.Shuffle, with TVM's vectors / indices / dtype;
    each misuse is the builtin exception TileLang raises, and a tilelang error."""
    from tilelang import tvm
    from tilelang.language.tir import ir as tir_ir

    tirx = tvm.tirx
    assert tirx.Shuffle is T.Shuffle is tir_ir.Shuffle and "Shuffle" in tir_ir.__all__
    v = tirx.Var("v", "int8x4")
    s = T.extract_lane(v, tirx.IntImm("int32", 2))
    assert isinstance(s, tirx.Shuffle) and str(s.dtype) == "int8"
    assert s.vectors[0].same_as(v) and s.indices[0].value == 2
    assert tirx.IntImm("int32", 7).value == 7 and tirx.Var("n").value is None
    for call, cls, message in [
        (lambda: T.extract_lane(1, 0), TypeError, "expects a PrimExpr"),
        (lambda: T.extract_lane(tirx.Var("x", "float16"), 0), ValueError, "vector expression"),
        (lambda: T.extract_lane(v, tirx.Var("i")), TypeError, "compile-time integer lane"),
        (lambda: T.extract_lane(v, 4), IndexError, "lane 4 is out of bounds for int8x4"),
        (lambda: T.extract_lane(v, -1), IndexError, "out of bounds"),
        (lambda: T.Shuffle([v], [9]), IndexError, "lane 9 is out of bounds for 4 lanes"),
    ]:
        with pytest.raises(cls, match=message) as info:
            call()
        assert isinstance(info.value, tilelang.TileLangError)


def test_shuffle_in_a_kernel_picks_lanes():
    """T.Shuffle over vectors a kernel computes is the picked lanes: one index a scalar,
    several a vector; a vector of TVM's IR used in a kernel is an error saying why."""

    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1):
            v = A[T.Ramp(0, 1, 4)]
            B[T.Ramp(0, 1, 2)] = T.Shuffle([v], [3, 1])
            B[2] = T.Shuffle([v, v], [4])
            B[3] = T.extract_lane(v, 2)

    a, b = np.array([1, 2, 3, 4], np.float32), np.zeros(4, np.float32)
    tilelang.compile(main, target="cpu")(a, b)
    np.testing.assert_array_equal(b, [4, 2, 1, 3])

    from tilelang import tvm

    with pytest.raises(tilelang.TileLangError, match="a variable of TVM's IR has no value"):

        @T.prim_func
        def bad(B: T.Tensor((1,), "float16")):
            with T.Kernel(1, threads=1):
                B[0] = T.extract_lane(tvm.tirx.Var("w", "float16x2"), 0)
