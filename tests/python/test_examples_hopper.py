"""The kernels of issue 8's examples (fp8 GEMM, FlashAttention backward, MLA decode,
int4 dequantized GEMM, the persistent FlashAttention forward for sm_90a), called
directly with shapes and settings their main() does not use, on the CPU and on the
CUDA emulator (the sm_80 CUDA source, run on the CPU; the sm_90a source for the
hand-written Hopper kernels), against float64 numpy. The examples' own main() runs in
test_examples.py, test_emulator.py and, compiled for sm_80/sm_90/sm_90a, in
test_examples_cuda_source.py and test_wgmma_examples.py; tests/gpu/ has the bigger
shapes against torch."""

import importlib.util
import pathlib

import numpy as np
import pytest

EXAMPLES = pathlib.Path(__file__).parents[2] / "examples"
TARGETS = ["cpu", "cuda -arch=sm_80 -emulate"]


def load_example(name):
    spec = importlib.util.spec_from_file_location(f"hopper_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def target(request, monkeypatch):
    """Every @tilelang.jit kernel the test builds compiles for `request.param`. The
    example is loaded afresh by the test: a @tilelang.jit factory keeps the kernels it
    built by their arguments alone, whatever the default target was then."""
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", request.param)
    return request.param


@pytest.mark.parametrize("target", TARGETS, indirect=True)
def test_fp8_scaled_mm_with_tails_and_scales(target):
    fp8_gemm = load_example("fp8_gemm")
    # 32 x 32 tiles, two K tiles and tails on M and N; large and small scales.
    M, N, K = 45, 40, 64
    rng = np.random.default_rng(1)
    a, scale_a = fp8_gemm.quantize_per_tensor(rng.standard_normal((M, K)).astype(np.float32) * 40)
    b, scale_b = fp8_gemm.quantize_per_tensor(rng.uniform(-1e-3, 1e-3, (N, K)).astype(np.float32))
    kernel = fp8_gemm.fp8_scaled_mm(
        M, N, K, out_dtype="float32", block_M=32, block_N=32, block_K=32, threads=128
    )
    assert kernel.target.startswith(target)
    c = kernel(a, b, scale_a, scale_b)
    ref, abs_ref = fp8_gemm.reference(a, b, scale_a, scale_b)
    fp8_gemm.check(c, ref, abs_ref)
    # The scales are applied: the product of the raw fp8 values is far larger.
    assert np.abs(c).max() < 1e-2 * np.abs(a.astype(np.float32) @ b.astype(np.float32).T).max()


def test_fp8_scaled_mm_in_clusters_multicasts_a():
    """cluster=2: blocks in pairs along N, A's tile multicast (sm_90a source in the
    emulator, which runs a cluster's blocks together); a tail on N (3 column tiles would
    not fill the last cluster, so N spans 4 of them, the last one part-filled)."""
    import tilelang

    fp8_gemm = load_example("fp8_gemm")
    M, N, K = 128, 232, 256
    rng = np.random.default_rng(3)
    a, scale_a = fp8_gemm.quantize_per_tensor(rng.standard_normal((M, K)).astype(np.float32))
    b, scale_b = fp8_gemm.quantize_per_tensor(rng.standard_normal((N, K)).astype(np.float32))
    func = fp8_gemm.fp8_scaled_mm.get_tir(
        M, N, K, "float32", 64, 64, 128, 2, 128, panel=0, cluster=2
    )
    kernel = tilelang.compile(func, out_idx=[-1], target="cuda -arch=sm_90a -emulate")
    assert "multicast" in kernel.get_kernel_source()
    ref, abs_ref = fp8_gemm.reference(a, b, scale_a, scale_b)
    fp8_gemm.check(kernel(a, b, scale_a, scale_b), ref, abs_ref)
    with pytest.raises(ValueError, match="cluster=2 multicasts A only in launch order"):
        fp8_gemm.fp8_scaled_mm.get_tir(M, N, K, panel=8, cluster=2)


@pytest.mark.parametrize("target", TARGETS, indirect=True)
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_flash_attention_backward_matches_numpy(target, is_causal):
    fa_bwd = load_example("flash_attention_bwd")
    # One key block and two query tiles, the second partly past the end; dim 32.
    batch, heads, seq_len, dim = 2, 1, 45, 32
    rng = np.random.default_rng(2)
    q, k, v, do = (
        rng.standard_normal((batch, seq_len, heads, dim)).astype(np.float16) for _ in range(4)
    )
    o, lse, probs = fa_bwd.forward_reference(q, k, v, is_causal)
    grads = fa_bwd.flash_attention_backward(
        q, k, v, o.astype(np.float16), do, lse.astype(np.float32), is_causal
    )
    for name, got, ref in zip(
        ("dQ", "dK", "dV"), grads, fa_bwd.backward_reference(q, k, v, do, probs)
    ):
        np.testing.assert_allclose(got.astype(np.float64), ref, rtol=2e-2, atol=2e-2, err_msg=name)


@pytest.mark.parametrize("target", ["cuda -arch=sm_90a -emulate"], indirect=True)
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_flash_attention_backward_bench_tiles_on_sm90a(target, is_causal):
    # The bench's tiles: two consumer warpgroups of 64 keys, a TMA pipeline over the
    # query tiles, and dQ added by a TMA reduce from a shared tile. Four key blocks,
    # seven query tiles, the last ones partly past the end.
    fa_bwd = load_example("flash_attention_bwd")
    batch, heads, seq_len, dim = 1, 1, 400, 32
    tiles = {"block_M": 128, "block_N": 64, "threads": 256, "num_stages": 2}
    src = fa_bwd.attention_bwd(batch, heads, seq_len, dim, is_causal, **tiles).get_kernel_source()
    assert "tl::tma_store_add<4>(" in src and "tl::setmaxnreg_inc<" in src, src
    rng = np.random.default_rng(3)
    q, k, v, do = (
        rng.standard_normal((batch, seq_len, heads, dim)).astype(np.float16) for _ in range(4)
    )
    o, lse, probs = fa_bwd.forward_reference(q, k, v, is_causal)
    grads = fa_bwd.flash_attention_backward(
        q, k, v, o.astype(np.float16), do, lse.astype(np.float32), is_causal, **tiles
    )
    for name, got, ref in zip(
        ("dQ", "dK", "dV"), grads, fa_bwd.backward_reference(q, k, v, do, probs)
    ):
        np.testing.assert_allclose(got.astype(np.float64), ref, rtol=2e-2, atol=2e-2, err_msg=name)


@pytest.mark.parametrize("target", TARGETS, indirect=True)
def test_mla_decode_one_pass_and_split_kv(target):
    mla = load_example("mla_decode")
    # Narrow head dims, 32 heads (two head blocks), a cache of 150 tokens: the split
    # into 4 slices of one 64-token tile leaves the last slice empty.
    batch, heads, seqlen_kv, dv, dpe = 1, 32, 150, 64, 32
    q, kv, k_pe = mla.inputs(batch, heads, seqlen_kv, dv, dpe, seed=3)
    ref = mla.reference(q, kv, k_pe, dv)
    tiles = {"block_H": 16, "block_N": 64, "threads": 128}
    one_pass = mla.mla_decode(batch, heads, seqlen_kv, dv, dpe, **tiles)(q, kv, k_pe)
    np.testing.assert_allclose(one_pass.astype(np.float64), ref, rtol=1e-2, atol=1e-2)
    split = mla.mla_decode_splitkv(q, kv, k_pe, 4, **tiles)
    np.testing.assert_allclose(split.astype(np.float64), ref, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("target", TARGETS, indirect=True)
def test_int4_gemm_group_128(target):
    dequant = load_example("dequant_gemm")
    # Group 128 over two 64-wide K tiles; tails on M and N; float16 output.
    M, N, K, group_size = 33, 50, 256, 128
    rng = np.random.default_rng(4)
    a = rng.standard_normal((M, K)).astype(np.float16)
    # Every int4 value, -8 (0x8) included, in random places; positive scales.
    q = rng.integers(-8, 8, (N, K)).astype(np.int8)
    scales = rng.uniform(0.01, 0.1, (N, K // group_size)).astype(np.float16)
    packed = dequant.pack_int4(q)
    kernel = dequant.int4_gemm(M, N, K, group_size, "float16", block_M=32, block_N=32)
    c = kernel(a, packed, scales)
    ref = a.astype(np.float64) @ dequant.dequantize(q, scales, group_size).astype(np.float64).T
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=1e-3, atol=1e-3)


def test_int4_packing_round_trips():
    dequant = load_example("dequant_gemm")
    rng = np.random.default_rng(5)
    packed, scales, q = dequant.quantize_int4(rng.standard_normal((4, 64)).astype(np.float32), 32)
    low = (packed & 0xF).astype(np.int8)
    high = (packed >> 4).astype(np.int8)
    unpacked = np.empty_like(q)
    unpacked[:, 0::2] = np.where(low > 7, low - 16, low)
    unpacked[:, 1::2] = np.where(high > 7, high - 16, high)
    np.testing.assert_array_equal(unpacked, q)
    assert scales.shape == (4, 2) and scales.dtype == np.float16


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"K": 200, "group_size": 128}, "K must be a multiple of group_size=128, got K=200"),
        (
            {"K": 256, "group_size": 128, "block_K": 96},
            "block_K must divide group_size or be a multiple of it, got block_K=96",
        ),
    ],
)
def test_int4_gemm_rejects_bad_groups(kwargs, message):
    with pytest.raises(ValueError, match=message):
        load_example("dequant_gemm").int4_gemm.get_tir(64, 64, **kwargs)


@pytest.mark.parametrize(
    "dim, block_M, is_causal, overlap",
    [
        (64, 192, True, False),
        (64, 192, False, False),
        (128, 128, True, False),
        (64, 192, True, True),
        (128, 128, False, True),
    ],
    ids=["d64-causal", "d64-full", "d128-causal", "d64-causal-overlap", "d128-full-overlap"],
)
def test_flash_attention_hopper_schedule_in_the_emulator(dim, block_M, is_causal, overlap):
    """The persistent hand-written forward (sm_90a source, run in the emulator): 3 blocks
    over 2 x 2 x 2 row tiles of 300 tokens, so blocks take several tiles, the last round
    is partial and the mbarrier phases run on across tiles; causal row tiles start
    before row 0 (the store of such a tile stays element-wise). overlap=True: P V of
    tile k - 1 is issued after Q K^T of tile k and stays in flight through its softmax
    (wgmma_gemm_rs with one group pending, then one wait<0> per step). Causal tiles go
    longest first within groups of one (batch, head) pair (head_group=1)."""
    import tilelang

    fa = load_example("flash_attention")
    batch, heads, seq_len = 2, 2, 300
    func = fa.flash_attention_hopper.get_tir(
        batch, heads, seq_len, dim, is_causal, block_M, 128, 3, "float16", overlap, head_group=1
    )
    kernel = tilelang.compile(func, out_idx=[3], target="cuda -arch=sm_90a -emulate")
    src = kernel.get_kernel_source()
    consumer_regs = 160 if block_M == 192 else 240
    assert "tl::setmaxnreg_dec<24>();" in src and f"tl::setmaxnreg_inc<{consumer_regs}>();" in src
    loads = [line for line in src.splitlines() if "tl::tma_load<4>(" in line]
    for tile in ("Q_s", "K_s", "V_s"):  # by the producer (a box per 128-byte column block)
        assert any(f"(&{tile}[" in line for line in loads), src
    assert src.count("__syncthreads();") == 6, src  # one per T.alloc_barrier, before the loops
    assert ("tl::tma_store<4>(" in src) == (not is_causal), src
    # P V left in flight: the register-A wgmma with one group pending, in the loop and
    # once after it; V comes through TMA only, so without the proxy fence.
    pv = f"tl::wgmma_gemm_rs<{block_M}, {dim}, 128, {block_M // 64}, 1, false"
    assert src.count(pv + (", 1, false>(" if overlap else ", 0, false>(")) == (
        2 if overlap else 1
    ), src
    rng = np.random.default_rng(dim + block_M)
    q, k, v = (
        rng.standard_normal((batch, seq_len, heads, dim)).astype(np.float16) for _ in range(3)
    )
    out = kernel(q, k, v)
    np.testing.assert_allclose(
        out.astype(np.float64), fa.reference(q, k, v, is_causal), rtol=1e-2, atol=1e-2
    )


def test_causal_head_groups_divide_the_pairs():
    """causal_group's default keeps a group's K and V within 16 MB (1 MB per pair at
    S=4096, D=64 in bfloat16: 16 pairs; D=128: 8), and a group size always divides
    batch * heads; causal_order visits every (row tile, batch, head) once."""
    fa = load_example("flash_attention")
    assert fa.causal_group(8, 16, 4096, 64, "bfloat16", None) == 16
    assert fa.causal_group(8, 16, 4096, 128, "bfloat16", None) == 8
    assert fa.causal_group(2, 3, 4096, 128, "float16", 4) == 3
    assert fa.causal_group(1, 7, 64, 64, "float16", None) == 7
    for batch, heads, num_m, group in [(2, 3, 5, 3), (2, 3, 5, 2), (8, 16, 22, 16), (1, 1, 4, 1)]:
        seen = [
            fa.causal_order(block, num_m, heads, group) for block in range(num_m * batch * heads)
        ]
        assert sorted(seen) == [
            (m, b, h) for m in range(num_m) for b in range(batch) for h in range(heads)
        ]
        assert seen[0][0] == num_m - 1  # the longest first
    with pytest.raises(ValueError, match="head_group must be a positive int or None, got 0"):
        fa.causal_group(2, 2, 64, 64, "float16", 0)


@pytest.mark.parametrize("target", TARGETS, indirect=True)
@pytest.mark.parametrize("head_group", [1, 2, None])
def test_flash_attention_causal_head_groups(target, head_group):
    """The causal forward with its blocks ordered in groups of (batch, head) pairs: 2 x 3
    pairs, 200 tokens (the first row tile starts before row 0)."""
    fa = load_example("flash_attention")
    batch, heads, seq_len, dim = 2, 3, 200, 64
    rng = np.random.default_rng(7)
    q, k, v = (
        rng.standard_normal((batch, seq_len, heads, dim)).astype(np.float16) for _ in range(3)
    )
    kernel = fa.flash_attention(batch, heads, seq_len, dim, True, 64, 64, head_group=head_group)
    np.testing.assert_allclose(
        kernel(q, k, v).astype(np.float64), fa.reference(q, k, v, True), rtol=1e-2, atol=1e-2
    )
