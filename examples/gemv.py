"""GEMV, y = A @ x, in two styles.

* `gemv_per_thread`: each thread of a block owns one output row and accumulates
  its dot product in a register (`T.alloc_local`) with a serial loop over a
  K tile staged in shared memory; thread indices come from T.get_thread_binding.
* `gemv_tiled`: the block multiplies an (block_N, block_K) tile elementwise
  with T.Parallel and folds it into the accumulator with
  T.reduce_sum(..., clear=False).

float16 inputs, float32 accumulation; N and K are not multiples of the tiles.
"""

import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def gemv_per_thread(N, K, block_N=64, block_K=32, dtype="float16", accum_dtype="float32"):
    @T.prim_func
    def gemv(
        A: T.Tensor((N, K), dtype),
        x: T.Tensor((K,), dtype),
        y: T.Tensor((N,), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), threads=block_N) as bn:
            tn = T.get_thread_binding(0)
            A_shared = T.alloc_shared((block_N, block_K), dtype)
            x_shared = T.alloc_shared((block_K,), dtype)
            acc = T.alloc_local((1,), accum_dtype)
            T.clear(acc)
            for ko in T.serial(T.ceildiv(K, block_K)):
                T.copy(A[bn * block_N, ko * block_K], A_shared)
                T.copy(x[ko * block_K], x_shared)
                for kk in T.serial(block_K):
                    acc[0] += T.cast(A_shared[tn, kk], accum_dtype) * T.cast(
                        x_shared[kk], accum_dtype
                    )
            if bn * block_N + tn < N:
                y[bn * block_N + tn] = acc[0]

    return gemv


@tilelang.jit(out_idx=[-1])
def gemv_tiled(N, K, block_N=32, block_K=64, dtype="float16", accum_dtype="float32"):
    @T.prim_func
    def gemv(
        A: T.Tensor((N, K), dtype),
        x: T.Tensor((K,), dtype),
        y: T.Tensor((N,), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), threads=128) as bn:
            A_shared = T.alloc_shared((block_N, block_K), dtype)
            x_shared = T.alloc_shared((block_K,), dtype)
            prod = T.alloc_fragment((block_N, block_K), accum_dtype)
            acc = T.alloc_fragment((block_N,), accum_dtype)
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[bn * block_N, ko * block_K], A_shared)
                T.copy(x[ko * block_K], x_shared)
                for i, k in T.Parallel(block_N, block_K):
                    prod[i, k] = T.cast(A_shared[i, k], accum_dtype) * T.cast(
                        x_shared[k], accum_dtype
                    )
                T.reduce_sum(prod, acc, dim=1, clear=False)
            T.copy(acc, y[bn * block_N])

    return gemv


def main():
    N, K = 200, 300
    rng = np.random.default_rng(0)
    a = rng.standard_normal((N, K)).astype(np.float16)
    x = rng.standard_normal(K).astype(np.float16)
    ref = a.astype(np.float64) @ x.astype(np.float64)
    for name, factory in (("per-thread serial", gemv_per_thread), ("tiled reduce_sum", gemv_tiled)):
        y = factory(N, K)(a, x)
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-3)
        err = float(np.abs(y - ref).max())
        print(f"gemv ({name}): {N}x{K} float16 -> float32 matches numpy (max abs err {err:.3g})")


if __name__ == "__main__":
    main()
