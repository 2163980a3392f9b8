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

`skinny_gemm_streamk` spreads the work over every SM instead (stream-K): at M = 128 the
tiled grid has 128 blocks, and an H200 has 132 SMs. Its `pairs` pairs of blocks (one
block per 64-row half of M) each take an equal run of the column tiles' K steps laid
end to end, so a column tile may be shared by two or three pairs. Every contributor but
the last writes its float32 partial sums to a workspace and counts itself in the tile's
counter (a release); the last waits for the count (an acquire), adds the partials,
stores C and resets the counter for the next call. A pair runs the start of its last
tile first and the end of its first tile last, so it only ever waits for lower pairs,
which started before it.

Every variant is checked against numpy in float64, with M, N and K that are not
multiples of the tiles (the stream-K kernel needs whole tiles).
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


def streamk_plan(N, K, block_N, block_K, pairs):
    """(column tiles, K steps per tile, K steps in all, partial slots per tile) of a
    stream-K split over `pairs`, or a ValueError naming what does not fit."""
    if N % block_N or K % block_K:
        raise ValueError(
            f"skinny_gemm_streamk: N and K must be multiples of block_N and block_K; got N={N}, "
            f"K={K}, block_N={block_N}, block_K={block_K}"
        )
    tiles, steps = N // block_N, K // block_K
    if not tiles <= pairs:
        raise ValueError(
            f"skinny_gemm_streamk: pairs must be at least the {tiles} column tiles (each pair's "
            f"run of K steps then spans at most two tiles); got pairs={pairs}"
        )
    total = tiles * steps

    def pair_of(step):  # the pair whose run holds K step `step` (of all tiles')
        return ((step + 1) * pairs - 1) // total

    slots = max(pair_of((t + 1) * steps - 1) - pair_of(t * steps) for t in range(tiles))
    return tiles, steps, total, max(slots, 1)


@tilelang.jit(out_idx=[2])
def skinny_gemm_streamk(
    M,
    N,
    K,
    block_N=128,
    block_K=64,
    num_stages=8,
    pairs=66,
    threads=128,
    dtype="bfloat16",
    accum_dtype="float32",
):
    """C = A @ B^T, B stored (N, K), as stream-K over 2 * pairs blocks (the module's
    docstring): the kernel takes a float32 workspace W (tiles, slots, M, block_N) and
    int32 counters F (tiles, 2) that start at zero and are zero again after each call,
    so one pair of them serves calls made one after another (not at once on two
    streams). M is two 64-row halves (wgmma's tile); 2 * pairs blocks must fit on the
    GPU at once (pairs <= SMs / 2)."""
    if M % 2 or M // 2 < 64 or M // 2 % 64:
        raise ValueError(
            f"skinny_gemm_streamk: M must be two halves of a multiple of 64 rows; got M={M}"
        )
    block_M = M // 2
    tiles, steps, total, slots = streamk_plan(N, K, block_N, block_K, pairs)

    @T.prim_func
    def gemm(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((N, K), dtype),
        C: T.Tensor((M, N), dtype),
        W: T.Tensor((tiles, slots, M, block_N), accum_dtype),
        F: T.Tensor((tiles, 2), "int32"),
    ):
        with T.Kernel(2 * pairs, threads=threads) as pid:
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_N, block_K), dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype)
            acc = T.alloc_fragment((block_M, block_N), accum_dtype)
            part = T.alloc_fragment((block_M, block_N), accum_dtype)
            # Two rounds per block: its part of its last tile, then of its first.
            for seg, w in T.Persistent([2, 2 * pairs], 2 * pairs, pid, 1):
                p, h = w // 2, w % 2  # the pair, and the block's half of M
                start, end = p * total // pairs, (p + 1) * total // pairs
                first_tile, last_tile = start // steps, (end - 1) // steps
                t = T.if_then_else(seg == 0, last_tile, first_tile)
                k0 = T.if_then_else(
                    seg == 0, T.max(start - last_tile * steps, 0), start - first_tile * steps
                )
                k1 = T.if_then_else(seg == 0, end - last_tile * steps, steps)
                if seg == 0 or first_tile < last_tile:
                    T.clear(acc)
                    for ko in T.Pipelined(k1 - k0, num_stages=num_stages):
                        T.copy(A[h * block_M, (k0 + ko) * block_K], A_shared)
                        T.copy(B[t * block_N, (k0 + ko) * block_K], B_shared)
                        T.gemm(A_shared, B_shared, acc, transpose_B=True)
                    earliest = ((t * steps + 1) * pairs - 1) // total  # the tile's first pair
                    tx = T.get_thread_binding()
                    if k1 < steps:  # not the tile's end: a partial for its last pair
                        T.copy(acc, W[t, p - earliest, h * block_M, 0])
                        T.sync_threads()
                        if tx == 0:
                            T.atomic_add(F[t, h], 1, memory_order="release")
                    else:
                        if p > earliest:  # add the partials of the lower pairs
                            if tx == 0:
                                while T.atomic_load(F[t, h], memory_order="acquire") < p - earliest:
                                    pass
                                T.atomic_store(F[t, h], 0, memory_order="relaxed")
                            T.sync_threads()
                            for s in T.serial(p - earliest):
                                T.copy(W[t, s, h * block_M, 0], part)
                                for i, j in T.Parallel(block_M, block_N):
                                    acc[i, j] += part[i, j]
                        T.copy(acc, C_shared)
                        T.copy(C_shared, C[h * block_M, t * block_N])

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
    if config[0] == "streamk":  # ("streamk", block_N, block_K, num_stages, pairs)
        if b_layout != "nk":
            raise ValueError(
                f"skinny_gemm_streamk: B must be stored (N, K) (b_layout 'nk'); got {b_layout!r}"
            )
        return streamk_matmul(M, N, K, config[1:], dtype, target)
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


def streamk_matmul(M, N, K, config, dtype="bfloat16", target=None):
    """The callable C = A @ B^T of skinny_gemm_streamk for config (block_N, block_K,
    num_stages, pairs), with its workspace and counters allocated once (torch tensors on
    the inputs' device, or numpy arrays)."""
    bN, bK, stages, pairs = config
    tiles, _, _, slots = streamk_plan(N, K, bN, bK, pairs)
    args = (M, N, K, bN, bK, stages, pairs, 128, dtype)
    if target is None:
        kernel = skinny_gemm_streamk(*args)
    else:
        kernel = tilelang.compile(skinny_gemm_streamk.get_tir(*args), out_idx=[2], target=target)
    buffers = {}

    def call(a, b):
        if not buffers:
            if isinstance(a, np.ndarray):
                buffers["w"] = np.zeros((tiles, slots, M, bN), np.float32)
                buffers["f"] = np.zeros((tiles, 2), np.int32)
            else:
                import torch

                buffers["w"] = torch.empty(
                    (tiles, slots, M, bN), device=a.device, dtype=torch.float32
                )
                buffers["f"] = torch.zeros((tiles, 2), device=a.device, dtype=torch.int32)
        return kernel(a, b, buffers["w"], buffers["f"])

    return call


def main():
    rng = np.random.default_rng(0)
    # (M, N, K, config, dtype, b_layout); the tiles do not divide N or K.
    cases = [
        (16, 200, 136, (16, 64, 64, 3, 128, 1, False), "bfloat16", "nk"),
        (16, 200, 136, (16, 64, 64, 3, 128, 1, True), "float16", "nk"),
        (16, 200, 272, (16, 64, 32, 2, 128, 3, False), "bfloat16", "kn"),
        (32, 144, 272, (32, 64, 64, 4, 128, 2, True), "float16", "kn"),
        (64, 128, 160, (64, 64, 64, 3, 128, 2, False), "bfloat16", "nk"),
        # Stream-K: 5 pairs over 4 column tiles of 8 K steps (a tile shared by two pairs).
        (128, 512, 512, ("streamk", 128, 64, 3, 5), "bfloat16", "nk"),
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
