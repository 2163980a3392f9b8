"""T.alloc_global on a real GPU: the workspaces are torch CUDA tensors from the caching
allocator, one set per call, ordered on the launch's stream (torch's current one or an
explicit side stream); the split-KV GQA and MLA decoders of tests/python against torch
in float64, on sm_80 code and on the present GPU's arch."""

import os
import sys

import pytest
import tilelang

torch = pytest.importorskip("torch")
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
)
from test_alloc_global import (
    attention_reference,
    gqa_decode,
    logsumexp_reference,
    mla_decode,
    split_logsumexp,
)
from tilelang.jit import kernel as jit_kernel


def arch_targets():
    if not torch.cuda.is_available():  # collected, then skipped by conftest.py
        return ["cuda -arch=sm_80"]
    major, minor = torch.cuda.get_device_capability()
    native = f"cuda -arch=sm_{major}{minor}{'a' if major >= 9 else ''}"
    return sorted({"cuda -arch=sm_80", native})


@pytest.mark.parametrize("target", arch_targets())
def test_workspaces_come_from_torch_on_the_launch_stream(target, monkeypatch):
    made = []
    real = jit_kernel._allocate

    def recording(shape, dtype, like):
        out = real(shape, dtype, like)
        made.append(str(out.device))
        return out

    monkeypatch.setattr(jit_kernel, "_allocate", recording)
    kernel = tilelang.compile(split_logsumexp(), out_idx=[1], target=target)
    stream = torch.cuda.Stream()
    for m, n in ((4099, 1000), (77, 31)):
        x = torch.randn(m, n, device="cuda") * 3
        out = kernel(x)  # torch's current stream
        with torch.cuda.stream(stream):
            side = kernel(x, stream=stream)
        stream.synchronize()
        torch.cuda.synchronize()
        want = torch.from_numpy(logsumexp_reference(x.cpu().numpy()))
        torch.testing.assert_close(out.cpu().double(), want, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(side.cpu().double(), want, rtol=1e-5, atol=1e-5)
    assert made == ["cuda:0"] * 12  # per call: the output and two workspaces


@pytest.mark.parametrize("target", arch_targets())
def test_gqa_split_kv_decode_on_the_gpu(target):
    batch, heads, groups, seqlen, dim, num_split = 4, 32, 2, 2048, 128, 8
    kernel = tilelang.compile(
        gqa_decode(batch, heads, groups, seqlen, dim, num_split, block_N=64),
        out_idx=[4],
        target=target,
    )
    q = torch.randn(batch, heads, dim, device="cuda").half()
    k = torch.randn(batch, seqlen, groups, dim, device="cuda").half()
    v = torch.randn(batch, seqlen, groups, dim, device="cuda").half()
    mask = (torch.rand(batch, seqlen, groups, device="cuda") < 0.7).to(torch.uint8)
    mask[:, ::64, :] = 1
    out = kernel(q, k, v, mask)
    rows = heads // groups
    k_h = k.permute(0, 2, 1, 3).repeat_interleave(rows, dim=1)
    v_h = v.permute(0, 2, 1, 3).repeat_interleave(rows, dim=1)
    keep = mask.permute(0, 2, 1).repeat_interleave(rows, dim=1).bool()
    want = attention_reference(torch, q, k_h, v_h, dim**-0.5, keep)
    torch.testing.assert_close(out.double(), want, rtol=1e-2, atol=2e-3)


@pytest.mark.parametrize("target", arch_targets())
def test_mla_split_kv_decode_on_the_gpu(target):
    batch, heads, seqlen, dim, pe_dim, num_split = 2, 64, 1024, 128, 32, 4
    kernel = tilelang.compile(
        mla_decode(batch, heads, seqlen, dim, pe_dim, num_split), out_idx=[4], target=target
    )
    q = torch.randn(batch, heads, dim, device="cuda").half()
    q_pe = torch.randn(batch, heads, pe_dim, device="cuda").half()
    kv = torch.randn(batch, seqlen, dim, device="cuda").half()
    k_pe = torch.randn(batch, seqlen, pe_dim, device="cuda").half()
    out = kernel(q, q_pe, kv, k_pe)
    key = torch.cat([kv, k_pe], dim=-1)[:, None].expand(batch, heads, seqlen, dim + pe_dim)
    value = kv[:, None].expand(batch, heads, seqlen, dim)
    want = attention_reference(torch, torch.cat([q, q_pe], -1), key, value, (dim + pe_dim) ** -0.5)
    torch.testing.assert_close(out.double(), want, rtol=1e-2, atol=2e-3)
