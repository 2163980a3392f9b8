"""Run under compute-sanitizer (tests/gpu/run_on_gpu.sh): kernels on shapes that do
not divide their tiles, checked against torch; memcheck reports any out-of-bounds
access of the generated code."""

import os
import sys

import tilelang
import tilelang.language as T
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "examples"))
from gemm_cuda import matmul
from mla_decode import mla_decode_hopper


@T.prim_func
def row_softmax(X: T.Tensor((77, 300), "float32"), Y: T.Tensor((77, 300), "float32")):
    with T.Kernel(T.ceildiv(77, 4), threads=128) as bx:
        x = T.alloc_fragment((4, 300), "float32")
        m = T.alloc_fragment((4,), "float32")
        s = T.alloc_fragment((4,), "float32")
        T.annotate_safe_value(X, -T.infinity("float32"))
        T.copy(X[bx * 4, 0], x)
        T.reduce_max(x, m, dim=1)
        for i, j in T.Parallel(4, 300):
            x[i, j] = T.exp(x[i, j] - m[i])
        T.reduce_sum(x, s, dim=1)
        for i, j in T.Parallel(4, 300):
            x[i, j] = x[i, j] / s[i]
        T.copy(x, Y[bx * 4, 0])


def main():
    for dtype in ("float16", "bfloat16"):
        M, N, K = 229, 296, 127
        t = getattr(torch, dtype)
        a = torch.randn(M, K, device="cuda", dtype=t)
        b = torch.randn(K, N, device="cuda", dtype=t)
        bias = torch.randn(N, device="cuda", dtype=t)
        kernel = tilelang.compile(
            matmul(M, N, K, 128, 128, 32, 128, 3, dtype, epilogue="bias_relu"),
            out_idx=[-1],
            target="cuda",
        )
        c = kernel(a, b, bias)
        torch.testing.assert_close(
            c.float(), torch.relu(a.float() @ b.float() + bias.float()), rtol=2e-2, atol=2e-1
        )
    x = torch.randn(77, 300, device="cuda")
    y = torch.empty_like(x)
    tilelang.compile(row_softmax, target="cuda")(x, y)
    torch.testing.assert_close(y, torch.softmax(x, 1), rtol=1e-5, atol=1e-6)
    # The hand-written MLA schedule (TMA reloads by warpgroup 1, mbarriers): 100 heads
    # (a partial second head block) over 1000 tokens (a 40-token last tile).
    batch, heads, seqlen, dv, dpe = 2, 100, 1000, 512, 64
    q = torch.randn(batch, heads, dv + dpe, device="cuda", dtype=torch.bfloat16)
    kv = torch.randn(batch, seqlen, 1, dv, device="cuda", dtype=torch.bfloat16)
    k_pe = torch.randn(batch, seqlen, 1, dpe, device="cuda", dtype=torch.bfloat16)
    out = mla_decode_hopper(batch, heads, seqlen, dv, dpe, dtype="bfloat16")(q, kv, k_pe)
    keys = torch.cat([kv[:, :, 0], k_pe[:, :, 0]], dim=-1).float()
    p = torch.softmax(torch.einsum("bhd,btd->bht", q.float(), keys) / (dv + dpe) ** 0.5, dim=-1)
    want = torch.einsum("bht,btd->bhd", p, kv[:, :, 0].float())
    torch.testing.assert_close(out.float(), want, rtol=2e-2, atol=2e-2)
    torch.cuda.synchronize()
    print(
        "sanitize_tails: gemm 229x296x127 (fp16, bf16), softmax 77x300 and MLA decode "
        "(hopper schedule, 100 heads x 1000 tokens) match torch"
    )


if __name__ == "__main__":
    main()
