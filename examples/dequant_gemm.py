"""GEMM with int4 weights (weight-only quantization): C = A @ dequant(B)^T.

A is float16 [M, K]. The weight W [N, K] is stored as signed 4-bit integers, two
per byte along K (B [N, K // 2] uint8: W[n, 2c] in the low nibble of B[n, c],
W[n, 2c + 1] in the high nibble), with one float16 scale per group of group_size
consecutive K values of a row (Scales [N, K // group_size]), so that
dequant(B)[n, k] = int4(W[n, k]) * Scales[n, k // group_size].

Each block keeps the weight tile packed on its way from global memory (half the
bytes of float16) and unpacks it in shared memory: a T.Parallel loop over the
(block_N, block_K) tile picks the byte j // 2, shifts the nibble j % 2 down,
sign-extends it with (x ^ 8) - 8 and multiplies by its group's scale, staged in
shared memory with the tile. Then T.gemm multiplies the float16 tiles with
transpose_B=True into a float32 accumulator, as an ordinary GEMM does.

M and N are not multiples of the tiles: copies pad the tails with zeros, a zero
byte decodes to 0 and the padded scales are 0, so the tails add nothing.
"""

import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def int4_gemm(
    M,
    N,
    K,
    group_size=128,
    out_dtype="float16",
    block_M=64,
    block_N=64,
    block_K=64,
    num_stages=2,
    threads=128,
):
    if K % group_size != 0:
        raise ValueError(f"K must be a multiple of group_size={group_size}, got K={K}")
    if group_size % block_K != 0 and block_K % group_size != 0:
        raise ValueError(
            f"block_K must divide group_size or be a multiple of it, "
            f"got block_K={block_K} and group_size={group_size}"
        )
    dtype = "float16"
    accum_dtype = "float32"
    groups = K // group_size
    # Scales a K tile needs: one when the tile lies inside a group, else one per group.
    tile_groups = max(1, block_K // group_size)

    @T.prim_func
    def gemm(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((N, K // 2), "uint8"),
        Scales: T.Tensor((N, groups), dtype),
        C: T.Tensor((M, N), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_packed = T.alloc_shared((block_N, block_K // 2), "uint8")
            S_shared = T.alloc_shared((block_N, tile_groups), dtype)
            B_shared = T.alloc_shared((block_N, block_K), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * (block_K // 2)], B_packed)
                T.copy(Scales[bx * block_N, k * block_K // group_size], S_shared)
                for i, j in T.Parallel(block_N, block_K):
                    nibble = (T.cast(B_packed[i, j // 2], "int32") >> (4 * (j % 2))) & 15
                    w = (nibble ^ 8) - 8  # two's complement int4 -> int
                    B_shared[i, j] = T.cast(w, dtype) * S_shared[i, j // group_size]
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm


def quantize_int4(w, group_size):
    """Symmetric per-group int4 quantization of w [N, K]: (packed uint8 [N, K // 2],
    float16 scales [N, K // group_size], the int4 values as int8 [N, K])."""
    n, k = w.shape
    groups = w.reshape(n, k // group_size, group_size)
    scales = (np.abs(groups).max(axis=-1) / 7).astype(np.float16)
    safe = np.maximum(scales.astype(np.float32), 1e-8)[..., None]
    q = np.clip(np.rint(groups / safe), -8, 7).astype(np.int8).reshape(n, k)
    return pack_int4(q), scales, q


def pack_int4(q):
    """int4 values (int8 [N, K], -8..7) two per byte along K, the even one low."""
    nibbles = q.astype(np.uint8) & 0xF
    return (nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)).astype(np.uint8)


def dequantize(q, scales, group_size):
    """float16 weights from int4 values and per-group scales, each product rounded to
    float16 as the kernel rounds it (the tensor cores take float16 operands)."""
    return q.astype(np.float16) * np.repeat(scales, group_size, axis=1)


def main():
    M, N, K, group_size = 100, 72, 256, 64
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    w = rng.standard_normal((N, K)).astype(np.float32)
    packed, scales, q = quantize_int4(w, group_size)
    ref = a.astype(np.float64) @ dequantize(q, scales, group_size).astype(np.float64).T
    # block_K below and above the group size (a tile inside one group; two groups a tile).
    for out_dtype, block_K in (("float16", 32), ("float32", 128)):
        kernel = int4_gemm(M, N, K, group_size, out_dtype, block_K=block_K)
        c = kernel(a, packed, scales)
        # float32 accumulation; a float16 output adds half an ulp of its own.
        rtol = 1e-3 if out_dtype == "float16" else 1e-5
        np.testing.assert_allclose(c.astype(np.float64), ref, rtol=rtol, atol=1e-3)
        err = float(np.abs(c - ref).max())
        print(
            f"int4 dequant gemm: {M}x{N}x{K} float16 x int4 (group {group_size}, "
            f"block_K {block_K}) -> {out_dtype} matches numpy (max abs err {err:.3g})"
        )


if __name__ == "__main__":
    main()
