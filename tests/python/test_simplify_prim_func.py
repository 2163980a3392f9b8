"""tilelang.transform.simplify_prim_func / apply_simplify (TileLang's): the traced kernel
with its arithmetic simplified, computing what it computed before."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.transform import apply_simplify, simplify_prim_func


def scale_factory(N, block=64):
    @T.prim_func
    def k(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            tx = T.get_thread_binding()
            i = bx * block + tx + 0 * 7
            if i < N and 1 + 1 == 2:
                B[i] = A[i] * (2 + 1) + T.float32(0)
            S = T.alloc_shared((block,), "float32")
            T.copy(A[bx * block], S)
            for j in T.Parallel(block):
                B[bx * block + j] = B[bx * block + j] + S[j] * (4 - 3)

    return k


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_90a -emulate"])
@pytest.mark.parametrize("N", [256, 200])
def test_the_simplified_kernel_computes_the_same(target, N):
    plain = scale_factory(N)
    simple = simplify_prim_func(scale_factory)(N)
    assert simple.name == plain.name and simple.params == plain.params
    a = np.random.default_rng(0).random(N, dtype=np.float32)
    for f in (plain, simple):
        b = np.zeros_like(a)
        tilelang.compile(f, target=target)(a, b)
        np.testing.assert_allclose(b, 4 * a, rtol=1e-6)


def test_the_script_loses_what_the_ranges_prove():
    plain = scale_factory(256).script()
    simple = apply_simplify(scale_factory(256)).script()
    assert "if (i < 256):" in plain and "tx) + 0)" in plain
    # 256 is a multiple of 64: bx * 64 + tx < 256 always holds, and + 0 folds away.
    assert "if " not in simple and "tx) + 0)" not in simple
    assert "if (i < 200):" in apply_simplify(scale_factory(200)).script()  # a real tail stays


def test_apply_simplify_names_what_it_got():
    with pytest.raises(TypeError, match="apply_simplify: expected a T.prim_func, got int 3"):
        apply_simplify(3)


def bias_factory(with_bias):
    n = T.dynamic("n")

    @T.prim_func
    def k(
        A: T.Tensor((n,), "float32"),
        Bias: T.Tensor((n,), "float32"),
        Scale: T.Tensor((4,), "float32"),
        C: T.Tensor((n,), "float32"),
    ):
        with T.Kernel(T.ceildiv(n, 64), threads=64) as bx:
            for i in T.Parallel(64):
                if bx * 64 + i < n:
                    if with_bias:
                        C[bx * 64 + i] = A[bx * 64 + i] + Bias[bx * 64 + i]
                    else:
                        C[bx * 64 + i] = A[bx * 64 + i] * 2

    return k


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
def test_tensors_the_body_never_touches_are_dropped(target):
    # TileLang's Simplify(simplify_arguments=True): a kernel built without its optional
    # operands is called without them (its GEMV test calls kernel(A, B, C)).
    rng = np.random.default_rng(3)
    a, bias = (
        rng.standard_normal(100).astype(np.float32),
        rng.standard_normal(100).astype(np.float32),
    )
    plain = apply_simplify(bias_factory(False))
    assert plain.params == ["A", "C"]
    c = np.zeros(100, np.float32)
    tilelang.compile(plain, target=target)(a, c)
    np.testing.assert_array_equal(c, a * 2)
    # Bias is read now; Scale still is not. Bias defines n as well as A does.
    biased = apply_simplify(bias_factory(True))
    assert biased.params == ["A", "Bias", "C"]
    tilelang.compile(biased, target=target)(a, bias, c)
    np.testing.assert_array_equal(c, a + bias)


def test_a_tensor_that_alone_defines_a_size_stays():
    n = T.dynamic("n")

    @T.prim_func
    def k(Shape: T.Tensor((n,), "int32"), C: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                C[i] = n + i

    assert apply_simplify(k).params == ["Shape", "C"]
    c = np.zeros(64, np.int32)
    tilelang.compile(apply_simplify(k), target="cpu")(np.zeros(5, np.int32), c)
    np.testing.assert_array_equal(c, np.arange(64) + 5)


def test_outputs_keep_their_positions():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), Unused: T.Tensor((8,), "float32")):
        B = T.empty((64,), "float32")
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                B[i] = A[i] + 1
        return B

    simple = apply_simplify(k)
    assert simple.params == ["A", "B"] and simple.attrs["tilelang_out_idx"] == [1]
    a = np.random.default_rng(4).standard_normal(64).astype(np.float32)
    np.testing.assert_array_equal(tilelang.compile(simple, target="cpu")(a), a + 1)
