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
