"""Skinny GEMM: C = A @ B^T with few rows (M = 16..128) and a large weight B, the shape
of a linear layer at small batch. B is stored as torch.nn.functional.linear keeps it,
(N, K) with K contiguous; `b_layout="kn"` takes a (K, N) B instead (C = A @ B).

At M = 16, N = K = 8192 the kernel reads 128 MiB of B and does almost no math, so it
is bound by memory bandwidth: what matters is that enough blocks stream B at once
(one per SM is plenty when each keeps several tiles in flight) and that the pipeline
is deep. Hence the knobs:

* `block_M` matches M (16, 32, 64, 128); `block_N` (64-256) sets the number of blocks
  along N;
* `block_K` and `num_stages` set how many bytes of B each block has in flight
  (T.Pipelined: cp.async, or TMA + mbarriers on sm_90);
* `split_k` cuts K into slices run by a third grid dimension, for shapes where
  N / block_N gives too few blocks; each slice writes float32 partial sums and a
  second small kernel adds them and rounds to the output dtype;
* `swap_ab` computes C^T = B @ A^T instead, so that N (not the tiny M) is the gemm's
  row dimension: on sm_90a a 16-row tile cannot use wgmma (its tiles have 64 rows)
  and takes mma.sync, while the swapped tile (block_N rows, block_M columns) can;
* `cluster` > 1 launches the blocks in thread block clusters of that many (sm_90),
  along N (`cluster_axis="n"`) or along M (`"m"`). The blocks of a cluster along N
  read the same A tile, those of a cluster along M the same B tile: the compiler has
  each block load a slice of the shared tile and multicast it to the others (TMA
  multicast), so that tile is read from L2 once per cluster instead of once per
  block. The grid's extent along that axis must be a multiple of it. Along M with
  block_M = M / 2 is the layout cuBLAS picks on the H200 for M = 128 (two blocks of
  64 rows share each 128-row B tile). A pair `cluster=(cn, cm)` makes 2-D clusters,
  cn blocks along N by cm along M: a row of the cluster shares its A tile and a
  column its B tile, each multicast among those blocks only. A cluster also makes
  its blocks run at the same time, so that a tile they share is read from DRAM once
  even without multicast (pass config `tl.disable_tma_multicast`, the `multicast`
  entry of `skinny_matmul`'s config): for M = 128 on the H200 that is the faster of
  the two, as multicast makes every block wait for the slowest of its cluster.

Every variant is checked against numpy in float64, with M, N and K that are not
multiples of the tiles.
"""

import ml_dtypes
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def skinny_gemm(
    M,
    N,
    K,
    block_M=16,
    block_N=64,
    block_K=128,
    num_stages=4,
    threads=128,
    split_k=1,
    swap_ab=False,
    b_layout="nk",
    dtype="bfloat16",
    accum_dtype="float32",
    cluster=1,
    cluster_axis="n",
):
    if b_layout not in ("nk", "kn"):
        raise ValueError(f"skinny_gemm: b_layout must be 'nk' or 'kn', got {b_layout!r}")
    if split_k < 1:
        raise ValueError(f"skinny_gemm: split_k must be at least 1, got {split_k}")
    if cluster_axis not in ("n", "m"):
        raise ValueError(f"skinny_gemm: cluster_axis must be 'n' or 'm', got {cluster_axis!r}")
    cluster_dims = None
    if isinstance(cluster, (tuple, list)):
        if len(cluster) != 2:
            raise ValueError(f"skinny_gemm: a 2-D cluster is (along_n, along_m), got {cluster!r}")
        cluster_dims = (cluster[0], cluster[1], 1)
    elif cluster > 1:
        cluster_dims = (cluster, 1, 1) if cluster_axis == "n" else (1, cluster, 1)
    nk = b_layout == "nk"
    # K tiles per slice; the slices' tiles past K read zeros.
    tiles_per_split = T.ceildiv(T.ceildiv(K, block_K), split_k)
    # One slice writes C in the output dtype; several write float32 partials.
    out_shape, out_dtype = ((M, N), dtype) if split_k == 1 else ((split_k, M, N), accum_dtype)

    @T.prim_func
    def gemm(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((N, K) if nk else (K, N), dtype),
        C: T.Tensor(out_shape, out_dtype),
    ):
        with T.Kernel(
            T.ceildiv(N, block_N),
            T.ceildiv(M, block_M),
            split_k,
            threads=threads,
            cluster_dims=cluster_dims,
        ) as (
            bx,
            by,
            bz,
        ):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_N, block_K) if nk else (block_K, block_N), dtype)
            # The accumulator is C's tile, or C^T's when swapped.
            acc = T.alloc_fragment(
                (block_N, block_M) if swap_ab else (block_M, block_N), accum_dtype
            )
            T.clear(acc)
            for ko in T.Pipelined(tiles_per_split, num_stages=num_stages):
                k = (bz * tiles_per_split + ko) * block_K
                T.copy(A[by * block_M, k], A_shared)
                if nk:
                    T.copy(B[bx * block_N, k], B_shared)
                else:
                    T.copy(B[k, bx * block_N], B_shared)
                if swap_ab:  # acc = B_tile @ A_tile^T
                    T.gemm(B_shared, A_shared, acc, transpose_A=not nk, transpose_B=True)
                else:  # acc = A_tile @ B_tile^T
                    T.gemm(A_shared, B_shared, acc, transpose_B=nk)
            if swap_ab:
                for i, j in T.Parallel(block_N, block_M):
                    if split_k == 1:
                        C[by * block_M + j, bx * block_N + i] = acc[i, j]
                    else:
                        C[bz, by * block_M + j, bx * block_N + i] = acc[i, j]
            elif split_k == 1:
                T.copy(acc, C[by * block_M, bx * block_N])
            else:
                T.copy(acc, C[bz, by * block_M, bx * block_N])

    return gemm


@tilelang.jit(out_idx=[-1])
def splitk_reduce(split_k, M, N, block_N=1024, dtype="bfloat16", accum_dtype="float32"):
    """C[m, n] = sum over s of P[s, m, n], rounded once to `dtype`."""

    @T.prim_func
    def reduce(P: T.Tensor((split_k, M, N), accum_dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), M, threads=block_N // 8) as (bx, m):
            part = T.alloc_fragment((block_N,), accum_dtype)
            acc = T.alloc_fragment((block_N,), accum_dtype)
            T.clear(acc)
            for s in T.serial(split_k):
                T.copy(P[s, m, bx * block_N], part)  # 16-byte loads
                for j in T.Parallel(block_N):
                    acc[j] += part[j]
            T.copy(acc, C[m, bx * block_N])

    return reduce


def skinny_matmul(M, N, K, config, dtype="bfloat16", b_layout="nk", target=None):
    """The callable C = A @ B^T (or A @ B for b_layout "kn") for one config
    (block_M, block_N, block_K, num_stages, threads, split_k, swap_ab[, cluster[, along_m[,
    multicast]]]) (along_m: 1 clusters the blocks along M, 0 or left out along N;
    multicast: 0 keeps each block's own loads in a cluster, pass config
    tl.disable_tma_multicast): one kernel, or with split_k > 1 the gemm and the
    reduction of its slices. `target` None compiles for the default target through the
    factories' own caches."""
    bM, bN, bK, stages, threads, split_k, swap, *rest = config
    cluster = rest[0] if rest else 1
    cluster_axis = "m" if len(rest) > 1 and rest[1] else "n"
    multicast = rest[2] if len(rest) > 2 else 1

    def build(factory, *args, **kwargs):
        if target is None and multicast:
            return factory(*args, **kwargs)
        return tilelang.compile(
            factory.get_tir(*args, **kwargs),
            out_idx=[-1],
            target=target or "auto",
            pass_configs={"tl.disable_tma_multicast": not multicast},
        )

    gemm = build(
        skinny_gemm,
        M,
        N,
        K,
        bM,
        bN,
        bK,
        stages,
        threads,
        split_k,
        swap,
        b_layout,
        dtype,
        cluster=cluster,
        cluster_axis=cluster_axis,
    )
    if split_k == 1:
        return gemm
    reduce = build(splitk_reduce, split_k, M, N, dtype=dtype)
    return lambda a, b: reduce(gemm(a, b))


def main():
    rng = np.random.default_rng(0)
    # (M, N, K, config, dtype, b_layout); the tiles do not divide N or K.
    cases = [
        (16, 200, 136, (16, 64, 64, 3, 128, 1, False), "bfloat16", "nk"),
        (16, 200, 136, (16, 64, 64, 3, 128, 1, True), "float16", "nk"),
        (16, 200, 272, (16, 64, 32, 2, 128, 3, False), "bfloat16", "kn"),
        (32, 144, 272, (32, 64, 64, 4, 128, 2, True), "float16", "kn"),
        (64, 128, 160, (64, 64, 64, 3, 128, 2, False), "bfloat16", "nk"),
    ]
    np_dtypes = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}
    for M, N, K, config, dtype, b_layout in cases:
        a = rng.standard_normal((M, K)).astype(np_dtypes[dtype])
        b_shape = (N, K) if b_layout == "nk" else (K, N)
        b = rng.standard_normal(b_shape).astype(np_dtypes[dtype])
        bf = b.astype(np.float64)
        ref = a.astype(np.float64) @ (bf.T if b_layout == "nk" else bf)
        c = skinny_matmul(M, N, K, config, dtype, b_layout)(a, b)
        assert c.dtype == np_dtypes[dtype] and c.shape == (M, N)
        err = np.abs(c.astype(np.float64) - ref)
        # The float32 sum is rounded once to the output dtype.
        eps = 2.0**-8 if dtype == "bfloat16" else 2.0**-11
        assert (err <= eps * np.abs(ref) + 1e-3).all(), float(err.max())
        print(
            f"skinny gemm {M}x{N}x{K} {dtype} B {b_layout}, config {config}: "
            f"matches numpy (max abs err {float(err.max()):.3g})"
        )


if __name__ == "__main__":
    main()
