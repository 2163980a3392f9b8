"""FlashAttention backward: dQ, dK, dV of O = softmax(Q K^T * sm_scale) V, causal and not.

With S = Q K^T * sm_scale, P = softmax(S) = exp(S - lse) (lse, the row
logsumexp, saved by the forward pass) and dO the gradient of O:

    dV = P^T dO        dP = dO V^T        dS = P * (dP - delta) * sm_scale
    dK = dS^T Q        dQ = dS K          delta = rowsum(dO * O)

Two kernels, as FlashAttention-2 splits the work:

* `attention_bwd_preprocess` computes delta for every query row (an elementwise
  product of two tiles folded with T.reduce_sum).
* `attention_bwd` gives each block block_M keys of one (batch, head). The block
  holds K and V, and dK and dV in fragments, and walks over the query tiles with
  T.Pipelined. Each step recomputes the transposed probabilities P^T = exp2(K Q^T
  * scale - lse) (the gemm's transpose_B=True gives K Q^T straight from the
  row-major tiles), adds P^T dO into dV and dS^T Q into dK (P^T and dS^T are float16
  fragments, the A operand of a register gemm), and adds this block's share of dQ,
  dS K, into the float32 dQ in global memory with T.atomic_add, because every key
  block contributes to every query row. The share goes through a shared tile: on
  sm_90 the whole tile is then added by one TMA reduce (FlashAttention-3's way)
  instead of an atomic per element. Causal masks skip the query tiles entirely
  above the diagonal and zero P^T inside the diagonal tiles; only those, and tiles
  past the end of the sequence, test each element.

Layout [batch, seq_len, heads, dim] for Q, K, V, O, dO, dK, dV (float16) and dQ
(float32, zeroed by the caller); lse and delta are [batch, heads, seq_len] float32,
lse in natural-log units as torch returns it. seq_len is not a multiple of the tiles.
"""

import math

import numpy as np
import tilelang
import tilelang.language as T

LOG2E = math.log2(math.e)


@tilelang.jit(out_idx=[-1])
def attention_bwd_preprocess(batch, heads, seq_len, dim, block=32, threads=128):
    dtype = "float16"
    accum_dtype = "float32"
    shape = (batch, seq_len, heads, dim)

    @T.prim_func
    def preprocess(
        O: T.Tensor(shape, dtype),
        dO: T.Tensor(shape, dtype),
        Delta: T.Tensor((batch, heads, seq_len), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(seq_len, block), heads, batch, threads=threads) as (bx, by, bz):
            o = T.alloc_fragment((block, dim), accum_dtype)
            do_frag = T.alloc_fragment((block, dim), accum_dtype)
            delta = T.alloc_fragment((block,), accum_dtype)
            T.copy(O[bz, bx * block : (bx + 1) * block, by, :], o)
            T.copy(dO[bz, bx * block : (bx + 1) * block, by, :], do_frag)
            for i, j in T.Parallel(block, dim):
                o[i, j] *= do_frag[i, j]
            T.reduce_sum(o, delta, dim=1)
            T.copy(delta, Delta[bz, by, bx * block : (bx + 1) * block])

    return preprocess


@tilelang.jit
def attention_bwd(
    batch,
    heads,
    seq_len,
    dim,
    is_causal,
    block_M=64,
    block_N=32,
    threads=128,
    num_stages=1,
):
    sm_scale = (1.0 / dim) ** 0.5
    scale = sm_scale * LOG2E  # scores in log2 units, for exp2
    shape = (batch, seq_len, heads, dim)
    dtype = "float16"
    accum_dtype = "float32"
    # Every gemm whose result meets another in a T.Parallel loop splits its warps the
    # same way; the register-A gemms (P^T dO, dS^T Q) need FullRow.
    rows = T.GemmWarpPolicy.FullRow

    @T.prim_func
    def backward(
        Q: T.Tensor(shape, dtype),
        K: T.Tensor(shape, dtype),
        V: T.Tensor(shape, dtype),
        dO: T.Tensor(shape, dtype),
        lse: T.Tensor((batch, heads, seq_len), accum_dtype),
        Delta: T.Tensor((batch, heads, seq_len), accum_dtype),
        dQ: T.Tensor(shape, accum_dtype),
        dK: T.Tensor(shape, dtype),
        dV: T.Tensor(shape, dtype),
    ):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=threads) as (bx, by, bz):
            K_shared = T.alloc_shared((block_M, dim), dtype)
            V_shared = T.alloc_shared((block_M, dim), dtype)
            Q_shared = T.alloc_shared((block_N, dim), dtype)
            dO_shared = T.alloc_shared((block_N, dim), dtype)
            lse_shared = T.alloc_shared((block_N,), accum_dtype)
            delta_shared = T.alloc_shared((block_N,), accum_dtype)
            dsT_shared = T.alloc_shared((block_M, block_N), dtype)
            dq_shared = T.alloc_shared((block_N, dim), accum_dtype)
            qkT = T.alloc_fragment((block_M, block_N), accum_dtype)
            dsT = T.alloc_fragment((block_M, block_N), accum_dtype)
            qkT_cast = T.alloc_fragment((block_M, block_N), dtype)
            dsT_cast = T.alloc_fragment((block_M, block_N), dtype)
            dv = T.alloc_fragment((block_M, dim), accum_dtype)
            dk = T.alloc_fragment((block_M, dim), accum_dtype)
            dq = T.alloc_fragment((block_N, dim), accum_dtype)

            T.copy(K[bz, bx * block_M : (bx + 1) * block_M, by, :], K_shared)
            T.copy(V[bz, bx * block_M : (bx + 1) * block_M, by, :], V_shared)
            T.clear(dv)
            T.clear(dk)
            # Causal: query tiles wholly before this block's first key see none of it.
            first = (bx * block_M) // block_N if is_causal else 0
            for k in T.Pipelined(first, T.ceildiv(seq_len, block_N), num_stages=num_stages):
                T.copy(Q[bz, k * block_N : (k + 1) * block_N, by, :], Q_shared)
                T.copy(lse[bz, by, k * block_N : (k + 1) * block_N], lse_shared)
                T.clear(qkT)
                T.gemm(K_shared, Q_shared, qkT, transpose_B=True, policy=rows)  # S^T
                # P^T, zero where the key is masked or a row lies past the end. Only
                # tiles that reach past the end or cross the diagonal (a query before
                # the block's last key) test each element.
                partial = ((k + 1) * block_N > seq_len) or ((bx + 1) * block_M > seq_len)
                if is_causal:
                    partial = partial or (k * block_N < (bx + 1) * block_M - 1)
                if partial:
                    for i, j in T.Parallel(block_M, block_N):
                        key, query = bx * block_M + i, k * block_N + j
                        visible = (query < seq_len) and (key < seq_len)
                        if is_causal:
                            visible = visible and (key <= query)
                        qkT[i, j] = T.if_then_else(
                            visible, T.exp2(qkT[i, j] * scale - lse_shared[j] * LOG2E), 0
                        )
                else:
                    for i, j in T.Parallel(block_M, block_N):
                        qkT[i, j] = T.exp2(qkT[i, j] * scale - lse_shared[j] * LOG2E)

                T.copy(dO[bz, k * block_N : (k + 1) * block_N, by, :], dO_shared)
                T.copy(Delta[bz, by, k * block_N : (k + 1) * block_N], delta_shared)
                T.clear(dsT)
                T.gemm(V_shared, dO_shared, dsT, transpose_B=True, policy=rows)  # dP^T
                T.copy(qkT, qkT_cast)
                T.gemm(qkT_cast, dO_shared, dv, policy=rows)  # dV += P^T dO

                for i, j in T.Parallel(block_M, block_N):
                    dsT_cast[i, j] = qkT[i, j] * (dsT[i, j] - delta_shared[j]) * sm_scale
                T.gemm(dsT_cast, Q_shared, dk, policy=rows)  # dK += dS^T Q

                # dQ += dS K, shared with the other key blocks through atomics.
                T.copy(dsT_cast, dsT_shared)
                T.clear(dq)
                T.gemm(dsT_shared, K_shared, dq, transpose_A=True)
                T.copy(dq, dq_shared)
                T.atomic_add(dQ[bz, k * block_N : (k + 1) * block_N, by, :], dq_shared)

            T.copy(dv, dV[bz, bx * block_M : (bx + 1) * block_M, by, :])
            T.copy(dk, dK[bz, bx * block_M : (bx + 1) * block_M, by, :])

    return backward


def flash_attention_backward(q, k, v, o, do, lse, is_causal, **tiles):
    """(dQ float32, dK, dV float16) from the forward's inputs, output and logsumexp."""
    batch, seq_len, heads, dim = q.shape
    delta = attention_bwd_preprocess(batch, heads, seq_len, dim)(o, do)
    dq = np.zeros(q.shape, np.float32)
    dk = np.empty_like(k)
    dv = np.empty_like(v)
    bwd = attention_bwd(batch, heads, seq_len, dim, is_causal, **tiles)
    bwd(q, k, v, do, lse, delta, dq, dk, dv)
    return dq, dk, dv


def forward_reference(q, k, v, is_causal):
    """float64 (O, lse [batch, heads, seq], P [batch, heads, q, k])."""
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(q.shape[-1])
    if is_causal:
        n = q.shape[1]
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    lse = top + np.log(np.exp(scores - top).sum(axis=-1, keepdims=True))
    probs = np.exp(scores - lse)
    return np.einsum("bhqk,bkhd->bqhd", probs, v), np.ascontiguousarray(lse[..., 0]), probs


def backward_reference(q, k, v, do, probs):
    """float64 (dQ, dK, dV) from the probabilities of forward_reference."""
    q, k, v, do = (t.astype(np.float64) for t in (q, k, v, do))
    sm_scale = 1 / math.sqrt(q.shape[-1])
    dv = np.einsum("bhqk,bqhd->bkhd", probs, do)
    dp = np.einsum("bqhd,bkhd->bhqk", do, v)
    ds = probs * (dp - (dp * probs).sum(axis=-1, keepdims=True)) * sm_scale
    dq = np.einsum("bhqk,bkhd->bqhd", ds, k)
    dk = np.einsum("bhqk,bqhd->bkhd", ds, q)
    return dq, dk, dv


def main():
    batch, heads, seq_len, dim = 1, 2, 100, 64
    rng = np.random.default_rng(0)
    q, k, v, do = (
        rng.standard_normal((batch, seq_len, heads, dim)).astype(np.float16) for _ in range(4)
    )
    for is_causal in (False, True):
        o, lse, probs = forward_reference(q, k, v, is_causal)
        o = o.astype(np.float16)
        grads = flash_attention_backward(q, k, v, o, do, lse.astype(np.float32), is_causal)
        refs = backward_reference(q, k, v, do, probs)
        errs = []
        for name, got, ref in zip(("dQ", "dK", "dV"), grads, refs):
            np.testing.assert_allclose(
                got.astype(np.float64), ref, rtol=2e-2, atol=2e-2, err_msg=name
            )
            errs.append(f"{name} {float(np.abs(got - ref).max()):.3g}")
        print(
            f"flash attention backward ({'causal' if is_causal else 'non-causal'}): "
            f"batch={batch} heads={heads} seq={seq_len} dim={dim} float16 matches numpy "
            f"(max abs err {', '.join(errs)})"
        )


if __name__ == "__main__":
    main()
