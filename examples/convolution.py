"""2-D convolution (NHWC image, HWCF filter) as an implicit GEMM.

The output is the GEMM  out[N*OH*OW, F] = im2col(data)[N*OH*OW, KH*KW*C] @ filter[KH*KW*C, F].
The im2col matrix is never built in memory: T.im2col gathers one
(block_M, block_K) tile of it straight from the image into shared memory
(stride, dilation and zero padding included), and the filter and output are
viewed as 2-D matrices with T.Tensor(shape, dtype, buffer.data). Checked against
a direct numpy convolution, with a stride-2 padded case and a dilated one;
the GEMM sizes are not multiples of the tiles.
"""

import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[2])
def convolution(N, C, H, W, F, K, S, D, P, block_M=64, block_N=32, block_K=32):
    KH = KW = K
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1
    dtype = "float16"
    accum_dtype = "float32"

    @T.prim_func
    def conv(
        data: T.Tensor((N, H, W, C), dtype),
        kernel: T.Tensor((KH, KW, C, F), dtype),
        out: T.Tensor((N, OH, OW, F), dtype),
    ):
        with T.Kernel(T.ceildiv(F, block_N), T.ceildiv(N * OH * OW, block_M), threads=128) as (
            bx,
            by,
        ):
            data_shared = T.alloc_shared((block_M, block_K), dtype)
            kernel_shared = T.alloc_shared((block_K, block_N), dtype)
            out_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            out_shared = T.alloc_shared((block_M, block_N), dtype)

            kernel_flat = T.Tensor((KH * KW * C, F), dtype, kernel.data)
            out_flat = T.Tensor((N * OH * OW, F), dtype, out.data)

            T.clear(out_local)
            for k_iter in T.Pipelined(T.ceildiv(KH * KW * C, block_K), num_stages=2):
                T.c2d_im2col(data, data_shared, by, k_iter, KH, S, D, P)
                T.copy(kernel_flat[k_iter * block_K, bx * block_N], kernel_shared)
                T.gemm(data_shared, kernel_shared, out_local)
            T.copy(out_local, out_shared)
            T.copy(out_shared, out_flat[by * block_M, bx * block_N])

    return conv


def reference(data, weight, S, D, P):
    n, h, w, _ = data.shape
    k, _, _, f = weight.shape
    oh = (h + 2 * P - D * (k - 1) - 1) // S + 1
    ow = (w + 2 * P - D * (k - 1) - 1) // S + 1
    padded = np.pad(data.astype(np.float64), ((0, 0), (P, P), (P, P), (0, 0)))
    out = np.zeros((n, oh, ow, f))
    for kh in range(k):
        for kw in range(k):
            rows = padded[:, kh * D : kh * D + S * (oh - 1) + 1 : S]
            patch = rows[:, :, kw * D : kw * D + S * (ow - 1) + 1 : S]
            out += patch @ weight[kh, kw].astype(np.float64)
    return out


def main():
    rng = np.random.default_rng(0)
    # N, C, H, W, F, K, S, D, P
    cases = ((2, 12, 13, 11, 40, 3, 2, 1, 1), (1, 8, 12, 12, 24, 3, 1, 2, 2))
    for N, C, H, W, F, K, S, D, P in cases:
        data = rng.standard_normal((N, H, W, C)).astype(np.float16)
        weight = (rng.standard_normal((K, K, C, F)) / np.sqrt(K * K * C)).astype(np.float16)
        out = convolution(N, C, H, W, F, K, S, D, P)(data, weight)
        ref = reference(data, weight, S, D, P)
        assert out.shape == ref.shape, (out.shape, ref.shape)
        np.testing.assert_allclose(out.astype(np.float64), ref, rtol=1e-2, atol=1e-2)
        err = float(np.abs(out - ref).max())
        print(
            f"conv2d via im2col: N={N} H={H} W={W} C={C} -> F={F}, {K}x{K} stride {S} "
            f"dilation {D} pad {P} matches numpy (max abs err {err:.3g})"
        )


if __name__ == "__main__":
    main()
