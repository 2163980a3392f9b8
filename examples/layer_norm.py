"""LayerNorm: y = (x - mean) / sqrt(var + eps) * gamma + beta over each row.

Two T.reduce_sum passes over a block of rows held in a fragment: one for the
mean, one for the variance of the centred values (numerically safer than
E[x^2] - E[x]^2). float32 throughout; M is not a multiple of block_M.
"""

import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def layer_norm(M, N, block_M=4, eps=1e-5, dtype="float32"):
    @T.prim_func
    def layernorm(
        X: T.Tensor((M, N), dtype),
        gamma: T.Tensor((N,), dtype),
        beta: T.Tensor((N,), dtype),
        Y: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            x = T.alloc_fragment((block_M, N), dtype)
            centred_sq = T.alloc_fragment((block_M, N), dtype)
            g = T.alloc_fragment((N,), dtype)
            b = T.alloc_fragment((N,), dtype)
            mean = T.alloc_fragment((block_M,), dtype)
            var = T.alloc_fragment((block_M,), dtype)
            T.copy(X[bx * block_M, 0], x)
            T.copy(gamma, g)
            T.copy(beta, b)
            T.reduce_sum(x, mean, dim=1)
            for i in T.Parallel(block_M):
                mean[i] = mean[i] / N
            for i, j in T.Parallel(block_M, N):
                centred_sq[i, j] = (x[i, j] - mean[i]) * (x[i, j] - mean[i])
            T.reduce_sum(centred_sq, var, dim=1)
            for i in T.Parallel(block_M):
                var[i] = T.rsqrt(var[i] / N + eps)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = (x[i, j] - mean[i]) * var[i] * g[j] + b[j]
            T.copy(x, Y[bx * block_M, 0])

    return layernorm


def main():
    M, N = 30, 384
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((M, N)) * 3 + 1).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, N).astype(np.float32)
    beta = rng.standard_normal(N).astype(np.float32)
    y = layer_norm(M, N)(x, gamma, beta)

    xf = x.astype(np.float64)
    mean = xf.mean(axis=1, keepdims=True)
    var = xf.var(axis=1, keepdims=True)
    ref = (xf - mean) / np.sqrt(var + 1e-5) * gamma + beta
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    err = float(np.abs(y - ref).max())
    print(f"layer_norm: {M}x{N} float32 matches numpy (max abs err {err:.3g})")


if __name__ == "__main__":
    main()
