"""@T.macro: helpers inlined while tracing, with Python-level parameters, return values,
macros calling macros, macros defined inside a kernel, and their own control flow; plus
`T.prelude=` on T.Kernel. Run on the CPU against numpy."""

import re

import numpy as np
import pytest
import tilelang
import tilelang.language as T

rng = np.random.default_rng(5)
N = 21


@T.macro
def clamp_to(x, lo, hi):
    return T.max(T.min(x, hi), lo)


@T.macro
def scaled(buf, i, factor=2.0, shift=None):
    value = buf[i] * factor
    if shift is not None:  # a Python-level decision on a macro parameter
        value = value + shift
    return value


@T.macro
def store_clamped(dst, src, i, lo, hi):
    # a macro calling macros, with a symbolic if whose branches bind the same name
    if src[i] > 0:
        v = scaled(src, i, shift=1.0)
    else:
        v = scaled(src, i, factor=-1.0)
    dst[i] = clamp_to(v, lo, hi)


@T.macro
def running_sum(src, n):
    acc = T.alloc_var(T.float32, init=0.0)
    for k in T.serial(n):
        acc += src[k]
    return acc


@tilelang.jit(out_idx=[-1], target="cpu")
def macro_kernel(n):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n + 2,), "float32")):
        with T.Kernel(1, threads=1, prelude="// prelude from the test\n"):

            @T.macro
            def twice(x):
                return x + x

            for i in T.serial(n):
                store_clamped(B, A, i, -1.5, 2.5)
            total = running_sum(A, n)
            B[n] = twice(total)
            B[n + 1] = twice(clamp_to(A[0], 0.0, 1.0))

    return main


def macro_ref(a):
    v = np.where(a > 0, a * 2 + 1, -a)
    out = np.empty(a.size + 2, np.float32)
    out[: a.size] = np.clip(v, -1.5, 2.5)
    out[a.size] = 2 * a.sum()
    out[a.size + 1] = 2 * np.clip(a[0], 0, 1)
    return out


def test_macros_inline_with_parameters_returns_and_nesting():
    kernel = macro_kernel(N)
    a = rng.standard_normal(N).astype(np.float32)
    np.testing.assert_allclose(kernel(a), macro_ref(a), rtol=1e-5)
    # the prelude is kept in the IR for GPU targets (the CPU target has no use for it)
    assert "// prelude from the test" in kernel.prim_func.script()


def test_a_returned_variable_and_expressions_are_prim_exprs():
    # TileLang's check of macro results: numbers, expressions, and a T.alloc_var a macro
    # returns (it reads as its value) are instances of T.PrimExpr; buffers are not.
    seen = {}

    @T.macro
    def make_var(x):
        return T.alloc_var(T.float32, init=x)

    @T.prim_func
    def main(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1):
            v = make_var(A[1])
            seen["var"] = isinstance(v, T.PrimExpr)
            seen["expr"] = isinstance(A[0] + 1.0, T.PrimExpr)
            seen["buffer"] = isinstance(A, T.PrimExpr)
            A[0] = v * 2.0

    assert seen == {"var": True, "expr": True, "buffer": False}
    a = rng.standard_normal(4).astype(np.float32)
    ref = a.copy()
    ref[0] = a[1] * 2
    tilelang.compile(main, target="cpu")(a)
    np.testing.assert_allclose(a, ref, rtol=1e-6)


def test_macro_script_shows_inlined_code():
    script = macro_kernel(N).prim_func.script()
    assert "T.max(T.min(" in script  # clamp_to inlined
    assert "acc[0] = (acc[0] + A[k])" in script  # running_sum's loop inlined


def test_macro_return_inside_a_loop_is_rejected():
    @T.macro
    def first_positive(buf, n):
        for k in T.serial(n):
            if buf[k] > 0:
                return k  # MARK-ret
        return -1

    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "int32")):
            with T.Kernel(1, threads=1):
                B[0] = first_positive(A, 8)

    msg = str(info.value)
    assert "`return` inside a loop or symbolic `if` of a @T.macro is not supported" in msg
    assert msg.startswith(f"{__file__}:{first_positive.func.__code__.co_firstlineno + 4}: ")


def test_macro_outside_a_kernel_function():
    with pytest.raises(tilelang.TileLangError, match="macro 'clamp_to' can only be used inside"):
        clamp_to(1, 0, 2)


@T.macro
def store_ref(x: T.Ref, v):
    x = v  # noqa: F841 - stores through the reference


@T.macro
def add_ref(x: T.Var, v):  # TileLang's older spelling of T.Ref
    x += v


@T.macro
def collatz(n, var: T.Ref):
    # recursion on a Python int; each level updates the same element through `var`
    if n == 1:
        pass
    elif n % 2 == 0:
        var = var // 2
        collatz(n // 2, var)
    else:
        var = var * 3 + 1
        collatz(n * 3 + 1, var)


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
def test_reference_parameters_store_into_the_element_passed(target):
    @T.prim_func
    def main(
        A: T.Tensor((4,), T.float32), B: T.Tensor((4,), T.float32), C: T.Tensor((2,), T.int32)
    ):
        with T.Kernel(1, threads=1):
            s = T.alloc_var(T.float32, init=0.5)
            store_ref(B[0], A[1])  # B[0] = A[1]
            add_ref(B[1], A[2])  # B[1] += A[2]
            add_ref(s, A[3])  # a T.alloc_var passed by reference
            B[2] = s
            idx = T.alloc_var(T.int32, init=3)
            row = T.alloc_var(T.int32, init=1)
            store_ref(B[idx], A[0] * 2.0)  # the element named at the call: B[3]
            idx = 0
            C[row] = 6
            collatz(6, C[row])  # 6 3 10 5 16 8 4 2 1
            C[0] = idx

    kernel = tilelang.compile(main, target=target)
    a = rng.standard_normal(4).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    c = np.full(2, 100, np.int32)
    want = b.astype(np.float64).copy()
    want[0] = a[1]
    want[1] += a[2]
    want[2] = 0.5 + np.float64(a[3])
    want[3] = 2.0 * a[0]
    kernel(a, b, c)
    np.testing.assert_allclose(b, want, rtol=1e-6)
    np.testing.assert_array_equal(c, [0, 1])


@pytest.mark.parametrize("value,shown", [("1", "got 1 (int)"), ("A", "got buffer 'A'")])
def test_a_reference_parameter_needs_a_variable_or_an_element(value, shown):
    with pytest.raises(
        ValueError,
        match=r"argument 'x' of macro 'store_ref' is passed by reference \(T.Ref\), so it "
        r"must be a T.alloc_var, a buffer element such as A\[i\] or a slice, " + re.escape(shown),
    ):

        @T.prim_func
        def main(A: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=1):
                store_ref(1 if value == "1" else A, 2.0)
