"""T.sblock (python/tilelang/language/frames.py): TVM's block as a lexical scope for the
annotations made inside it; T.reads / T.writes describe it and change nothing."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate"]


@pytest.mark.parametrize("target", TARGETS)
def test_safe_values_follow_the_blocks(target):
    """A 60x60 tensor copied into 64x64 tiles: the inner block's copy fills with -99, the
    outer block's (after the inner one ends) with -1, a copy after both blocks with 0."""
    M, B = 60, 64

    @T.prim_func
    def scoped(A: T.Tensor((M, M), "float32"), Out: T.Tensor((3, B, B), "float32")):
        with T.Kernel(1, threads=128):
            inner = T.alloc_shared((B, B), "float32")
            outer = T.alloc_shared((B, B), "float32")
            after = T.alloc_shared((B, B), "float32")
            with T.sblock("outer"):
                T.reads(A[0:M, 0:M])
                T.writes()
                T.annotate_safe_value({A: -1.0})
                with T.sblock("inner"):
                    T.annotate_safe_value({A: -99.0})
                    T.copy(A[0:B, 0:B], inner)
                T.copy(A[0:B, 0:B], outer)
            T.copy(A[0:B, 0:B], after)
            T.copy(inner, Out[0, :, :])
            T.copy(outer, Out[1, :, :])
            T.copy(after, Out[2, :, :])

    kernel = tilelang.compile(scoped, target=target)
    a = np.random.default_rng(0).standard_normal((M, M)).astype(np.float32)
    out = np.zeros((3, B, B), np.float32)
    kernel(a, out)
    for k, fill in enumerate([-99.0, -1.0, 0.0]):
        ref = np.full((B, B), fill, np.float32)
        ref[:M, :M] = a
        np.testing.assert_array_equal(out[k], ref)


def test_sblock_outside_a_kernel_is_an_error():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def bad(A: T.Tensor((4,), "float32")):
            with T.sblock("b"):
                A[0] = 1.0

    assert "T.sblock must be used inside `with T.Kernel(...)`" in str(info.value)
    assert "test_sblock.py" in str(info.value)
