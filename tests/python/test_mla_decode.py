"""examples/mla_decode.py with its default (Hopper) tiles: 64 heads per block, two
warpgroups splitting dv, a 2-stage pipeline. Run on the CPU and on the CUDA
emulator (sm_80: mma.sync and cp.async; sm_90a: wgmma, TMA and the producer
warpgroup), one pass and split-KV, against float64 numpy. A cache that is not a
whole number of tiles checks the masking; a split with an empty slice checks the
combine's zero weights. The full shape against torch is in
tests/gpu/test_examples_hopper_gpu.py."""

import importlib.util
import pathlib
import re

import numpy as np
import pytest

EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "mla_decode.py"
TARGETS = ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate"]


@pytest.fixture
def mla(request, monkeypatch):
    """The example, loaded afresh under target `request.param` (a @tilelang.jit
    factory keeps its kernels by their arguments alone)."""
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", request.param)
    spec = importlib.util.spec_from_file_location("mla_decode_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check(out, ref):
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("mla", TARGETS, indirect=True)
def test_one_pass_two_head_blocks(mla):
    # 128 heads (two blocks of 64), 300 tokens: 5 tiles, the last one 44 tokens long.
    batch, heads, seqlen_kv, dv, dpe = 1, 128, 300, 128, 64
    q, kv, k_pe = mla.inputs(batch, heads, seqlen_kv, dv, dpe, seed=5)
    out = mla.mla_decode(batch, heads, seqlen_kv, dv, dpe)(q, kv, k_pe)
    check(out, mla.reference(q, kv, k_pe, dv))


@pytest.mark.parametrize("mla", TARGETS, indirect=True)
def test_split_kv_with_an_empty_slice(mla):
    # 256 tokens = 4 tiles over 3 slices of 2 tiles: the last slice is empty.
    batch, heads, seqlen_kv, dv, dpe = 2, 64, 256, 128, 64
    q, kv, k_pe = mla.inputs(batch, heads, seqlen_kv, dv, dpe, seed=6)
    out = mla.mla_decode_splitkv(q, kv, k_pe, 3)
    check(out, mla.reference(q, kv, k_pe, dv))


@pytest.mark.parametrize("mla", ["cuda -arch=sm_90a -emulate"], indirect=True)
@pytest.mark.parametrize("seqlen_kv", [40, 300])
def test_hopper_schedule(mla, seqlen_kv):
    # mla_decode_hopper: warpgroup 0 scores and takes the softmax, warpgroup 1 runs P @ V
    # of the previous tile and reloads the stages; mbarriers order them. 128 heads (two
    # blocks); 300 tokens: 5 tiles of 64 with a 44-token tail (3 reloads); 40 tokens:
    # one partial tile and no reload.
    batch, heads, dv, dpe = 1, 128, 128, 64
    q, kv, k_pe = mla.inputs(batch, heads, seqlen_kv, dv, dpe, seed=7)
    out = mla.mla_decode_hopper(batch, heads, seqlen_kv, dv, dpe)(q, kv, k_pe)
    check(out, mla.reference(q, kv, k_pe, dv))


@pytest.mark.parametrize("mla", ["cuda -arch=sm_90a"], indirect=True)
def test_hopper_schedule_source(mla):
    """DeepSeek's dims: the scores as one 64 x 64 wgmma of warpgroup 0, each half of
    P @ V as a 64 x 256 wgmma reading its half of the cache tile (column blocks of the
    swizzled tile), no producer warpgroup and no block barrier inside the loops."""
    kernel = mla.mla_decode_hopper(64, 128, 8192, 512, 64, dtype="bfloat16")
    source = kernel.get_kernel_source()
    operand = r"\((&\w+\[[^]]*\])\)"
    gemms = re.findall(rf"tl::wgmma_gemm_ss<([^>]*)>\({operand}, {operand}", source)
    assert ("64, 64, 512, 1, 1, false, true", "&Q_s[0]", "&KV_s[(s * 32768)]") in gemms, gemms
    halves = [g for g in gemms if g[0] == "64, 256, 64, 1, 1, false, false"]
    # (the right half starts 4 column blocks of 64 x 64 later: 16384 elements)
    assert len(halves) == 2 and sum("+ 16384)" in g[2] for g in halves) == 1, gemms
    assert "__launch_bounds__(256, 1)" in source
    loops = source.split("for (int32_t t")[2:]
    assert loops and all("__syncthreads" not in body.split("}\n  }")[0] for body in loops), source


@pytest.mark.parametrize("mla", ["cuda -arch=sm_90a"], indirect=True)
def test_hopper_source_keeps_fragments_in_registers(mla):
    """DeepSeek's dims compiled for sm_90a: every gemm on wgmma, the cache tiles by
    TMA from a producer warpgroup, and acc_o / acc_s / the running sums in registers
    (128 + 16 + 16 floats per thread), not in shared memory."""
    kernel = mla.mla_decode(64, 128, 8192, 512, 64, dtype="bfloat16")
    source = kernel.get_kernel_source()
    gemms = set(re.findall(r"tl::(\w*gemm\w*)<([^>]*)>", source))
    # (", 1": issued without waiting; the step waits before the registers are used)
    assert gemms == {
        ("wgmma_gemm_ss", "64, 64, 512, 1, 2, false, true, 1"),
        ("wgmma_gemm_ss", "64, 64, 64, 1, 2, false, true, 1"),
        ("wgmma_gemm_ss", "64, 512, 64, 1, 2, false, false, 1"),
    }, gemms
    for decl in ("float acc_o[128];", "float acc_s[16];", "float sums[16];"):
        assert decl in source
    assert "__launch_bounds__(384, 1)" in source  # 256 consumers + the producer warpgroup
    assert "tl::tma_load" in source
