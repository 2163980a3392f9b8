"""DeepSeek multi-head latent attention (MLA), decode step.

In MLA every query head attends to one shared latent KV cache: keys are the
latent vector c (dv = 512 wide) concatenated with a small rotary part k_pe
(dpe = 64), and values are c itself. For one new token per sequence:

    scores[h, t] = (q[h, :dv] . KV[t] + q[h, dv:] . K_pe[t]) / sqrt(dv + dpe)
    out[h]       = softmax_t(scores[h]) @ KV

Shapes: q [batch, h_q, dv + dpe], KV [batch, seqlen_kv, 1, dv],
K_pe [batch, seqlen_kv, 1, dpe] (h_kv = 1), out [batch, h_q, dv].

Because all heads share the cache, one block takes block_H heads of one
sequence: the heads become the M dimension of the gemms, so a decode step still
runs on tensor cores. The block streams the cache in block_N-token tiles with
T.Pipelined; the score tile is two gemms into the same fragment (the latent part
and the rotary part, both with transpose_B=True), followed by the online softmax
of FlashAttention (running max with T.reduce_max(clear=False), rescale with
exp2) and acc_o += P @ KV, reusing the KV tile already in shared memory as V.

With num_split > 1 the cache is also cut into num_split slices (split-KV, for
batches too small to fill the GPU): each block writes its slice's partial output
and log-sum-exp, and a second kernel merges the slices with their softmax weights.

The defaults are the Hopper configuration (bench/mla_decode_cuda.py measures it):
64 heads per block, so that the heads are exactly the 64 rows of a wgmma, and two
warpgroups (threads=256) that split the wide output (64 x 512 float32, 128 registers
per thread) over dv; the score tile is split over the same two warpgroups along
block_N, so every per-head vector has one register layout for both tiles (the rows
of a wgmma accumulator). On sm_90a the cache tiles arrive by TMA from a producer
warpgroup that the compiler adds (warp specialization). Q and 2 stages of a 64-token
tile take 226 of Hopper's 227 KB of shared memory (use num_stages=1 on an A100).
The two warpgroups only meet for the row maximum and the P tile: each keeps its own
part of the row sums as a (block_H, block_N) tile of running sums, rescaled like the
output and reduced once at the end.

mla_decode_hopper is the same decode scheduled by hand for sm_90a (T.ws regions and
mbarriers): one warpgroup scores and takes the softmax while the other multiplies the
previous tile's P by its half of V, so the tensor cores keep working through the
softmax. It is the fastest on an H200 (bench/mla_decode_cuda.py).
"""

import math
import os

import numpy as np
import tilelang
import tilelang.language as T
from tilelang.utils.target import hopper_target

LOG2E = math.log2(math.e)


def attention_over_tiles(seqlen_kv, dv, dpe, block_H, block_N, num_stages, dtype, overlap=False):
    """A macro: the online-softmax attention of block_H heads of sequence bz over the
    cache tiles first_tile .. first_tile + num_tiles - 1. It leaves the unnormalized
    output in acc_o, the row sums in logsum and the running maximum (of the raw
    scores) in scores_max.

    The row sums are kept as a (block_H, block_N) tile of running sums with the score
    tile's layout, rescaled like acc_o, and reduced once after the loop: a reduce_sum
    per cache tile would cost the warps that split block_N an exchange through shared
    memory (two barriers) on every tile."""
    accum_dtype = "float32"
    scale = (1.0 / (dv + dpe)) ** 0.5 * LOG2E

    @T.macro
    def attend(q, KV, K_pe, hx, bz, first_tile, num_tiles, acc_o, logsum, scores_max):
        Q_shared = T.alloc_shared((block_H, dv), dtype)
        Q_pe_shared = T.alloc_shared((block_H, dpe), dtype)
        KV_shared = T.alloc_shared((block_N, dv), dtype)
        K_pe_shared = T.alloc_shared((block_N, dpe), dtype)
        S_shared = T.alloc_shared((block_H, block_N), dtype)
        acc_s = T.alloc_fragment((block_H, block_N), accum_dtype)
        scores_max_prev = T.alloc_fragment((block_H,), accum_dtype)
        scores_scale = T.alloc_fragment((block_H,), accum_dtype)
        sums = T.alloc_fragment((block_H, block_N), accum_dtype)

        heads_0 = hx * block_H
        T.copy(q[bz, heads_0 : heads_0 + block_H, 0:dv], Q_shared)
        T.copy(q[bz, heads_0 : heads_0 + block_H, dv : dv + dpe], Q_pe_shared)
        T.fill(acc_o, 0)
        T.fill(sums, 0)
        T.fill(scores_max, -T.infinity(accum_dtype))

        # overlap=True: the hand schedule of FlashAttention's Hopper kernels (order /
        # stage / group over the 13 statements below). Step t issues the score gemms of
        # tile t, rescales acc_o and issues P V of tile t - 1, then does the softmax of
        # tile t while P V runs. The copies stay in step t, so two cache tiles (t for
        # the scores, t - 1 for P V) fit beside Q. On an H200 it is slower (2.6x): with
        # P V in flight the 128 acc_o registers per thread do not leave room for the
        # softmax, and ptxas spills.
        schedule = {}
        if overlap:
            schedule = {
                "order": [0, 1, 2, 5, 3, 4],
                "stage": [0, 0, 0, 0, 1, 1],
                "group": [[0], [1], [2, 3, 4], [5, 6, 7, 8, 9, 10], [11], [12]],
            }
        for t in T.Pipelined(num_tiles, num_stages=num_stages, **schedule):
            k = first_tile + t
            T.copy(KV[bz, k * block_N : (k + 1) * block_N, 0, :], KV_shared)
            T.copy(K_pe[bz, k * block_N : (k + 1) * block_N, 0, :], K_pe_shared)
            # Tokens past the end of the cache score -inf; the gemms add on top.
            for i, j in T.Parallel(block_H, block_N):
                acc_s[i, j] = T.if_then_else(
                    k * block_N + j < seqlen_kv, 0, -T.infinity(accum_dtype)
                )
            T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True)
            T.gemm(Q_pe_shared, K_pe_shared, acc_s, transpose_B=True)

            T.copy(scores_max, scores_max_prev)
            T.reduce_max(acc_s, scores_max, dim=1, clear=False)
            # Rows that have seen only tokens past the end keep max = -inf: measure
            # from 0 instead, so that exp2 never computes -inf - (-inf).
            for i in T.Parallel(block_H):
                scores_max[i] = T.if_then_else(
                    scores_max[i] == -T.infinity(accum_dtype), 0, scores_max[i]
                )
            for i in T.Parallel(block_H):
                scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
            for i, j in T.Parallel(block_H, block_N):
                acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                sums[i, j] = sums[i, j] * scores_scale[i] + acc_s[i, j]
            T.copy(acc_s, S_shared)

            # P @ V with V = the latent tile already in shared memory. P goes through
            # shared memory so that the warps can split the wide dv over N (on sm_90a
            # each warpgroup takes 256 columns; with mma.sync on 8 warps the compiler
            # takes 4 x 2, the rows split as in the score gemm, for the row vectors).
            for i, j in T.Parallel(block_H, dv):
                acc_o[i, j] *= scores_scale[i]
            T.gemm(S_shared, KV_shared, acc_o)

        T.reduce_sum(sums, logsum, dim=1)

    return attend


@tilelang.jit(out_idx=[-1], pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True})
def mla_decode(
    batch,
    heads,
    seqlen_kv,
    dv=512,
    dpe=64,
    block_H=64,
    block_N=64,
    num_stages=2,
    threads=256,
    dtype="float16",
    overlap=False,
):
    """One pass over the whole cache per block (no split)."""
    accum_dtype = "float32"
    attend = attention_over_tiles(seqlen_kv, dv, dpe, block_H, block_N, num_stages, dtype, overlap)

    @T.prim_func
    def decode(
        q: T.Tensor((batch, heads, dv + dpe), dtype),
        KV: T.Tensor((batch, seqlen_kv, 1, dv), dtype),
        K_pe: T.Tensor((batch, seqlen_kv, 1, dpe), dtype),
        Output: T.Tensor((batch, heads, dv), dtype),
    ):
        with T.Kernel(T.ceildiv(heads, block_H), batch, threads=threads) as (hx, bz):
            acc_o = T.alloc_fragment((block_H, dv), accum_dtype)
            logsum = T.alloc_fragment((block_H,), accum_dtype)
            scores_max = T.alloc_fragment((block_H,), accum_dtype)
            attend(q, KV, K_pe, hx, bz, 0, T.ceildiv(seqlen_kv, block_N), acc_o, logsum, scores_max)
            for i, j in T.Parallel(block_H, dv):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, Output[bz, hx * block_H : (hx + 1) * block_H, :])

    return decode


@tilelang.jit(out_idx=[-1], pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True})
def mla_decode_hopper(batch, heads, seqlen_kv, dv=512, dpe=64, block_N=64, dtype="float16"):
    """The one-pass decode with a schedule written for Hopper (sm_90a), in TileLang's
    explicit warpgroup syntax: T.ws regions, mbarriers and T.tma_copy.

    In mla_decode both warpgroups take every step together: the scores, the softmax,
    then P @ V, so the tensor cores wait through each softmax. Here the two warpgroups
    of a block (64 heads) work on different things at once:

      warpgroup 0: scores of tile t (64 x block_N, the whole wgmma width), softmax,
                   P and the row scale into shared memory, then P @ V for dv[:half];
      warpgroup 1: P @ V for dv[half:] of tile t while warpgroup 0 already scores
                   tile t + 1, then it reloads the freed stage with tile t + 2.

    Four mbarriers order them: full[s] (stage s loaded), kv_free[s] (warpgroup 0 is done
    with stage s), p_ready / p_free (P and the scale are written / read), and sum_ready
    for the row sums at the end. Two stages of a 64-token tile, Q and P take 225 KB of
    shared memory; each warpgroup keeps its half of the output (128 floats per thread)
    in registers. sm_90a only (wgmma, TMA); mla_decode runs everywhere else."""
    accum_dtype = "float32"
    scale = (1.0 / (dv + dpe)) ** 0.5 * LOG2E
    block_H = 64  # the rows of one wgmma: one warpgroup holds the whole score tile
    half = dv // 2
    num_tiles = T.ceildiv(seqlen_kv, block_N)

    @T.macro
    def load_tile(KV, K_pe, KV_s, K_pe_s, full, bz, k, s):
        """Cache tile k of sequence bz into stage s, completing on full[s] (the calling
        warpgroup's 128 threads arrive after issuing the copies)."""
        T.tma_copy(KV[bz, k * block_N : (k + 1) * block_N, 0, :], KV_s[s, :, :], barrier=full[s])
        T.tma_copy(
            K_pe[bz, k * block_N : (k + 1) * block_N, 0, :], K_pe_s[s, :, :], barrier=full[s]
        )
        T.barrier_arrive(full[s])

    @T.prim_func
    def decode(
        q: T.Tensor((batch, heads, dv + dpe), dtype),
        KV: T.Tensor((batch, seqlen_kv, 1, dv), dtype),
        K_pe: T.Tensor((batch, seqlen_kv, 1, dpe), dtype),
        Output: T.Tensor((batch, heads, dv), dtype),
    ):
        with T.Kernel(T.ceildiv(heads, block_H), batch, threads=256) as (hx, bz):
            Q_s = T.alloc_shared((block_H, dv), dtype)
            Q_pe_s = T.alloc_shared((block_H, dpe), dtype)
            KV_s = T.alloc_shared((2, block_N, dv), dtype)
            K_pe_s = T.alloc_shared((2, block_N, dpe), dtype)
            P_s = T.alloc_shared((block_H, block_N), dtype)
            scale_s = T.alloc_shared((block_H,), accum_dtype)
            sum_s = T.alloc_shared((block_H,), accum_dtype)
            full = T.alloc_barrier([128, 128])  # the stage's two copies (KV, K_pe) landed
            kv_free = T.alloc_barrier([128, 128])  # warpgroup 0 read the stage
            p_ready = T.alloc_barrier(128)
            p_free = T.alloc_barrier(128)
            sum_ready = T.alloc_barrier(128)

            acc_s = T.alloc_fragment((block_H, block_N), accum_dtype)
            sums = T.alloc_fragment((block_H, block_N), accum_dtype)
            m_run = T.alloc_fragment((block_H,), accum_dtype)
            m_prev = T.alloc_fragment((block_H,), accum_dtype)
            row_scale = T.alloc_fragment((block_H,), accum_dtype)
            row_sum = T.alloc_fragment((block_H,), accum_dtype)
            acc_lo = T.alloc_fragment((block_H, half), accum_dtype)
            acc_hi = T.alloc_fragment((block_H, half), accum_dtype)

            heads_0 = hx * block_H
            T.copy(q[bz, heads_0 : heads_0 + block_H, 0:dv], Q_s)
            T.copy(q[bz, heads_0 : heads_0 + block_H, dv : dv + dpe], Q_pe_s)
            with T.ws(1):  # the first two tiles; warpgroup 1 loads the rest
                for t in T.serial(2):
                    if t < num_tiles:
                        load_tile(KV, K_pe, KV_s, K_pe_s, full, bz, t, t)

            with T.ws(0):
                T.fill(acc_lo, 0)
                T.fill(sums, 0)
                T.fill(m_run, -T.infinity(accum_dtype))
                for t in T.serial(num_tiles):
                    s = t % 2
                    T.barrier_wait(full[s], (t // 2) % 2)
                    # Tokens past the end of the cache score -inf (TMA reads them as 0).
                    for i, j in T.Parallel(block_H, block_N):
                        acc_s[i, j] = T.if_then_else(
                            t * block_N + j < seqlen_kv, 0, -T.infinity(accum_dtype)
                        )
                    T.gemm(Q_s, KV_s[s, :, :], acc_s, transpose_B=True)
                    T.gemm(Q_pe_s, K_pe_s[s, :, :], acc_s, transpose_B=True)
                    T.copy(m_run, m_prev)
                    T.reduce_max(acc_s, m_run, dim=1, clear=False)
                    for i in T.Parallel(block_H):  # rows with no token yet: measure from 0
                        m_run[i] = T.if_then_else(m_run[i] == -T.infinity(accum_dtype), 0, m_run[i])
                    for i in T.Parallel(block_H):
                        row_scale[i] = T.exp2(m_prev[i] * scale - m_run[i] * scale)
                    for i, j in T.Parallel(block_H, block_N):
                        acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m_run[i] * scale)
                        sums[i, j] = sums[i, j] * row_scale[i] + acc_s[i, j]
                    if t > 0:
                        T.barrier_wait(p_free, (t - 1) % 2)  # warpgroup 1 is done with P of t - 1
                    T.copy(acc_s, P_s)
                    T.copy(row_scale, scale_s)
                    T.barrier_arrive(p_ready)
                    for i, j in T.Parallel(block_H, half):
                        acc_lo[i, j] *= row_scale[i]
                    T.gemm(P_s, KV_s[s, :, 0:half], acc_lo)
                    T.barrier_arrive(kv_free[s])
                T.reduce_sum(sums, row_sum, dim=1)
                T.copy(row_sum, sum_s)
                T.barrier_arrive(sum_ready)
                for i, j in T.Parallel(block_H, half):
                    acc_lo[i, j] /= row_sum[i]
                T.copy(acc_lo, Output[bz, heads_0 : heads_0 + block_H, 0:half])

            with T.ws(1):
                T.fill(acc_hi, 0)
                for t in T.serial(num_tiles):
                    s = t % 2
                    T.barrier_wait(p_ready, t % 2)
                    for i, j in T.Parallel(block_H, half):
                        acc_hi[i, j] *= scale_s[i]
                    T.gemm(P_s, KV_s[s, :, half:dv], acc_hi)
                    T.barrier_arrive(p_free)
                    if t + 2 < num_tiles:  # refill stage s once warpgroup 0 is done with it too
                        T.barrier_wait(kv_free[s], (t // 2) % 2)
                        load_tile(KV, K_pe, KV_s, K_pe_s, full, bz, t + 2, s)
                T.barrier_wait(sum_ready, 0)
                for i, j in T.Parallel(block_H, half):
                    acc_hi[i, j] /= sum_s[i]
                T.copy(acc_hi, Output[bz, heads_0 : heads_0 + block_H, half:dv])

    return decode


@tilelang.jit(out_idx=[-2, -1], pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True})
def mla_decode_partial(
    batch,
    heads,
    seqlen_kv,
    num_split,
    dv=512,
    dpe=64,
    block_H=64,
    block_N=64,
    num_stages=2,
    threads=256,
    dtype="float16",
):
    """Split-KV, first kernel: block (hx, bz, sz) attends over slice sz of the cache and
    writes the slice's normalized output (float32) and its log2-sum-exp."""
    accum_dtype = "float32"
    scale = (1.0 / (dv + dpe)) ** 0.5 * LOG2E
    tiles_per_split = T.ceildiv(T.ceildiv(seqlen_kv, block_N), num_split)
    attend = attention_over_tiles(seqlen_kv, dv, dpe, block_H, block_N, num_stages, dtype)

    @T.prim_func
    def decode_partial(
        q: T.Tensor((batch, heads, dv + dpe), dtype),
        KV: T.Tensor((batch, seqlen_kv, 1, dv), dtype),
        K_pe: T.Tensor((batch, seqlen_kv, 1, dpe), dtype),
        Partial: T.Tensor((batch, heads, num_split, dv), accum_dtype),
        Lse: T.Tensor((batch, heads, num_split), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(heads, block_H), batch, num_split, threads=threads) as (
            hx,
            bz,
            sz,
        ):
            acc_o = T.alloc_fragment((block_H, dv), accum_dtype)
            logsum = T.alloc_fragment((block_H,), accum_dtype)
            scores_max = T.alloc_fragment((block_H,), accum_dtype)
            attend(
                q,
                KV,
                K_pe,
                hx,
                bz,
                sz * tiles_per_split,
                tiles_per_split,
                acc_o,
                logsum,
                scores_max,
            )
            # A slice with no token (all past the end) has logsum 0 and gets weight 0.
            for i, j in T.Parallel(block_H, dv):
                acc_o[i, j] /= T.if_then_else(logsum[i] > 0, logsum[i], 1)
            for i in T.Parallel(block_H):
                logsum[i] = T.if_then_else(
                    logsum[i] > 0,
                    T.log2(logsum[i]) + scores_max[i] * scale,
                    -T.infinity(accum_dtype),
                )
            T.copy(acc_o, Partial[bz, hx * block_H : (hx + 1) * block_H, sz, :])
            T.copy(logsum, Lse[bz, hx * block_H : (hx + 1) * block_H, sz])

    return decode_partial


@tilelang.jit(out_idx=[-1])
def mla_combine(batch, heads, num_split, dv=512, block_H=8, threads=128, dtype="float16"):
    """Split-KV, second kernel: out = sum_s w_s * partial_s with w_s = 2^(lse_s - lse)
    and lse = log2 sum_s 2^lse_s (computed from the largest lse_s, so nothing overflows).
    It streams the partial outputs once: few heads per block, many blocks."""
    accum_dtype = "float32"

    @T.prim_func
    def combine(
        Partial: T.Tensor((batch, heads, num_split, dv), accum_dtype),
        Lse: T.Tensor((batch, heads, num_split), accum_dtype),
        Output: T.Tensor((batch, heads, dv), dtype),
    ):
        with T.Kernel(T.ceildiv(heads, block_H), batch, threads=threads) as (hx, bz):
            weights = T.alloc_shared((block_H, num_split), accum_dtype)
            lse_max = T.alloc_fragment((block_H,), accum_dtype)
            total = T.alloc_fragment((block_H,), accum_dtype)
            part = T.alloc_fragment((block_H, dv), accum_dtype)
            acc_o = T.alloc_fragment((block_H, dv), accum_dtype)
            heads_0 = hx * block_H
            T.copy(Lse[bz, heads_0 : heads_0 + block_H, :], weights)
            T.reduce_max(weights, lse_max, dim=1)
            for i, s in T.Parallel(block_H, num_split):
                weights[i, s] = T.exp2(weights[i, s] - lse_max[i])
            T.reduce_sum(weights, total, dim=1)
            T.fill(acc_o, 0)
            for s in T.serial(num_split):
                T.copy(Partial[bz, heads_0 : heads_0 + block_H, s, :], part)
                for i, j in T.Parallel(block_H, dv):
                    acc_o[i, j] += part[i, j] * (weights[i, s] / total[i])
            T.copy(acc_o, Output[bz, heads_0 : heads_0 + block_H, :])

    return combine


def dtype_name(x):
    """'float16' / 'bfloat16' of a numpy (ml_dtypes) array or a torch tensor."""
    return str(x.dtype).removeprefix("torch.")


def mla_decode_splitkv(q, kv, k_pe, num_split, block_H=64, block_N=64, threads=256, num_stages=2):
    """Split-KV MLA decode: the partial kernel, then the combine kernel (in q's dtype)."""
    batch, heads, d = q.shape
    seqlen_kv, dv = kv.shape[1], kv.shape[3]
    partial, lse = mla_decode_partial(
        batch,
        heads,
        seqlen_kv,
        num_split,
        dv,
        d - dv,
        block_H=block_H,
        block_N=block_N,
        num_stages=num_stages,
        threads=threads,
        dtype=dtype_name(q),
    )(q, kv, k_pe)
    return mla_combine(batch, heads, num_split, dv, dtype=dtype_name(q))(partial, lse)


def reference(q, kv, k_pe, dv):
    """float64 MLA decode."""
    q, kv, k_pe = (t.astype(np.float64) for t in (q, kv, k_pe))
    keys = np.concatenate([kv[:, :, 0], k_pe[:, :, 0]], axis=-1)  # [b, t, dv + dpe]
    scores = np.einsum("bhd,btd->bht", q, keys) / math.sqrt(q.shape[-1])
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs = scores / scores.sum(axis=-1, keepdims=True)
    return np.einsum("bht,btd->bhd", probs, kv[:, :, 0, :dv])


def inputs(batch, heads, seqlen_kv, dv, dpe, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((batch, heads, dv + dpe)).astype(np.float16)
    kv = rng.standard_normal((batch, seqlen_kv, 1, dv)).astype(np.float16)
    k_pe = rng.standard_normal((batch, seqlen_kv, 1, dpe)).astype(np.float16)
    return q, kv, k_pe


def main():
    # DeepSeek's head dims (dv = 512, dpe = 64) with a small batch, head count and cache.
    # One block of 64 heads per sequence, with tiles whose shared memory fits a block on
    # every CUDA arch from sm_80 (163 KB); the H200 bench takes block_N=64 and 2 stages
    # (227 KB on sm_90).
    batch, heads, seqlen_kv, dv, dpe = 2, 64, 100, 512, 64
    tiles = {"block_N": 32, "num_stages": 1}
    q, kv, k_pe = inputs(batch, heads, seqlen_kv, dv, dpe)
    ref = reference(q, kv, k_pe, dv)
    # The Hopper schedule needs sm_90a: on a machine without one, its exact CUDA runs in
    # the emulator (TILELANG_MLA_HOPPER_TARGET picks another target).
    hopper = os.environ.get("TILELANG_MLA_HOPPER_TARGET") or hopper_target()

    def run_hopper():
        func = mla_decode_hopper.get_tir(batch, heads, seqlen_kv, dv, dpe)
        fast_math = {tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True}
        return tilelang.compile(func, out_idx=[-1], target=hopper, pass_configs=fast_math)(
            q, kv, k_pe
        )

    runs = (
        ("one pass", lambda: mla_decode(batch, heads, seqlen_kv, dv, dpe, **tiles)(q, kv, k_pe)),
        # 4 tiles of 32 tokens over 3 slices of 2: the last slice is empty.
        ("split-KV x3", lambda: mla_decode_splitkv(q, kv, k_pe, 3, **tiles)),
        # 2 tiles of 64 tokens, the second 36 long.
        (f"Hopper schedule, {hopper}", run_hopper),
    )
    for name, run in runs:
        out = run()
        np.testing.assert_allclose(out.astype(np.float64), ref, rtol=1e-2, atol=1e-2)
        err = float(np.abs(out - ref).max())
        print(
            f"mla decode ({name}): batch={batch} h_q={heads} h_kv=1 seqlen_kv={seqlen_kv} "
            f"dv={dv} dpe={dpe} float16 matches numpy (max abs err {err:.3g})"
        )


if __name__ == "__main__":
    main()
