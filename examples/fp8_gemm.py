"""fp8 GEMM with per-tensor scales, as torch._scaled_mm computes it:
C = (A @ B^T) * scale_a * scale_b, A [M, K] and B [N, K] in float8_e4m3fn.

Both operands keep K contiguous (B is stored as [N, K] and multiplied with
transpose_B=True), the layout 8-bit tensor-core gemms read fastest and the only one
Hopper's wgmma takes for fp8 (on sm_90a this T.gemm runs on wgmma m64nNk32). Each
block stages a (block_M, block_K) tile of A and a (block_N, block_K) tile of B
in shared memory through a T.Pipelined loop and accumulates their product in a
float32 fragment; the fp8 products are exact and only their sum rounds. The
epilogue multiplies by the two scales (float32 tensors of one element, so one
compiled kernel serves every scale) and casts to the output dtype.

The inputs are quantized from float32 the way an fp8 training step does it:
scale = max|x| / 448 per tensor, q = float8_e4m3fn(x / scale). The reference is
the float64 product of the same fp8 values, so the check measures the kernel's
accumulation and output rounding, not the quantization error.
"""

import ml_dtypes
import numpy as np
import tilelang
import tilelang.language as T

FP8_MAX = 448.0  # the largest float8_e4m3fn value


@tilelang.jit(out_idx=[-1])
def fp8_scaled_mm(
    M,
    N,
    K,
    out_dtype="float16",
    block_M=64,
    block_N=64,
    block_K=64,
    num_stages=2,
    threads=128,
    panel=0,
    cluster=1,
    workers=0,
):
    """cluster > 1 launches clusters of that many blocks along N (sm_90): they share A's
    tile, which TMA multicasts (one L2 read per cluster). panel (T.use_swizzle) remaps
    the blocks and so turns that off: use one or the other.

    workers > 0 makes the kernel persistent: `workers` blocks (one per SM) loop over the
    tiles (T.Persistent, in panels of `panel` rows of tiles, 8 if 0), and the output
    goes through a shared tile and a TMA store. On sm_90a the K loop is still
    warp-specialized, its producer warpgroup loading the next tile's first stages while
    the consumers run the epilogue."""
    if cluster > 1 and panel:
        raise ValueError(
            f"fp8_scaled_mm: cluster={cluster} multicasts A only in launch order; "
            f"panel={panel} reorders the blocks, pass panel=0"
        )
    if workers and cluster > 1:
        raise ValueError(
            f"fp8_scaled_mm: a persistent kernel (workers={workers}) needs cluster=1, got "
            f"cluster={cluster}"
        )
    in_dtype = "float8_e4m3fn"
    accum_dtype = "float32"

    @T.macro
    def tile(A, B, scale_a, scale_b, A_shared, B_shared, C_local, C_out, bx, by):
        """C_out = the scaled product of tile (by, bx)."""
        T.clear(C_local)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
            T.copy(A[by * block_M, k * block_K], A_shared)
            T.copy(B[bx * block_N, k * block_K], B_shared)
            T.gemm(A_shared, B_shared, C_local, transpose_B=True)
        # Dequantize once, after the whole K loop: (sa * a) . (sb * b) = sa * sb * (a . b).
        for i, j in T.Parallel(block_M, block_N):
            C_out[i, j] = C_local[i, j] * (scale_a[0] * scale_b[0])

    if workers:

        @T.prim_func
        def persistent_scaled_mm(
            A: T.Tensor((M, K), in_dtype),
            B: T.Tensor((N, K), in_dtype),
            scale_a: T.Tensor((1,), accum_dtype),
            scale_b: T.Tensor((1,), accum_dtype),
            C: T.Tensor((M, N), out_dtype),
        ):
            with T.Kernel(workers, threads=threads) as pid:
                A_shared = T.alloc_shared((block_M, block_K), in_dtype)
                B_shared = T.alloc_shared((block_N, block_K), in_dtype)
                C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
                C_out = T.alloc_fragment((block_M, block_N), out_dtype)
                # The pipeline's tiles stay in use across tiles: the output gets its own.
                C_shared = T.alloc_shared((block_M, block_N), out_dtype)
                tiles = [T.ceildiv(M, block_M), T.ceildiv(N, block_N)]
                for by, bx in T.Persistent(tiles, workers, pid, panel or 8):
                    tile(A, B, scale_a, scale_b, A_shared, B_shared, C_local, C_out, bx, by)
                    T.copy(C_out, C_shared)
                    T.copy(C_shared, C[by * block_M, bx * block_N])

        return persistent_scaled_mm

    @T.prim_func
    def scaled_mm(
        A: T.Tensor((M, K), in_dtype),
        B: T.Tensor((N, K), in_dtype),
        scale_a: T.Tensor((1,), accum_dtype),
        scale_b: T.Tensor((1,), accum_dtype),
        C: T.Tensor((M, N), out_dtype),
    ):
        with T.Kernel(
            T.ceildiv(N, block_N),
            T.ceildiv(M, block_M),
            threads=threads,
            cluster_dims=(cluster, 1, 1) if cluster > 1 else None,
        ) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), in_dtype)
            B_shared = T.alloc_shared((block_N, block_K), in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            C_out = T.alloc_fragment((block_M, block_N), out_dtype)
            if panel:  # neighbouring blocks share tiles of A and B in L2 (bench/fp8_gemm_cuda.py)
                T.use_swizzle(panel)
            tile(A, B, scale_a, scale_b, A_shared, B_shared, C_local, C_out, bx, by)
            T.copy(C_out, C[by * block_M, bx * block_N])

    return scaled_mm


def quantize_per_tensor(x):
    """(fp8 values, float32 scale) with x ~= fp8 * scale, as a per-tensor fp8 recipe does."""
    scale = np.float32(max(float(np.abs(x).max()), 1e-12) / FP8_MAX)
    q = np.clip(x / scale, -FP8_MAX, FP8_MAX).astype(ml_dtypes.float8_e4m3fn)
    return q, np.array([scale], dtype=np.float32)


def reference(a, b, scale_a, scale_b):
    """The float64 product of the fp8 operands, scaled, and the same for |a| and |b|
    (the scale of the accumulation error)."""
    af, bf = a.astype(np.float64), b.astype(np.float64)
    scale = float(scale_a[0]) * float(scale_b[0])
    return (af @ bf.T) * scale, (np.abs(af) @ np.abs(bf).T) * scale


def check(c, ref, abs_ref):
    """Tensor cores add fp8 products with a little less precision than float32 (up to
    about 2^-9 of sum |a.b|); a float16 output adds half an ulp of its own."""
    tol = 2.0**-9 * abs_ref + 1e-30
    if c.dtype == np.float16:
        tol = tol + 2.0**-11 * np.abs(ref)
    err = np.abs(c.astype(np.float64) - ref)
    assert (err <= tol).all(), f"max abs err {err.max():.3g}, worst excess {(err - tol).max():.3g}"
    return float(err.max())


def main():
    M, N, K = 120, 72, 160
    rng = np.random.default_rng(0)
    a, scale_a = quantize_per_tensor(rng.standard_normal((M, K)).astype(np.float32) * 3)
    b, scale_b = quantize_per_tensor(rng.standard_normal((N, K)).astype(np.float32) * 0.2)
    ref, abs_ref = reference(a, b, scale_a, scale_b)
    for out_dtype in ("float16", "float32"):
        c = fp8_scaled_mm(M, N, K, out_dtype=out_dtype)(a, b, scale_a, scale_b)
        assert c.dtype == np.dtype(out_dtype), c.dtype
        err = check(c, ref, abs_ref)
        print(
            f"fp8 scaled gemm: {M}x{N}x{K} float8_e4m3fn -> {out_dtype} matches numpy "
            f"(per-tensor scales {scale_a[0]:.3g}, {scale_b[0]:.3g}; max abs err {err:.3g})"
        )
    # Persistent: 3 blocks take the 2 x 3 tiles of 64 x 32 in turn.
    c = fp8_scaled_mm(M, N, K, out_dtype="float16", block_N=32, workers=3)(a, b, scale_a, scale_b)
    err = check(c, ref, abs_ref)
    print(f"fp8 scaled gemm, persistent (3 blocks): matches numpy (max abs err {err:.3g})")


if __name__ == "__main__":
    main()
