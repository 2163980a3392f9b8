"""RMSNorm: y = x / sqrt(mean(x^2) + eps) * weight, one block per block_M rows.

The squares are summed with T.reduce_sum over the row, turned into a scale with
T.rsqrt and applied together with the per-column weight in one T.Parallel nest.
float16 in and out, float32 math; M is not a multiple of block_M.
"""

import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def rms_norm(M, N, block_M=8, eps=1e-6, dtype="float16", accum_dtype="float32"):
    @T.prim_func
    def rmsnorm(
        X: T.Tensor((M, N), dtype),
        W: T.Tensor((N,), dtype),
        Y: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            x_shared = T.alloc_shared((block_M, N), dtype)
            w_shared = T.alloc_shared((N,), dtype)
            x = T.alloc_fragment((block_M, N), accum_dtype)
            sq = T.alloc_fragment((block_M, N), accum_dtype)
            scale = T.alloc_fragment((block_M,), accum_dtype)
            T.copy(X[bx * block_M, 0], x_shared)
            T.copy(W, w_shared)
            T.copy(x_shared, x)
            for i, j in T.Parallel(block_M, N):
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(sq, scale, dim=1)
            for i in T.Parallel(block_M):
                scale[i] = T.rsqrt(scale[i] / N + eps)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] * scale[i] * T.cast(w_shared[j], accum_dtype)
            T.copy(x, Y[bx * block_M, 0])

    return rmsnorm


def main():
    M, N = 53, 256
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((M, N)) * 2 + 0.5).astype(np.float16)
    w = rng.uniform(0.5, 1.5, N).astype(np.float16)
    y = rms_norm(M, N)(x, w)

    xf = x.astype(np.float64)
    ref = xf / np.sqrt((xf * xf).mean(axis=1, keepdims=True) + 1e-6) * w.astype(np.float64)
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=2e-3, atol=2e-3)
    err = float(np.abs(y - ref).max())
    print(f"rms_norm: {M}x{N} float16 matches numpy (max abs err {err:.3g})")


if __name__ == "__main__":
    main()
