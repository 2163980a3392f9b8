"""Row softmax, two ways.

* `softmax_rows`: a block loads block_M whole rows into a fragment, takes the
  row maximum with T.reduce_max, exponentiates with exp2 (x * log2(e) folded into
  one multiply-add, as TileLang's kernels do) and divides by T.reduce_sum.
* `softmax_online`: rows too long for one tile are streamed in column tiles
  with an online (running max, rescaled running sum) first pass and a second
  pass that writes the normalized values. Columns past the end of the tensor
  read -inf through T.annotate_safe_value, so they add nothing.

Both run on float16 input with float32 math, M and N not multiples of the tiles.
"""

import math

import numpy as np
import tilelang
import tilelang.language as T

LOG2E = math.log2(math.e)


@tilelang.jit(out_idx=[-1])
def softmax_rows(M, N, block_M=8, dtype="float16", accum_dtype="float32"):
    @T.prim_func
    def softmax(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            x = T.alloc_fragment((block_M, N), accum_dtype)
            row_max = T.alloc_fragment((block_M,), accum_dtype)
            row_sum = T.alloc_fragment((block_M,), accum_dtype)
            T.copy(X[bx * block_M, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.exp2(x[i, j] * LOG2E - row_max[i] * LOG2E)
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, Y[bx * block_M, 0])

    return softmax


@tilelang.jit(out_idx=[-1])
def softmax_online(M, N, block_M=4, block_N=64, dtype="float16", accum_dtype="float32"):
    @T.prim_func
    def softmax(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            x = T.alloc_fragment((block_M, block_N), accum_dtype)
            tile_sum = T.alloc_fragment((block_M,), accum_dtype)
            row_max = T.alloc_fragment((block_M,), accum_dtype)
            prev_max = T.alloc_fragment((block_M,), accum_dtype)
            row_sum = T.alloc_fragment((block_M,), accum_dtype)
            T.annotate_safe_value(X, -T.infinity(accum_dtype))
            T.fill(row_max, -T.infinity(accum_dtype))
            T.fill(row_sum, 0)
            # Pass 1: running maximum and the sum of exponentials, rescaled whenever
            # the maximum grows.
            for k in T.Pipelined(T.ceildiv(N, block_N), num_stages=1):
                T.copy(X[bx * block_M, k * block_N], x)
                T.copy(row_max, prev_max)
                T.reduce_max(x, row_max, dim=1, clear=False)
                for i, j in T.Parallel(block_M, block_N):
                    x[i, j] = T.exp2(x[i, j] * LOG2E - row_max[i] * LOG2E)
                T.reduce_sum(x, tile_sum, dim=1)
                for i in T.Parallel(block_M):
                    row_sum[i] = (
                        row_sum[i] * T.exp2(prev_max[i] * LOG2E - row_max[i] * LOG2E) + tile_sum[i]
                    )
            # Pass 2: normalize.
            for k in T.Pipelined(T.ceildiv(N, block_N), num_stages=1):
                T.copy(X[bx * block_M, k * block_N], x)
                for i, j in T.Parallel(block_M, block_N):
                    x[i, j] = T.exp2(x[i, j] * LOG2E - row_max[i] * LOG2E) / row_sum[i]
                T.copy(x, Y[bx * block_M, k * block_N])

    return softmax


def reference(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main():
    rng = np.random.default_rng(0)
    for name, factory, (M, N) in (
        ("whole rows", softmax_rows, (37, 200)),
        ("online, column tiles", softmax_online, (19, 300)),
    ):
        x = (rng.standard_normal((M, N)) * 3).astype(np.float16)
        y = factory(M, N)(x)
        ref = reference(x)
        np.testing.assert_allclose(y.astype(np.float64), ref, rtol=5e-3, atol=1e-4)
        np.testing.assert_allclose(y.astype(np.float64).sum(axis=1), 1.0, rtol=2e-2)
        err = float(np.abs(y - ref).max())
        print(f"softmax ({name}): {M}x{N} float16 matches numpy (max abs err {err:.3g})")


if __name__ == "__main__":
    main()
