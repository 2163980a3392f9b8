"""flash_attn's `flash_attn_varlen_func` and `flash_attn_with_kvcache` computed with
torch on the CPU, for TileLang's varlen FlashAttention and sparse decoding examples,
which check their kernels against them: the flash-attn
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
__all__ = ["flash_attn_varlen_func", "flash_attn_with_kvcache"]


def _refuse(fn, **given):
    """The stand-in computes the defaults of these arguments only: each given as
    (value, default); any other value is refused by name, expected and given."""
    off = [f"{name}={'a tensor' if torch.is_tensor(value) else repr(value)} (expected {default!r})"
           for name, (value, default) in given.items()
           if ((value is not None) if default is None else value != default)]  # fmt: skip
    if off:
        raise NotImplementedError(
            f"the CPU {fn} computes the default of these arguments only: {', '.join(off)}"
        )


def _attend(qs, ks, vs, scale, causal):
    """softmax(qs ks^T * scale) vs for one sequence, (lq, heads, dim) each in float32, key
    / value heads repeated for the query heads; the causal mask in the bottom-right."""
    heads, kv_heads = qs.shape[1], ks.shape[1]
    if heads % kv_heads:
        raise ValueError(f"{heads} query heads do not share {kv_heads} key / value heads evenly")
    ks = ks.repeat_interleave(heads // kv_heads, dim=1)
    vs = vs.repeat_interleave(heads // kv_heads, dim=1)
    lq, lk = qs.shape[0], ks.shape[0]
    scores = torch.einsum("qhd,khd->hqk", qs, ks) * scale
    if causal:
        i = torch.arange(lq).unsqueeze(1)
        j = torch.arange(lk).unsqueeze(0)
        scores = scores.masked_fill(j > i + (lk - lq), float("-inf"))
    probs = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # a row with no key: zeros
    return torch.einsum("hqk,khd->qhd", probs, vs)


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
    _refuse("flash_attn_varlen_func", dropout_p=(dropout_p, 0.0), window_size=(tuple(window_size), (-1, -1)), softcap=(softcap, 0.0),
            alibi_slopes=(alibi_slopes, None), block_table=(block_table, None),
            return_attn_probs=(bool(return_attn_probs), False))  # fmt: skip
    heads, dim = q.shape[1], q.shape[2]
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(dim)
    out = torch.zeros(q.shape[0], heads, v.shape[2], dtype=q.dtype, device=q.device)
    cq, ck = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    for b in range(len(cq) - 1):
        if cq[b + 1] == cq[b]:
            continue
        qs, ks, vs = (
            t.float() for t in (q[cq[b] : cq[b + 1]], k[ck[b] : ck[b + 1]], v[ck[b] : ck[b + 1]])
        )
        out[cq[b] : cq[b + 1]] = _attend(qs, ks, vs, scale, causal).to(q.dtype)
    return out


def flash_attn_with_kvcache(
    q,
    k_cache,
    v_cache,
    k=None,
    v=None,
    rotary_cos=None,
    rotary_sin=None,
    cache_seqlens=None,
    cache_batch_idx=None,
    cache_leftpad=None,
    block_table=None,
    softmax_scale=None,
    causal=False,
    window_size=(-1, -1),
    softcap=0.0,
    rotary_interleaved=True,
    alibi_slopes=None,
    num_splits=0,
    return_softmax_lse=False,
):
    """Attention of q (batch, seqlen_q, heads, dim) over the first cache_seqlens[b] keys
    and values of each batch row of the caches (batch, seqlen_k, kv_heads, dim); the
    cache is read, never appended to."""
    _refuse("flash_attn_with_kvcache", k=(k, None), v=(v, None), rotary_cos=(rotary_cos, None),
            rotary_sin=(rotary_sin, None), cache_batch_idx=(cache_batch_idx, None),
            cache_leftpad=(cache_leftpad, None), block_table=(block_table, None),
            window_size=(tuple(window_size), (-1, -1)), softcap=(softcap, 0.0),
            alibi_slopes=(alibi_slopes, None),
            return_softmax_lse=(bool(return_softmax_lse), False))  # fmt: skip
    batch, seqlen_k, dim = q.shape[0], k_cache.shape[1], q.shape[3]
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(dim)
    if cache_seqlens is None:
        lengths = [seqlen_k] * batch
    elif isinstance(cache_seqlens, int):
        lengths = [cache_seqlens] * batch
    else:
        lengths = [int(n) for n in cache_seqlens.tolist()]
    out = torch.zeros(*q.shape[:3], v_cache.shape[3], dtype=q.dtype, device=q.device)
    for b in range(batch):
        n = lengths[b]
        qs, ks, vs = q[b].float(), k_cache[b, :n].float(), v_cache[b, :n].float()
        out[b] = _attend(qs, ks, vs, scale, causal).to(q.dtype)
    return out
