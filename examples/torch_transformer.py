"""A small transformer block built from this directory's kernels as PyTorch operators
(tilelang.torch.op), trained for a few steps under torch.compile(fullgraph=True) next to
the same block written with torch's own functions; the losses agree step by step.

    h = RMSNorm(x)                          rms_norm.py, a compiled kernel
    q, k, v = split(h @ W_qkv)              gemm.py's eager @tilelang.jit function
    o = attention(q, k, v)                  torch_attention.py (forward + backward kernels)
    y = x + o @ W_o                         gemm.py again

Each operator carries its backward: the GEMM's is the GEMM operator itself on transposed
operands (dA = dC B^T, dB = A^T dC), RMSNorm's is written with torch functions, the
attention's runs flash_attention_bwd.py's kernels. Activations are float16 as the kernels
take them, parameters float32; the reference computes in float32 from the same float16
activations. torch.library.opcheck checks every operator first.
"""

import tilelang
import torch
from gemm import gemm_eager
from rms_norm import rms_norm
from torch_attention import attention_op

BATCH, SEQ, HEADS, HEAD_DIM = 2, 40, 2, 16
DIM = HEADS * HEAD_DIM
EPS = 1e-6


def gemm_op(namespace):
    """C = A @ B (float16 in, float32 out) with its backward from itself."""

    def backward(ctx, d_c):
        a, b = ctx.saved_tensors
        d_c = d_c.half()
        d_a = gemm(d_c, b.t().contiguous()).half()
        d_b = gemm(a.t().contiguous(), d_c).half()
        return d_a, d_b, None, None, None

    gemm = tilelang.torch.op(f"{namespace}::gemm", backward=backward, save=("A", "B"))(gemm_eager)
    return gemm


def rms_norm_op(rows, namespace):
    """y = x / sqrt(mean(x^2) + eps) * w over rows of DIM, float16; backward in torch."""
    kernel = rms_norm(rows, DIM, eps=EPS)

    def backward(ctx, d_y):
        x, w = ctx.saved_tensors
        x, w, d_y = x.float(), w.float(), d_y.float()
        r = torch.rsqrt((x * x).mean(-1, keepdim=True) + EPS)
        d_w = (d_y * x * r).sum(0)
        g = d_y * w
        d_x = r * g - x * r**3 * (g * x).mean(-1, keepdim=True)
        return d_x.half(), d_w.half()

    return tilelang.torch.op(kernel, f"{namespace}::rms_norm", backward=backward, save=("X", "W"))


class Block(torch.nn.Module):
    """The block's parameters; `forward` takes the functions that do the work."""

    def __init__(self):
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        dev = tilelang.torch.default_device()  # where the default target's kernels run
        self.norm = torch.nn.Parameter((1 + 0.1 * torch.randn(DIM, generator=gen)).to(dev))
        self.w_qkv = torch.nn.Parameter(
            (torch.randn(DIM, 3 * DIM, generator=gen) / DIM**0.5).to(dev)
        )
        self.w_o = torch.nn.Parameter((torch.randn(DIM, DIM, generator=gen) / DIM**0.5).to(dev))

    def forward(self, x, fns):
        rows = x.view(-1, DIM)
        h = fns["rms_norm"](rows, self.norm.half())
        qkv = fns["gemm"](h, self.w_qkv.half()).half().view(BATCH, SEQ, 3, HEADS, HEAD_DIM)
        q, k, v = (qkv[:, :, i].contiguous() for i in range(3))
        o = fns["attention"](q, k, v)
        out = fns["gemm"](o.reshape(-1, DIM), self.w_o.half())
        return (rows.float() + out).view(BATCH, SEQ, DIM)


def tilelang_fns(namespace):
    attention, _, _ = attention_op(BATCH, HEADS, SEQ, HEAD_DIM, True, namespace=namespace)
    gemm = gemm_op(namespace)
    return {
        "rms_norm": rms_norm_op(BATCH * SEQ, namespace),
        "gemm": gemm,
        "attention": lambda q, k, v: attention(q, k, v)[0],
        "ops": (gemm, attention),
    }


def torch_fns():
    def norm(x, w):
        x = x.float()
        return (x * torch.rsqrt((x * x).mean(-1, keepdim=True) + EPS) * w.float()).half()

    def attention(q, k, v):
        q, k, v = (t.float().transpose(1, 2) for t in (q, k, v))
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return out.transpose(1, 2).half()

    return {"rms_norm": norm, "gemm": lambda a, b: a.float() @ b.float(), "attention": attention}


def check_ops(fns):
    """torch.library.opcheck of every operator the block uses (schema, fake, autograd
    registration, FakeTensor and AOT dispatch)."""
    gen = torch.Generator().manual_seed(1)

    def rand(*shape):
        return (
            torch.randn(*shape, generator=gen)
            .half()
            .to(tilelang.torch.default_device())
            .requires_grad_()
        )

    gemm, attention = fns["ops"]
    torch.library.opcheck(gemm, (rand(BATCH * SEQ, DIM), rand(DIM, 3 * DIM)))
    torch.library.opcheck(fns["rms_norm"], (rand(BATCH * SEQ, DIM), rand(DIM)))
    shape = (BATCH, SEQ, HEADS, HEAD_DIM)
    torch.library.opcheck(attention, (rand(*shape), rand(*shape), rand(*shape)))


def train(fns, steps, compiled):
    block = Block()
    opt = torch.optim.SGD(block.parameters(), lr=0.5)
    gen = torch.Generator().manual_seed(2)
    dev = tilelang.torch.default_device()
    x = torch.randn(BATCH, SEQ, DIM, generator=gen).half().to(dev)
    target = torch.randn(BATCH, SEQ, DIM, generator=gen).to(dev)

    def loss_fn(x, target):
        return torch.nn.functional.mse_loss(block(x, fns), target)

    if compiled:
        loss_fn = torch.compile(loss_fn, fullgraph=True)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(x, target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main(steps=4, namespace="tl_transformer"):
    fns = tilelang_fns(namespace)
    check_ops(fns)
    ours = train(fns, steps, compiled=True)
    reference = train(torch_fns(), steps, compiled=False)
    for step, (a, b) in enumerate(zip(ours, reference)):
        assert abs(a - b) <= 1e-2 * abs(b), f"step {step}: loss {a} against torch's {b}"
    assert ours[-1] < ours[0], f"the loss did not fall: {ours}"
    print(
        f"transformer block ({BATCH}x{SEQ}, {HEADS} heads of {HEAD_DIM}): {steps} steps under "
        f"torch.compile(fullgraph=True), losses {', '.join(f'{v:.4f}' for v in ours)} match "
        f"eager torch's {', '.join(f'{v:.4f}' for v in reference)}"
    )


if __name__ == "__main__":
    main()
