"""Reductions and scans under a branch on the thread index that covers whole warps
(`if tx < 32:`, `if 32 <= tx < 96:`) run on sm_80 as on sm_90a: their fragments and
shuffles are spread over the branch's threads only (TileLang's deepseek_mhc pre kernel
reduces a 4 x 4 fragment under `if T.get_thread_binding() < 32:`). A branch over part
of a warp, or a gemm under a branch on sm_80, stays an error at the op's line."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

SM80 = "cuda -arch=sm_80 -emulate"
SM90A = "cuda -arch=sm_90a -emulate"
rng = np.random.default_rng(11)


def reduce_in_branch(lo, hi, rows=4, cols=4, threads=96):
    @T.prim_func
    def kern(
        A: T.Tensor((rows, cols), "float32"),
        Mx: T.Tensor((rows,), "float32"),
        Sm: T.Tensor((cols,), "float32"),
        Cs: T.Tensor((rows, cols), "float32"),
    ):
        with T.Kernel(1, threads=threads) as _:
            tx = T.get_thread_binding()
            S = T.alloc_shared((rows, cols), "float32")
            T.copy(A, S)
            if lo <= tx < hi:
                f = T.alloc_fragment((rows, cols), "float32")
                row_max = T.alloc_fragment((rows,), "float32")
                col_sum = T.alloc_fragment((cols,), "float32")
                for i, j in T.Parallel(rows, cols):
                    f[i, j] = S[i, j] * 2.0
                T.reduce_max(f, row_max, dim=1)
                T.reduce_sum(f, col_sum, dim=0)
                for i in T.Parallel(rows):
                    Mx[i] = row_max[i]
                for j in T.Parallel(cols):
                    Sm[j] = col_sum[j]
                T.cumsum(f, dim=1)
                T.copy(f, Cs)

    return kern


@pytest.mark.parametrize("target", [SM80, SM90A])
@pytest.mark.parametrize(
    ("lo", "hi", "rows", "cols"), [(0, 32, 4, 4), (32, 96, 8, 32), (64, 96, 16, 8)]
)
def test_reductions_under_a_branch_of_whole_warps(target, lo, hi, rows, cols):
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    mx, sm, cs = tilelang.compile(
        reduce_in_branch(lo, hi, rows, cols), out_idx=[1, 2, 3], target=target
    )(a)
    a2 = a.astype(np.float64) * 2
    np.testing.assert_allclose(mx, a2.max(axis=1), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(sm, a2.sum(axis=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(cs, np.cumsum(a2, axis=1), rtol=1e-5, atol=1e-5)


def test_reductions_under_a_branch_of_part_of_a_warp_are_refused():
    with pytest.raises(tilelang.TileLangError) as err:
        tilelang.compile(reduce_in_branch(0, 16), out_idx=[1, 2, 3], target=SM80)
    text = str(err.value)
    assert "test_branch_reductions.py" in text, text
    assert "T.reduce under the condition on the thread index" in text, text
    assert "regions of threads that run it need sm_90 (T.ws)" in text, text


def test_a_gemm_under_a_branch_on_sm80_is_refused():
    @T.prim_func
    def gemm_in_branch(A: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=64) as _:
            tx = T.get_thread_binding()
            if tx < 32:
                S = T.alloc_shared((16, 16), "float16")
                acc = T.alloc_fragment((16, 16), "float32")
                row = T.alloc_fragment((16,), "float32")
                T.copy(A, S)
                T.reduce_sum(S, row, dim=1)
                T.clear(acc)
                T.gemm(S, S, acc)
                T.copy(acc, C)

    with pytest.raises(tilelang.TileLangError) as err:
        tilelang.compile(gemm_in_branch, out_idx=[1], target=SM80)
    text = str(err.value)
    assert "T.gemm under the condition on the thread index" in text, text
    assert "regions of threads that run it need sm_90 (T.ws)" in text, text
