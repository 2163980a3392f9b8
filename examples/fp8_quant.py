"""Per-token float8 quantization, as used before an fp8 GEMM.

For every row (token) x of X: scale = max(|x|) / 448 (448 is the largest
float8_e4m3fn value), q = float8_e4m3fn(clamp(x / scale, -448, 448)). The kernel
returns Q and the per-row scales; the row maximum is T.reduce_absmax.

The check is bit-exact: numpy divides the same float32 values by the same float32
scale and casts with ml_dtypes' float8_e4m3fn (round to nearest even), and the
fp8 bytes must be identical. Dequantized values are also compared with X.
"""

import ml_dtypes
import numpy as np
import tilelang
import tilelang.language as T

FP8_MAX = 448.0


@tilelang.jit(out_idx=[-2, -1])
def per_token_quant(M, N, block_M=8, in_dtype="bfloat16", eps=1e-4):
    @T.prim_func
    def quant(
        X: T.Tensor((M, N), in_dtype),
        Q: T.Tensor((M, N), "float8_e4m3fn"),
        S: T.Tensor((M,), "float32"),
    ):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            q = T.alloc_fragment((block_M, N), "float8_e4m3fn")
            scale = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            T.reduce_absmax(x, scale, dim=1)
            for i in T.Parallel(block_M):
                scale[i] = T.max(scale[i], eps) / FP8_MAX
            for i, j in T.Parallel(block_M, N):
                q[i, j] = T.cast(T.clamp(x[i, j] / scale[i], -FP8_MAX, FP8_MAX), "float8_e4m3fn")
            T.copy(q, Q[bx * block_M, 0])
            T.copy(scale, S[bx * block_M])

    return quant


def main():
    M, N = 45, 160
    rng = np.random.default_rng(0)
    # Rows of very different magnitudes, as activations have.
    x = (rng.standard_normal((M, N)) * rng.uniform(0.01, 50.0, (M, 1))).astype(ml_dtypes.bfloat16)
    x[3] = 0  # an all-zero token takes the eps scale
    q, s = per_token_quant(M, N)(x)

    xf = x.astype(np.float32)
    ref_scale = np.maximum(np.abs(xf).max(axis=1), np.float32(1e-4)) / np.float32(FP8_MAX)
    np.testing.assert_array_equal(s, ref_scale)
    scaled = np.clip(xf / s[:, None], -FP8_MAX, FP8_MAX).astype(np.float32)
    ref_q = scaled.astype(ml_dtypes.float8_e4m3fn)
    q_bytes, ref_bytes = q.view(np.uint8), ref_q.view(np.uint8)
    mismatched = int((q_bytes != ref_bytes).sum())
    assert mismatched == 0, f"{mismatched} fp8 values differ from ml_dtypes' cast"

    dequant = q.astype(np.float32) * s[:, None]
    rel = np.abs(dequant - xf).max(axis=1) / np.maximum(np.abs(xf).max(axis=1), 1e-4)
    assert rel.max() <= 2.0**-4, rel.max()  # e4m3 keeps 3 mantissa bits
    print(
        f"fp8 per-token quant: {M}x{N} bfloat16 -> float8_e4m3fn matches numpy bit-exactly "
        f"(ml_dtypes cast; max relative dequant error {rel.max():.3g})"
    )


if __name__ == "__main__":
    main()
