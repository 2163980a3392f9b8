"""Eager @tilelang.jit functions: get_tir(*args) with tensors or `T.Tensor(shape, dtype)`
stand-ins (traced, not compiled), parameters annotated in the signature, a shared
T.dynamic size compared with itself in Python (`M == M_`), and T.empty(M, N, dtype=...)."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.jit.kernel import JITKernel

rng = np.random.default_rng(31)


@T.macro
def scaled_copy(A, B, scale):
    M, N = A.shape
    M_, N_ = B.shape
    assert M == M_, "rows differ"
    assert N == N_, "columns differ"
    with T.Kernel(T.ceildiv(M, 16), threads=16) as bx:
        for i, j in T.Parallel(16, N):
            if bx * 16 + i < M:
                B[bx * 16 + i, j] = A[bx * 16 + i, j] * scale


@tilelang.jit(target="cpu")
def with_consts(A, B, scale=2.0):
    M, N = T.const("M, N")
    A: T.Tensor[[M, N], T.float32]
    B: T.Tensor[[M, N], T.float32]
    scaled_copy(A, B, scale)


@tilelang.jit(target="cpu")
def in_signature(A: T.Tensor[[32, 8], T.float32], B: T.Tensor[[32, 8], T.float32]):
    scaled_copy(A, B, 3.0)


@tilelang.jit(target="cpu")
def with_dynamic(A, B):
    M = T.dynamic("M")
    N = T.const("N")
    A: T.Tensor[[M, N], T.float32]
    B: T.Tensor[[M, N], T.float32]
    scaled_copy(A, B, -1.0)


@tilelang.jit(target="cpu")
def returns_empty(A):
    M, N = T.const("M, N")
    A: T.Tensor[[M, N], T.float32]
    B = T.empty(M, N, dtype=A.dtype)
    scaled_copy(A, B, 0.5)
    return B


def test_get_tir_takes_tensor_stand_ins_and_compiles_nothing(monkeypatch):
    def no_compile(*args, **kwargs):
        raise AssertionError("get_tir compiled a kernel")

    monkeypatch.setattr(JITKernel, "__init__", no_compile)
    tir = with_consts.get_tir(T.Tensor((48, 8)), T.Tensor((48, 8)))
    assert tir.params == ["A", "B"]
    assert "48" in tir.script()
    assert with_dynamic.get_tir(T.Tensor((48, 8)), T.Tensor((48, 8))).params == ["A", "B"]
    assert in_signature.get_tir(T.Tensor((32, 8)), T.Tensor((32, 8))).params == ["A", "B"]
    assert "24" in with_consts.get_tir(M=24, N=8).script()


def test_get_tir_functions_compile_and_run():
    funcs = [with_consts, in_signature, with_dynamic]
    tirs = [f.get_tir(T.Tensor((32, 8)), T.Tensor((32, 8))) for f in funcs]
    kernels = tilelang.par_compile(tirs, target="cpu")
    a = rng.standard_normal((32, 8)).astype(np.float32)
    for kernel, scale in zip(kernels, [2.0, 3.0, -1.0]):
        b = np.zeros_like(a)
        kernel(a, b)
        np.testing.assert_allclose(b, a.astype(np.float64) * scale, rtol=1e-6)
    for f, scale in zip(funcs, [2.0, 3.0, -1.0]):
        b = np.zeros_like(a)
        f(a, b)
        np.testing.assert_allclose(b, a.astype(np.float64) * scale, rtol=1e-6)


def test_empty_with_shape_arguments_and_dtype_keyword():
    a = rng.standard_normal((40, 4)).astype(np.float32)
    np.testing.assert_allclose(returns_empty(a), a.astype(np.float64) * 0.5, rtol=1e-6)


def test_get_tir_stand_in_errors():
    with pytest.raises(tilelang.TileLangError, match="T.const 'M' of 'with_consts' takes shape 0"):
        with_consts.get_tir(T.Tensor((T.dynamic("k"), 8)), T.Tensor((48, 8)))


def test_same_symbolic_size_compares_equal_in_python():
    a, b = [T.dynamic("m")] * 2
    assert bool(a == b) and not bool(a != b)
    with pytest.raises(TypeError, match="has no Python truth value"):
        bool(a == T.dynamic("m2"))


@tilelang.jit(target="cpu")
def strided_fp4(A):
    M, K, S = T.const("M K S")
    A: T.StridedTensor((M, K), (S, 1), T.float4_e2m1fn)
    with T.Kernel(1, threads=32):
        T.evaluate(A[0, 0])


def test_buffer_map_gives_shapes_and_strides_in_elements():
    # Every other row of a (512, 256)-byte tensor: 256 rows of 512 fp4 elements, rows
    # 1024 elements (512 bytes) apart, as the kernel's runtime reads the bytes.
    import torch

    packed = torch.zeros((512, 256), dtype=torch.int8)[::2, :]
    buffer = strided_fp4.get_tir(packed).buffer_map["A"]
    assert buffer.shape == (256, 512) and buffer.strides == (1024, 1)
    compact = with_consts.get_tir(np.zeros((3, 5), np.float32), np.zeros((3, 5), np.float32))
    assert compact.buffer_map["A"].shape == (3, 5) and compact.buffer_map["A"].strides == ()


def test_par_compile_of_an_eager_function_compiles_each_config_and_calls_reuse_them():
    @tilelang.jit(target="cpu")
    def scaled(A, B, scale: float = 2.0):
        M, N = T.const("M, N")
        A: T.Tensor[[M, N], T.float32]
        B: T.Tensor[[M, N], T.float32]
        scaled_copy(A, B, scale)

    configs = [
        (T.Tensor((32, 8)), T.Tensor((32, 8))),
        {"A": T.Tensor((48, 4)), "B": T.Tensor((48, 4)), "scale": -3.0},
        {"M": 16, "N": 8, "scale": 0.25},  # config values and T.const values, as compile() takes
    ]
    kernels = scaled.par_compile(configs, num_workers=1)
    assert all(isinstance(k, JITKernel) for k in kernels)
    for kernel, (shape, scale) in zip(kernels, [((32, 8), 2.0), ((48, 4), -3.0), ((16, 8), 0.25)]):
        a = rng.standard_normal(shape).astype(np.float32)
        b = np.zeros_like(a)
        kernel(a, b)
        np.testing.assert_allclose(b, a.astype(np.float64) * scale, rtol=1e-6)
        # A call selecting that kernel reuses it (its traced function is the one compiled).
        assert scaled.get_tir(T.Tensor(shape), T.Tensor(shape), scale=scale) is kernel.prim_func
        b2 = np.zeros_like(a)
        scaled(a, b2, scale=scale)
        np.testing.assert_array_equal(b2, b)
    # A config already compiled gives the same kernel.
    assert scaled.par_compile([configs[0]])[0] is kernels[0]


def test_par_compile_of_an_eager_function_with_pointers_and_outputs():
    @tilelang.jit(target="cpu")
    def add_one(A: T.ptr, B: T.ptr, M: int, dtype: T.dtype):
        A = T.make_tensor(A, (M,), dtype)
        B = T.make_tensor(B, (M,), dtype)
        with T.Kernel(1, threads=M):
            for i in T.Parallel(M):
                B[i] = A[i] + 1

    kernels = add_one.par_compile(
        [{"A": T.ptr(), "B": T.ptr(), "M": 32, "dtype": d} for d in (T.float16, T.float32)]
    )
    for kernel, np_dtype in zip(kernels, (np.float16, np.float32)):
        a = rng.standard_normal(32).astype(np_dtype)
        b = np.zeros_like(a)
        kernel(a, b)
        np.testing.assert_allclose(b, (a.astype(np.float64) + 1).astype(np_dtype), rtol=1e-3)
        b2 = np.zeros_like(a)
        add_one(a, b2, 32, np_dtype)  # the call's own key: a numpy dtype, not T.<dtype>
        np.testing.assert_array_equal(b2, b)

    (kernel,) = returns_empty.par_compile([(T.Tensor((24, 4)),)])
    a = rng.standard_normal((24, 4)).astype(np.float32)
    np.testing.assert_allclose(returns_empty(a), a.astype(np.float64) * 0.5, rtol=1e-6)
    np.testing.assert_allclose(kernel(a), a.astype(np.float64) * 0.5, rtol=1e-6)


def test_par_compile_of_an_eager_function_reports_a_failing_config():
    bad = {"A": T.Tensor((T.dynamic("k"), 8)), "B": T.Tensor((48, 8))}
    with pytest.raises(tilelang.TileLangError, match="T.const 'M' of 'with_consts' takes shape 0"):
        with_consts.par_compile([(T.Tensor((16, 8)), T.Tensor((16, 8))), bad])
    kernels = with_consts.par_compile(
        [(T.Tensor((16, 8)), T.Tensor((16, 8))), bad], ignore_error=True
    )
    assert isinstance(kernels[0], JITKernel) and kernels[1] is None


def test_compile_takes_a_calls_arguments():
    """TileLang's `f.compile(*args)`: the kernel the call would run, compiled, not run
    (the DeepSeek sparse MLA example's `return_kernel=True`)."""
    a = rng.standard_normal((32, 8)).astype(np.float32)
    kernel = with_consts.compile(a, np.zeros_like(a), 4.0)
    assert isinstance(kernel, JITKernel)
    b = np.zeros_like(a)
    kernel(a, b)
    np.testing.assert_allclose(b, a.astype(np.float64) * 4.0, rtol=1e-6)
    stand_in = with_consts.compile(T.Tensor((32, 8)), T.Tensor((32, 8)))
    assert stand_in.get_kernel_source() == with_consts.compile(M=32, N=8).get_kernel_source()
