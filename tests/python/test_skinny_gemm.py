"""examples/skinny_gemm.py's kernel family (C = A @ B^T with few rows, B stored (N, K) or
(K, N)) at small sizes on the cpu target and in the CUDA emulator for sm_80 (mma.sync,
cp.async) and sm_90a (wgmma, TMA), against numpy in float64: plain and swapped
(C^T = B @ A^T) tiles, split-K with its reduction kernel, N and K that the tiles do not
divide. On sm_90a a 16-row tile cannot use wgmma (m64) and must fall back to mma.sync,
while the swapped tile uses wgmma; the generated source is checked for both.
tests/gpu/test_skinny_gemm_gpu.py runs the full shapes (N = K = 8192) against torch."""

import importlib.util
import pathlib

import ml_dtypes
import numpy as np
import pytest
import tilelang

_spec = importlib.util.spec_from_file_location(
    "skinny_gemm_example", pathlib.Path(__file__).parents[2] / "examples" / "skinny_gemm.py"
)
skinny = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(skinny)

CPU = "cpu"
SM80 = "cuda -arch=sm_80 -emulate"
SM90A = "cuda -arch=sm_90a -emulate"
NP_DTYPES = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}
rng = np.random.default_rng(816)


def operands(M, N, K, dtype, b_layout):
    a = rng.standard_normal((M, K)).astype(NP_DTYPES[dtype])
    b = rng.standard_normal((N, K) if b_layout == "nk" else (K, N)).astype(NP_DTYPES[dtype])
    bf = b.astype(np.float64)
    return a, b, a.astype(np.float64) @ (bf.T if b_layout == "nk" else bf)


def check(c, ref, dtype):
    """A float32 sum rounded once to the output dtype."""
    assert c.dtype == NP_DTYPES[dtype] and c.shape == ref.shape
    eps = 2.0**-8 if dtype == "bfloat16" else 2.0**-11
    err = np.abs(c.astype(np.float64) - ref)
    bad = err > eps * np.abs(ref) + 1e-3
    assert not bad.any(), f"{int(bad.sum())} of {bad.size} wrong, max abs err {float(err.max())}"


# name: (M, N, K, (block_M, block_N, block_K, stages, threads, split_k, swap_ab), dtype, B layout)
CASES = {
    "m16_plain_nk": (16, 256, 256, (16, 64, 64, 3, 128, 1, False), "bfloat16", "nk"),
    "m16_swap_nk": (16, 256, 256, (16, 64, 128, 3, 128, 1, True), "float16", "nk"),
    "m16_splitk_kn": (16, 256, 256, (16, 64, 64, 2, 128, 2, False), "bfloat16", "kn"),
    "m16_swap_splitk_kn": (16, 256, 256, (16, 64, 64, 3, 128, 2, True), "bfloat16", "kn"),
    "m16_tails_swap_splitk": (16, 200, 136, (16, 64, 32, 4, 128, 3, True), "bfloat16", "nk"),
    "m13_tails_plain": (13, 72, 88, (16, 64, 32, 3, 128, 1, False), "float16", "nk"),
    "m64_plain_nk": (64, 128, 256, (64, 64, 64, 3, 128, 1, False), "bfloat16", "nk"),
    "m48_tails_plain_kn": (48, 72, 120, (64, 64, 32, 2, 128, 2, False), "float16", "kn"),
    # Rows of A and B that are not 16-byte multiples: no TMA, cp.async on sm_90a too.
    "m16_k100_swap": (16, 96, 100, (16, 64, 32, 3, 128, 1, True), "bfloat16", "nk"),
    "m16_n100_splitk_kn": (16, 100, 64, (16, 64, 32, 2, 128, 2, False), "float16", "kn"),
}


@pytest.mark.parametrize("target", [CPU, SM80, SM90A])
@pytest.mark.parametrize("name", sorted(CASES))
def test_skinny_gemm_matches_numpy(name, target):
    M, N, K, config, dtype, b_layout = CASES[name]
    a, b, ref = operands(M, N, K, dtype, b_layout)
    c = skinny.skinny_matmul(M, N, K, config, dtype, b_layout, target=target)(a, b)
    check(c, ref, dtype)


def gemm_source(M, N, K, config, b_layout, target):
    bM, bN, bK, stages, threads, split_k, swap = config
    func = skinny.skinny_gemm.get_tir(
        M, N, K, bM, bN, bK, stages, threads, split_k, swap, b_layout, "bfloat16"
    )
    return tilelang.compile(func, out_idx=[-1], target=target).get_kernel_source()


def test_on_sm90a_a_16_row_tile_takes_mma_sync_and_the_swapped_tile_wgmma():
    plain = gemm_source(16, 256, 256, (16, 64, 64, 3, 128, 1, False), "nk", SM90A)
    assert "tl::gemm_ss<" in plain and "wgmma" not in plain, plain
    swapped = gemm_source(16, 256, 256, (16, 64, 128, 3, 128, 1, True), "nk", SM90A)
    assert "tl::wgmma_gemm_ss<" in swapped, swapped
    # Both operands come in through TMA (K rows of 512 bytes are 16-byte multiples).
    assert swapped.count("tl::tma_load<") >= 2 and "tl::cp_async_gs" not in swapped, swapped


def test_on_sm80_the_loads_are_a_cp_async_pipeline():
    src = gemm_source(16, 256, 256, (16, 64, 64, 3, 128, 1, False), "nk", SM80)
    assert "tl::gemm_ss<" in src and "tl::cp_async_gs" in src and "tma" not in src, src


# Stream-K: (M, N, K, (block_N, block_K, stages, pairs), slots): 4 tiles of 8 K steps over
# 5 pairs (tiles shared by two pairs), 4 tiles of 16 over 9 (some by three), and as many
# pairs as tiles (whole tiles, no partials).
STREAMK = {
    "two_per_tile": (128, 512, 512, (128, 64, 3, 5), 1),
    "three_per_tile": (128, 512, 1024, (128, 64, 4, 9), 2),
    "whole_tiles": (128, 256, 512, (128, 64, 2, 2), 1),
}


@pytest.mark.parametrize("target", [CPU, SM90A])
@pytest.mark.parametrize("name", sorted(STREAMK))
def test_streamk_matches_numpy_twice(name, target):
    M, N, K, config, slots = STREAMK[name]
    assert skinny.streamk_plan(N, K, *config[:2], config[3])[3] == slots
    fn = skinny.skinny_matmul(M, N, K, ("streamk", *config), "bfloat16", "nk", target=target)
    for _ in range(2):  # the counters are back at zero after a call
        a, b, ref = operands(M, N, K, "bfloat16", "nk")
        check(fn(a, b), ref, "bfloat16")


def test_streamk_on_sm90a_is_warp_specialized_with_tma():
    src = tilelang.compile(
        skinny.skinny_gemm_streamk.get_tir(128, 512, 1024, 128, 64, 4, 6), out_idx=[2], target=SM90A
    ).get_kernel_source()
    assert (
        "tl::setmaxnreg_dec<" in src and "tl::tma_load<2>(" in src and "tl::wgmma_gemm_ss<" in src
    )
    assert "tl::AtomicAdd(" in src and "tl::AtomicLoad(" in src  # the counters


@pytest.mark.parametrize(
    "args, message",
    [
        ((128, 500, 512), "N and K must be multiples of block_N and block_K; got N=500"),
        ((128, 512, 512, 128, 64, 3, 3), "pairs must be at least the 4 column tiles"),
        ((96, 512, 512), "M must be two halves of a multiple of 64 rows; got M=96"),
    ],
)
def test_streamk_bad_shapes_are_named(args, message):
    with pytest.raises(ValueError, match=message):
        skinny.skinny_gemm_streamk.get_tir(*args)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"b_layout": "nn"}, "b_layout must be 'nk' or 'kn', got 'nn'"),
        ({"split_k": 0}, "split_k must be at least 1, got 0"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        skinny.skinny_gemm.get_tir(16, 64, 64, **kwargs)
