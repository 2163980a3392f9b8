"""A T.prim_func whose body annotates the parameters its signature leaves bare
(`A: T.Tensor(...)`), makes outputs with T.empty and returns them, and sets function
attributes (T.annotate_pass_configs, T.annotate_compile_flags) that tilelang.compile
merges with its own arguments; eager functions returning several outputs."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.transform import PassConfigKey

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate"]
rng = np.random.default_rng(23)


def _body_annotated_add():
    @T.prim_func
    def kernel(A, B):
        T.annotate_pass_configs({PassConfigKey.TL_ENABLE_FAST_MATH: True})
        B: T.Tensor[[64], T.float32]  # declared before A: the signature's order stays
        A: T.Tensor[[64], T.float32]
        T.annotate_compile_flags("-O2")
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                B[i] = A[i] * 3.0 + 1.0

    return kernel


@pytest.mark.parametrize("target", TARGETS)
def test_body_annotated_parameters_keep_the_signature_order(target):
    kernel = _body_annotated_add()
    assert kernel.params == ["A", "B"]
    assert kernel.attrs["tilelang_pass_configs"] == {PassConfigKey.TL_ENABLE_FAST_MATH: True}
    assert kernel.attrs["tilelang_compile_flags"] == ["-O2"]
    assert "tilelang_out_idx" not in kernel.attrs
    compiled = tilelang.compile(kernel, out_idx=[-1], target=target)
    assert compiled.pass_configs[PassConfigKey.TL_ENABLE_FAST_MATH.value] is True
    assert compiled.compile_flags[0] == "-O2"
    a = rng.standard_normal(64).astype(np.float32)
    np.testing.assert_allclose(compiled(a), a.astype(np.float64) * 3 + 1, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_returned_empty_outputs_become_out_idx(target):
    @T.prim_func
    def kernel(A, n: T.int32):
        m = T.dynamic("m")
        A: T.Tensor[[m], T.float32]
        B = T.empty([m], T.float32)
        C = T.empty(m + 1, dtype=T.float32)
        with T.Kernel(1, threads=1):
            for i in T.serial(m):
                B[i] = A[i] * T.cast(n, T.float32)
            for i in T.serial(m + 1):
                C[i] = T.cast(i, T.float32)
        return C, B

    assert kernel.attrs["tilelang_out_idx"] == [-1, -2]
    assert kernel.params == ["A", "n", "B", "C"]
    compiled = tilelang.compile(kernel, target=target)
    a = rng.standard_normal(29).astype(np.float32)
    c, b = compiled(a, 5)
    np.testing.assert_allclose(b, a.astype(np.float64) * 5, rtol=1e-6)
    np.testing.assert_array_equal(c, np.arange(30, dtype=np.float32))


def test_out_idx_conflicts_with_returned_outputs():
    @T.prim_func
    def kernel(A: T.Tensor((8,), T.float32)):
        B = T.empty((8,), T.float32)
        with T.Kernel(1, threads=8):
            for i in T.Parallel(8):
                B[i] = A[i]
        return B

    with pytest.raises(
        ValueError, match=r"Out index conflict: tilelang.compile got out_idx=\[-1\]"
    ):
        tilelang.compile(kernel, out_idx=[-1], target="cpu")


def test_call_pass_configs_win_and_flags_append():
    kernel = _body_annotated_add()
    compiled = tilelang.compile(
        kernel,
        out_idx=[1],
        target="cpu",
        pass_configs={PassConfigKey.TL_ENABLE_FAST_MATH: False},
        compile_flags=["-g0"],
    )
    assert compiled.pass_configs[PassConfigKey.TL_ENABLE_FAST_MATH.value] is False
    assert compiled.compile_flags[:2] == ["-O2", "-g0"]


def test_errors_of_body_declarations():
    with pytest.raises(tilelang.TileLangError, match="parameter 'B' of T.prim_func 'k1' needs an"):

        @T.prim_func
        def k1(A, B):
            A: T.Tensor((4,), T.float32)

    with pytest.raises(tilelang.TileLangError, match="'A' of T.prim_func 'k2' is annotated twice"):

        @T.prim_func
        def k2(A):
            A: T.Tensor((4,), T.float32)
            A: T.Tensor((4,), T.float32)

    with pytest.raises(tilelang.TileLangError, match="'A' of T.prim_func 'k3' is used before"):

        @T.prim_func
        def k3(A):
            with T.Kernel(1, threads=1):
                A[0] = 1.0

    with pytest.raises(tilelang.TileLangError, match=r"makes outputs with T.empty \('B'\) but"):

        @T.prim_func
        def k4(A: T.Tensor((4,), T.float32)):
            B = T.empty((4,), T.float32)  # noqa: F841

    with pytest.raises(tilelang.TileLangError, match="'C' not returned"):

        @T.prim_func
        def k5(A: T.Tensor((4,), T.float32)):
            B = T.empty((4,), T.float32)
            C = T.empty((4,), T.float32)  # noqa: F841
            return B

    with pytest.raises(tilelang.TileLangError, match="can only return tensors made by T.empty"):

        @T.prim_func
        def k6(A: T.Tensor((4,), T.float32)):
            return A

    with pytest.raises(tilelang.TileLangError, match="T.annotate_pass_configs takes a dict"):

        @T.prim_func
        def k7(A: T.Tensor((4,), T.float32)):
            T.annotate_pass_configs(["tl.x"])


def test_an_expression_as_a_parameter_annotation_is_named():
    # A T.Var (an expression) in the signature: the parameter and what it was, not a
    # TypeError from comparing the expression with int / float / bool.
    with pytest.raises(
        tilelang.TileLangError,
        match=r"parameter 'x' of T.prim_func 'k' must be annotated with T.Tensor\(shape, "
        r"dtype\), a dtype or T.ptr, got n \(a Var\)",
    ):

        @T.prim_func
        def k(A: T.Tensor((8,), T.float32), x: T.Var("n", "int32")):
            with T.Kernel(1, threads=32):
                A[0] = x


def test_eager_function_returns_a_list_and_takes_annotations():
    @tilelang.jit(target="cpu")
    def two(A):
        M = T.const("M")
        A: T.Tensor[[M], T.float32]
        T.annotate_pass_configs({PassConfigKey.TL_ENABLE_FAST_MATH: True})
        B = T.empty([M], T.float32)
        C = T.empty(M, 2, dtype=T.float32)
        with T.Kernel(1, threads=1):
            for i in T.serial(M):
                B[i] = A[i] - 1.0
                C[i, 0] = A[i]
                C[i, 1] = A[i] * A[i]
        return B, C

    a = rng.standard_normal(17).astype(np.float32)
    out = two(a)
    assert isinstance(out, list) and len(out) == 2
    np.testing.assert_allclose(out[0], a.astype(np.float64) - 1, rtol=1e-6)
    np.testing.assert_allclose(out[1][:, 1], a.astype(np.float64) ** 2, rtol=1e-6)
