"""FlashAttention as one differentiable PyTorch operator (tilelang.torch.op).

The forward is flash_attention.py's kernel with its logsumexp output (lse=True: each
query row's logsumexp, which the backward reads); the backward is
flash_attention_bwd.py's two kernels (delta = rowsum(dO * O), then dQ, dK, dV). Each
kernel becomes an operator; the forward's `backward=` runs the two backward operators,
and `save=` keeps only what they read (Q, K, V, O and the logsumexp). The operator then
trains under torch.compile(fullgraph=True) like any torch function: this script checks
its output and the gradients of Q, K and V against torch's own attention
(scaled_dot_product_attention in float32), eager and compiled.

Layout [batch, seq_len, heads, dim], float16; the logsumexp [batch, heads, seq_len]
float32 in natural-log units, as the backward reads it.
"""

import tilelang
import torch
from flash_attention import flash_attention
from flash_attention_bwd import attention_bwd, attention_bwd_preprocess


def attention_op(batch, heads, seq_len, dim, is_causal, namespace="tl_examples", **tiles):
    """The differentiable operator `namespace::flash_attention` for these sizes:
    (Q, K, V) -> (O, LSE); the logsumexp is an output without a gradient."""
    target = tiles.pop("target", "auto")
    fwd = tilelang.compile(
        flash_attention.get_tir(batch, heads, seq_len, dim, is_causal, lse=True, **tiles),
        out_idx=[3, 4],
        target=target,
        pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True},
    )
    pre = tilelang.compile(
        attention_bwd_preprocess.get_tir(batch, heads, seq_len, dim), out_idx=[-1], target=target
    )
    # dQ is a float32 input the kernel adds into (atomics across key blocks): the
    # operator declares it mutated; dK and dV are outputs.
    bwd = tilelang.compile(
        attention_bwd.get_tir(batch, heads, seq_len, dim, is_causal, block_M=32, block_N=32),
        out_idx=[7, 8],
        target=target,
    )
    delta_op = tilelang.torch.op(pre, f"{namespace}::flash_attention_delta")
    bwd_op = tilelang.torch.op(bwd, f"{namespace}::flash_attention_bwd")

    def backward(ctx, d_out, d_lse):
        q, k, v, out, lse = ctx.saved_tensors
        d_out = d_out.contiguous()
        delta = delta_op(out, d_out)
        dq = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
        dk, dv = bwd_op(q, k, v, d_out, lse, delta, dq)
        return dq.to(q.dtype), dk, dv

    def no_lse_grad(ctx, inputs, output):
        ctx.mark_non_differentiable(output[1])

    fwd_op = tilelang.torch.op(
        fwd,
        f"{namespace}::flash_attention",
        backward=backward,
        save=("Q", "K", "V", "Output", "LSE"),
        setup_context=no_lse_grad,
    )
    return fwd_op, delta_op, bwd_op


def torch_reference(q, k, v, is_causal):
    """torch's attention in float32 on [batch, seq, heads, dim] tensors."""
    q, k, v = (t.float().transpose(1, 2) for t in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    return out.transpose(1, 2)


def check(batch, heads, seq_len, dim, is_causal, compiled, namespace):
    attention, _, _ = attention_op(batch, heads, seq_len, dim, is_causal, namespace=namespace)
    gen = torch.Generator().manual_seed(0)
    device = tilelang.torch.default_device()  # where the default target's kernels run
    q, k, v, d_out = (
        torch.randn(batch, seq_len, heads, dim, generator=gen).half().to(device) for _ in range(4)
    )

    def loss_of(fn, q, k, v):
        return (fn(q, k, v).float() * d_out.float()).sum()

    def ours(q, k, v):
        return attention(q, k, v)[0]

    if compiled:
        ours = torch.compile(ours, fullgraph=True)
    results = {}
    for name, fn, inputs in (
        ("tilelang", ours, (q, k, v)),
        ("torch", lambda q, k, v: torch_reference(q, k, v, is_causal), (q, k, v)),
    ):
        leaves = [t.clone().requires_grad_() for t in inputs]
        loss_of(fn, *leaves).backward()
        results[name] = (fn(*leaves).float(), *(t.grad.float() for t in leaves))
    errs = []
    for label, got, ref in zip(("O", "dQ", "dK", "dV"), results["tilelang"], results["torch"]):
        torch.testing.assert_close(
            got, ref, rtol=2e-2, atol=2e-2, msg=lambda m, n=label: f"{n}: {m}"
        )
        errs.append(f"{label} {float((got - ref).abs().max().detach()):.3g}")
    return errs


def main():
    batch, heads, seq_len, dim = 1, 2, 80, 32
    for is_causal in (False, True):
        for compiled in (False, True):
            namespace = f"tl_example_{'causal' if is_causal else 'full'}"
            if compiled:
                namespace += "_compiled"
            errs = check(batch, heads, seq_len, dim, is_causal, compiled, namespace)
            print(
                f"flash attention operator ({'causal' if is_causal else 'non-causal'}, "
                f"{'torch.compile' if compiled else 'eager'}): batch={batch} heads={heads} "
                f"seq={seq_len} dim={dim} output and gradients match torch "
                f"(max abs err {', '.join(errs)})"
            )


if __name__ == "__main__":
    main()
