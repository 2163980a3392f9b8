"""Integer literals over the whole range of their dtype (T.uint64(2**64 - 1)), their
range errors, a fresh scalar variable from a dtype called without a value (`T.int32()`)
bound with T.let, `T.Var` as a type, and JITKernel.run_once."""

import re

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang import _C

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate"]
rng = np.random.default_rng(11)


def test_integer_literals_at_the_ends_of_their_range():
    assert "18446744073709551615" in str(T.uint64(0xFFFFFFFFFFFFFFFF))
    assert "9223372036854775807" in str(T.int64(0x7FFFFFFFFFFFFFFF))
    assert "-9223372036854775808" in str(T.int64(-0x7FFFFFFFFFFFFFFF - 1))
    assert "4294967295" in str(T.uint32(0xFFFFFFFF))
    assert str(T.int32(-0x7FFFFFFF - 1)) == "-2147483648"
    a = T.uint64()
    assert "18446744073709551615" in str(a & T.uint64(0xFFFFFFFFFFFFFFFF))


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: T.int32(2**31), "T.int32(2147483648): 2147483648 is outside the range"),
        (lambda: T.uint8(-1), "T.uint8(-1): -1 is outside the range [0, 255] of uint8"),
        (lambda: T.uint64(2**64), "outside the range [0, 18446744073709551615] of uint64"),
        (lambda: _C.const(2**70, "int64"), "the integer 1180591620717411303424 does not fit"),
        (lambda: _C.const(2**64, "uint64"), "does not fit in uint64"),
        (lambda: _C.const("7", "int32"), "literal needs a Python bool, int or float"),
    ],
)
def test_out_of_range_literals_are_user_errors(make, message):
    with pytest.raises(tilelang.TileLangError, match=re.escape(message)):
        make()


def test_fresh_variable_and_var_type():
    v = T.int64()
    assert isinstance(v, T.Var) and v.dtype == "int64"
    assert isinstance(T.dynamic("n"), T.Var)
    assert not isinstance(3, T.Var)
    assert isinstance(T.Var("m", "int32"), T.Var)


@pytest.mark.parametrize("target", TARGETS)
def test_let_binds_a_fresh_variable(target):
    n, block = 256, 64

    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
        with T.Kernel(n // block, threads=block) as bx:
            offset = T.int32()
            T.let(offset, bx * block)
            for i in T.Parallel(block):
                B[offset + i] = A[(offset + i + 3) % n] * 2.0

    kernel = tilelang.compile(main, out_idx=[1], target=target)
    a = rng.standard_normal(n).astype(np.float32)
    np.testing.assert_allclose(kernel(a), np.roll(a.astype(np.float64), -3) * 2.0, rtol=1e-6)


def test_let_errors():
    with pytest.raises(tilelang.TileLangError, match="T.let binds a variable made by T.int32"):

        @T.prim_func
        def bad(A: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=4):
                T.let(A[0], 1)


def test_run_once():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as _:
            for i in T.Parallel(64):
                B[i] = A[i] + 1.0

    kernel = tilelang.compile(main, out_idx=[1], target="cpu")
    kernel.run_once()


@pytest.mark.parametrize(
    "annotations, message",
    [
        ({"k": 2**70}, "the attribute value 1180591620717411303424 does not fit in 64 bits"),
        (
            {"k": [1.5]},
            "an element of the attribute's list must be an integer, got <class 'float'>",
        ),
    ],
)
def test_attribute_values_the_core_cannot_take_are_user_errors(annotations, message):
    with pytest.raises(tilelang.TileLangError, match=re.escape(message)):

        @T.prim_func
        def main(A: T.Tensor((4,), T.float32), B: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=4):
                T.copy(A, B, annotations=annotations)


@pytest.mark.parametrize(
    "dtype,value,how",
    [("float32", 1e300, "init"), ("float16", 1e39, "store"), ("bfloat16", -1e39, "init")],
)
def test_a_float_literal_beyond_float32_is_refused(dtype, value, how):
    with pytest.raises(ValueError, match=f"exceeds maximum of float32 .* stored into {dtype}"):

        @T.prim_func
        def main(A: T.Tensor((1,), dtype)):
            with T.Kernel(1, threads=1):
                if how == "init":
                    v = T.alloc_var(dtype, init=value)
                    A[0] = v
                else:
                    A[0] = value


@pytest.mark.parametrize("target", TARGETS)
def test_float_literals_within_float32_and_infinity_are_stored(target):
    @T.prim_func
    def main(A: T.Tensor((4,), "float16"), B: T.Tensor((4,), "float16")):
        with T.Kernel(1, threads=1):
            v = T.alloc_var("float16", init=65504.0)
            B[0] = v
            B[1] = -65504.0
            B[2] = float("inf")
            B[3] = A[3] * 0.5
            A[0] = 70000.0  # a float32 value beyond float16: inf, as IEEE converts it

    kernel = tilelang.compile(main, target=target)
    a = rng.standard_normal(4).astype(np.float16)
    b = np.zeros(4, np.float16)
    kernel(a, b)
    np.testing.assert_array_equal(b[:3], np.array([65504.0, -65504.0, np.inf], np.float16))
    np.testing.assert_allclose(b[3], a[3].astype(np.float32) * 0.5, rtol=1e-3)
    assert a[0] == np.inf
