"""Issue 8's examples on the GPU at sizes past the CPU tests', against torch: the fp8
GEMM against torch._scaled_mm, FlashAttention forward (the bench's tiles) against
float32 SDPA and backward against autograd through attention in float32, MLA decode (one pass and split-KV) and the int4 dequantized
GEMM against float32 torch. The kernels are the examples' own, compiled for the
present GPU ("cuda")."""

import importlib.util
import math
import pathlib

import pytest

torch = pytest.importorskip("torch")

EXAMPLES = pathlib.Path(__file__).parents[2] / "examples"


def load_example(name):
    spec = importlib.util.spec_from_file_location(f"hopper_gpu_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def on_cuda(monkeypatch):
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "cuda")
    torch.manual_seed(0)


def relative_error(got, ref):
    return float((got.double() - ref.double()).abs().max() / ref.double().abs().max())


def fp8_per_tensor(x):
    scale = x.abs().max().float() / 448.0
    return (x / scale).clamp(-448, 448).to(torch.float8_e4m3fn), scale.reshape(1)


@pytest.mark.parametrize("M, N, K", [(2048, 2048, 2048), (1000, 1040, 1024)])
def test_fp8_gemm_matches_scaled_mm(M, N, K):
    fp8 = load_example("fp8_gemm")
    a, scale_a = fp8_per_tensor(torch.randn(M, K, device="cuda") * 3)
    b, scale_b = fp8_per_tensor(torch.randn(N, K, device="cuda") * 0.2)
    kernel = fp8.fp8_scaled_mm(
        M, N, K, "float16", block_M=128, block_N=128, block_K=64, threads=256
    )
    c = kernel(a, b, scale_a, scale_b)
    # The exact product of the fp8 values; tensor cores add with about 2^-9 of
    # sum |a.b| of error, and the float16 output rounds once more.
    ad, bd = a.double(), b.double()
    scale = float(scale_a) * float(scale_b)
    ref = ad @ bd.T * scale
    bound = 2.0**-9 * (ad.abs() @ bd.abs().T) * scale + 2.0**-11 * ref.abs()
    assert bool(((c.double() - ref).abs() <= bound).all()), relative_error(c, ref)
    if M % 16 == 0 and N % 16 == 0:
        theirs = torch._scaled_mm(a, b.T, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.float16)
        # Both are within the bound above of the exact product; on sm_90a the kernel's
        # wgmma adds fp8 products with its own (shorter) accumulator, so the two differ
        # by a few float16 ulps of the largest entries (2.5e-3 seen on the H200).
        assert relative_error(c, theirs) < 4e-3


def attention_forward(q, k, v, is_causal):
    """float32 (O, lse [b, h, s]) of [b, s, h, d] inputs, and the autograd graph's
    leaves for the backward."""
    qf, kf, vf = (t.float().transpose(1, 2).requires_grad_() for t in (q, k, v))
    scores = qf @ kf.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if is_causal:
        n = q.shape[1]
        mask = torch.ones(n, n, dtype=torch.bool, device="cuda").tril()
        scores = scores.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    out = torch.softmax(scores, dim=-1) @ vf
    return out, lse, (qf, kf, vf)


@pytest.mark.parametrize(
    "dim, tiles",
    [
        (64, (192, 128, 384, 2, False)),
        (128, (128, 128, 256, 2, True)),
        (64, (192, 128, 384, 2, True)),
        (64, ("hopper", 192, 128)),
        (128, ("hopper", 128, 128)),
        (64, ("hopper", 192, 128, True)),
        (128, ("hopper", 128, 128, True)),
    ],
    ids=[
        "d64-192x128",
        "d128-overlap",
        "d64-192x128-overlap",
        "d64-hopper",
        "d128-hopper",
        "d64-hopper-overlap",
        "d128-hopper-overlap",
    ],
)
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_flash_attention_forward_bench_tiles(dim, tiles, is_causal):
    """The forward with bench/flash_attention_cuda.py's tiles on 1000 tokens: causal row
    tiles end at seq_len, so the first one starts before row 0 (its Q rows load as
    zeros, its TMA store drops them); batch 2 would show a write into the batch
    before. Causal blocks go in groups of 2 of the 8 (batch, head) pairs."""
    fa = load_example("flash_attention")
    batch, heads, seq_len = 2, 4, 1000
    q, k, v = (
        torch.randn(batch, seq_len, heads, dim, device="cuda", dtype=torch.bfloat16)
        for _ in range(3)
    )
    if tiles[0] == "hopper":  # the persistent schedule, with fewer blocks than tiles
        bM, bN, *overlap = tiles[1:]
        kernel = fa.flash_attention_hopper(
            batch, heads, seq_len, dim, is_causal, bM, bN, 7, "bfloat16", bool(overlap), 2
        )
    else:
        bM, bN, threads, stages, overlap = tiles
        kernel = fa.flash_attention(
            batch, heads, seq_len, dim, is_causal, bM, bN, threads, stages, "bfloat16", overlap, 2
        )
    out = kernel(q, k, v)
    ref = torch.nn.functional.scaled_dot_product_attention(
        *(t.float().transpose(1, 2) for t in (q, k, v)), is_causal=is_causal
    ).transpose(1, 2)
    assert relative_error(out, ref) < 1e-2


@pytest.mark.parametrize("dim", [64, 128])
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_flash_attention_backward_matches_autograd(dim, is_causal):
    fa = load_example("flash_attention_bwd")
    batch, heads, seq_len = 2, 4, 1000
    q, k, v, do = (
        torch.randn(batch, seq_len, heads, dim, device="cuda", dtype=torch.float16)
        for _ in range(4)
    )
    out, lse, leaves = attention_forward(q, k, v, is_causal)
    out.backward(do.float().transpose(1, 2))
    refs = [t.grad.transpose(1, 2) for t in leaves]
    o = out.detach().transpose(1, 2).half().contiguous()

    delta = fa.attention_bwd_preprocess(batch, heads, seq_len, dim)(o, do)
    dq = torch.zeros(batch, seq_len, heads, dim, device="cuda", dtype=torch.float32)
    dk, dv = torch.empty_like(k), torch.empty_like(v)
    bwd = fa.attention_bwd(batch, heads, seq_len, dim, is_causal)
    bwd(q, k, v, do, lse.detach().contiguous(), delta, dq, dk, dv)
    for name, got, ref in zip(("dQ", "dK", "dV"), (dq, dk, dv), refs):
        assert relative_error(got, ref) < 1e-2, name


def mla_reference(q, kv, k_pe, dv):
    keys = torch.cat([kv[:, :, 0], k_pe[:, :, 0]], dim=-1).float()
    scores = torch.einsum("bhd,btd->bht", q.float(), keys) / math.sqrt(q.shape[-1])
    return torch.einsum("bht,btd->bhd", torch.softmax(scores, dim=-1), kv[:, :, 0].float())


@pytest.mark.parametrize(
    "batch, seqlen_kv, num_split, dtype",
    [
        (64, 8192, 1, "bfloat16"),
        (4, 2000, 1, "float16"),
        (4, 2000, 4, "float16"),
        (64, 8192, "hopper", "bfloat16"),
        (3, 2000, "hopper", "float16"),
        (2, 40, "hopper", "bfloat16"),
    ],
)
def test_mla_decode_matches_torch(batch, seqlen_kv, num_split, dtype):
    """The default (Hopper) tiles; issue 8's shape, and a cache that is not a whole
    number of 64-token tiles, in one pass and split over 4 slices; the hand-written
    warpgroup schedule (mla_decode_hopper) on the same shapes and on one partial tile."""
    mla = load_example("mla_decode")
    heads, dv, dpe = 128, 512, 64

    def rand(*shape):
        return torch.randn(*shape, device="cuda", dtype=getattr(torch, dtype))

    q, kv, k_pe = (
        rand(batch, heads, dv + dpe),
        rand(batch, seqlen_kv, 1, dv),
        rand(batch, seqlen_kv, 1, dpe),
    )
    if num_split == "hopper":
        out = mla.mla_decode_hopper(batch, heads, seqlen_kv, dv, dpe, dtype=dtype)(q, kv, k_pe)
    elif num_split == 1:
        out = mla.mla_decode(batch, heads, seqlen_kv, dv, dpe, dtype=dtype)(q, kv, k_pe)
    else:
        out = mla.mla_decode_splitkv(q, kv, k_pe, num_split)
    assert relative_error(out, mla_reference(q, kv, k_pe, dv)) < 1e-2


@pytest.mark.parametrize("M", [16, 256])
def test_int4_gemm_matches_torch(M):
    dq = load_example("dequant_gemm")
    N, K, group_size = 4096, 4096, 128
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    w = torch.randint(-8, 8, (N, K), device="cuda", dtype=torch.int8)
    scales = (torch.rand(N, K // group_size, device="cuda") * 0.1 + 0.01).half()
    nibbles = (w.to(torch.int16) & 0xF).to(torch.uint8)
    packed = nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)
    c = dq.int4_gemm(M, N, K, group_size, "float16")(a, packed.contiguous(), scales)
    w_deq = w.half() * scales.repeat_interleave(group_size, dim=1)  # rounded as the kernel
    ref = a.float() @ w_deq.float().T
    assert relative_error(c, ref) < 2e-3
