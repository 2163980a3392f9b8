"""flash_attn's `flash_attn_varlen_func` computed with torch on the CPU, for TileLang's
varlen FlashAttention examples, which check their kernels against it: the flash-attn
package is a CUDA extension that does not install or run without a GPU.
tests/upstream/torch_on_cpu.py puts this directory on the path in the emulated modes,
only when the real package cannot be imported.

The semantics are flash-attn 2's: the sequences of a batch are packed along the first
axis (cu_seqlens_q / cu_seqlens_k give their starts), query heads share key / value
heads in groups (GQA), the scale defaults to 1 / sqrt(head_dim), and the causal mask is
aligned to the bottom-right corner (query i of a sequence sees key j when
j <= i + seqlen_k - seqlen_q); a query that sees no key gives zeros.
"""

import math

import torch

__version__ = "2.0.0+cpu"
__all__ = ["flash_attn_varlen_func"]


def flash_attn_varlen_func(
    q,
    k,
    v,
    cu_seqlens_q,
    cu_seqlens_k,
    max_seqlen_q,
    max_seqlen_k,
    dropout_p=0.0,
    softmax_scale=None,
    causal=False,
    window_size=(-1, -1),
    softcap=0.0,
    alibi_slopes=None,
    deterministic=False,
    return_attn_probs=False,
    block_table=None,
):
    if dropout_p != 0.0:
        raise NotImplementedError("the CPU flash_attn_varlen_func computes dropout_p=0.0 only")
    unsupported = {"window_size": tuple(window_size) != (-1, -1), "softcap": softcap != 0.0,
                   "alibi_slopes": alibi_slopes is not None, "block_table": block_table is not None,
                   "return_attn_probs": bool(return_attn_probs)}  # fmt: skip
    if any(unsupported.values()):
        names = ", ".join(n for n, on in unsupported.items() if on)
        raise NotImplementedError(f"the CPU flash_attn_varlen_func does not take {names}")
    heads, kv_heads, dim = q.shape[1], k.shape[1], q.shape[2]
    if heads % kv_heads:
        raise ValueError(f"{heads} query heads do not share {kv_heads} key / value heads evenly")
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(dim)
    out = torch.zeros(q.shape[0], heads, v.shape[2], dtype=q.dtype, device=q.device)
    cq, ck = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    for b in range(len(cq) - 1):
        qs, ks = q[cq[b] : cq[b + 1]].float(), k[ck[b] : ck[b + 1]].float()
        vs = v[ck[b] : ck[b + 1]].float()
        lq, lk = qs.shape[0], ks.shape[0]
        if lq == 0:
            continue
        ks = ks.repeat_interleave(heads // kv_heads, dim=1)
        vs = vs.repeat_interleave(heads // kv_heads, dim=1)
        scores = torch.einsum("qhd,khd->hqk", qs, ks) * scale
        if causal:
            i = torch.arange(lq).unsqueeze(1)
            j = torch.arange(lk).unsqueeze(0)
            scores = scores.masked_fill(j > i + (lk - lq), float("-inf"))
        probs = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # a row with no key: zeros
        out[cq[b] : cq[b + 1]] = torch.einsum("hqk,khd->qhd", probs, vs).to(q.dtype)
    return out
