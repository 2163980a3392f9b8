"""T.gemm_sp on wgmma.mma_async.sp (sm_90a's default; the pass config tl.gemm_sp_wgmma=False
keeps mma.sp): lower_fragments
offers the compressed gemm to the warpgroup MMA (tl::wgmma_gemm_sp_ss, A_sparse in the wgmma
layout of its K / 2-wide rows, E unswizzled, the wgmma accumulator), emulated against numpy
for float16 and bfloat16, every transpose, ragged M / N / K, one and two warpgroups, in and
out of T.Pipelined (warp-specialized where every tile comes through TMA); the choice and
its refusals logged; NVRTC and nvcc accept the example's source, ptxas spills nothing and
the SASS runs HGMMA.SP in the main loop."""

import importlib.util
import logging
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
import tilelang
from tilelang.utils.target import available_targets

sys.path.insert(0, os.path.dirname(__file__))
from test_examples_cuda_source import nvcc  # noqa: F401  (the fixture)
from test_gemm_sp import operands, sparse_gemm
from test_gemm_sp_mma import cubin_with_report, require_cuobjdump, spill_bytes

ROOT = pathlib.Path(__file__).parents[2]
SM90A = "cuda -arch=sm_90a -emulate"
ON = {"tl.gemm_sp_wgmma": True}
WGMMA_SP = "tl::wgmma_gemm_sp_ss<"
MMA_SP = "tl::gemm_sp_ss<"


def flag(v):
    return str(bool(v)).lower()


def check(
    kernel, M, N, K, dtype, meta="int16", trans_A=False, trans_B=False, trans_E=False, seed=0
):
    a_sparse, e, b, ref = operands(M, N, K, dtype, meta, trans_A, trans_B, trans_E, seed=seed)
    got = np.asarray(kernel(a_sparse, e, b)).astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("trans_A", [False, True])
@pytest.mark.parametrize("trans_B", [False, True])
def test_wgmma_sp_matches_numpy_every_transpose(dtype, trans_A, trans_B):
    # M, N and K that the tiles do not divide: TMA and the predicated copies fill the
    # tails with zeros, and E's zero codes read as positions 0 and 1.
    M, N, K = 72, 56, 208
    func = sparse_gemm(M, N, K, 64, 32, 64, dtype, "int16", trans_A, trans_B)
    kernel = tilelang.compile(func, out_idx=[3], target=SM90A, pass_configs=ON)
    source = kernel.get_kernel_source()
    assert f"{WGMMA_SP}64, 32, 64, 1, 1, {flag(trans_A)}, {flag(trans_B)}, false" in source
    assert MMA_SP not in source and "sp_code" not in source
    check(kernel, M, N, K, dtype, trans_A=trans_A, trans_B=trans_B, seed=trans_A + 2 * trans_B)


# (M, N, K, bM, bN, bK, stages, threads, meta, trans_E, the call's template head, what
# the source shows of the loop)
SHAPES = [
    # two warpgroups along M, and along N (B N-major: each warpgroup one 32-wide half)
    (136, 40, 192, 128, 32, 64, 2, 256, "int16", False, "128, 32, 64, 2, 1", "tl::tma_load<"),
    (72, 120, 128, 64, 64, 64, 2, 256, "int16", False, "64, 64, 64, 1, 2", "tl::tma_load<"),
    # not pipelined (num_stages 0 and 1): plain copies, the gemm waits for its wgmmas
    (72, 56, 208, 64, 32, 64, 0, 128, "int16", False, "64, 32, 64, 1, 1, false, false, false>", ""),
    (72, 56, 208, 64, 32, 64, 1, 128, "uint8", False, "64, 32, 64, 1, 1, false, false, false>", ""),
    # E rows of 16 bytes (and global rows a multiple of 16 bytes): every tile comes
    # through TMA, so the pipeline is warp-specialized
    (64, 64, 256, 64, 64, 128, 2, 128, "int16", False, "64, 64, 128, 1, 1", "tl::setmaxnreg_dec<"),
    (96, 40, 384, 64, 64, 128, 2, 128, "int32", False, "64, 64, 128, 1, 1", "tl::setmaxnreg_dec<"),
    # metadata stored transposed
    (64, 32, 128, 64, 32, 64, 2, 128, "int16", True, "64, 32, 64, 1, 1, false, false, true", ""),
]


@pytest.mark.parametrize(
    "M, N, K, bM, bN, bK, stages, threads, meta, trans_E, call, loop",
    SHAPES,
    ids=[
        f"{s[0]}x{s[1]}x{s[2]}-tile{s[3]}x{s[4]}x{s[5]}-st{s[6]}-t{s[7]}-{s[8]}{'-tE' * s[9]}"
        for s in SHAPES
    ],
)
def test_wgmma_sp_warpgroups_and_pipelines(
    M, N, K, bM, bN, bK, stages, threads, meta, trans_E, call, loop
):
    dtype = "bfloat16" if threads == 256 else "float16"
    func = sparse_gemm(
        M, N, K, bM, bN, bK, dtype, meta, stages=stages, threads=threads, trans_E=trans_E
    )
    kernel = tilelang.compile(func, out_idx=[3], target=SM90A, pass_configs=ON)
    source = kernel.get_kernel_source()
    assert WGMMA_SP + call in source, [ln for ln in source.splitlines() if "gemm_sp" in ln]
    assert loop in source
    if loop == "tl::setmaxnreg_dec<":  # the producer warpgroup loads E by TMA as well
        assert re.search(r"tl::tma_load<2>\(\(&E_shared", source)
    check(kernel, M, N, K, dtype, meta, trans_E=trans_E, seed=stages + threads)


def test_the_choice_of_wgmma_sp_is_logged(caplog, fresh_compiles):
    """wgmma.sp is sm_90a's default (1.6-1.9x mma.sp on an H100, bench/RESULTS.md
    "gemm_sp_cuda — 2026-12-06")."""
    M, N, K = 64, 64, 128
    with caplog.at_level(logging.DEBUG, logger="tilelang"):
        kernel = tilelang.compile(
            sparse_gemm(M, N, K, 64, 64, 64, "float16", "int16"), out_idx=[3], target=SM90A
        )
    assert (
        "T.gemm_sp runs on wgmma.mma_async.sp (tl.gemm_sp_wgmma=False keeps mma.sp)" in caplog.text
    )
    assert WGMMA_SP in kernel.get_kernel_source()


def test_a_block_of_two_warps_keeps_mma_sp(caplog, fresh_compiles):
    """64 threads are no warpgroup: mma.sp runs the gemm, and the log says why."""
    M, N, K = 40, 32, 128
    func = sparse_gemm(M, N, K, 32, 32, 64, "float16", "int16", threads=64)
    with caplog.at_level(logging.DEBUG, logger="tilelang"):
        kernel = tilelang.compile(func, out_idx=[3], target=SM90A, pass_configs=ON)
    assert (
        "T.gemm_sp cannot use wgmma.mma_async.sp, so it runs on mma.sp: "
        "the block's 64 threads are not whole warpgroups of 128"
    ) in caplog.text
    source = kernel.get_kernel_source()
    assert MMA_SP in source and WGMMA_SP not in source
    check(kernel, M, N, K, "float16", seed=3)


@pytest.mark.parametrize(
    "configs",
    [
        {"tl.gemm_sp_wgmma": False},
        {"tl.disable_wgmma": True},
        {"tl.gemm_sp_wgmma": True, "tl.disable_wgmma": True},
    ],
)
def test_mma_sp_when_the_config_is_off(configs):
    """tl.gemm_sp_wgmma=False (or tl.disable_wgmma): T.gemm_sp stays on mma.sp."""
    func = sparse_gemm(64, 64, 128, 64, 64, 64, "float16", "int16")
    source = tilelang.compile(
        func, out_idx=[3], target=SM90A, pass_configs=configs
    ).get_kernel_source()
    assert MMA_SP in source and WGMMA_SP not in source


def test_sm80_ignores_the_config():
    func = sparse_gemm(64, 64, 128, 64, 64, 64, "float16", "int16")
    source = tilelang.compile(
        func, out_idx=[3], target="cuda -arch=sm_80 -emulate", pass_configs=ON
    )
    assert MMA_SP in source.get_kernel_source()


def example_source(block_K=64):
    spec = importlib.util.spec_from_file_location(
        "example_gemm_sp", ROOT / "examples" / "gemm_sp.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    func = mod.gemm_sp.get_tir(4096, 4096, 4096, block_K=block_K)  # the example's default tiles
    from tilelang import _C
    from tilelang.utils.target import determine_target

    return _C.generate_source(func.core, determine_target("cuda -arch=sm_90a"), ON)


needs_nvrtc = pytest.mark.skipif(
    "cuda" not in available_targets(), reason="NVRTC is not on this machine"
)


@needs_nvrtc
def test_nvrtc_accepts_the_examples_wgmma_sp_source():
    func_source = example_source()
    assert f"{WGMMA_SP}128, 128, 64, 1, 1, false, false, false, 1, false>" in func_source
    assert MMA_SP not in func_source
    from test_device_sm80 import nvrtc_compile

    ok, log = nvrtc_compile("sm_90a", func_source)[:2]
    assert ok, log


@pytest.fixture(scope="module")
def example_cubin(nvcc, tmp_path_factory):  # noqa: F811
    """The example's default config for sm_90a with tl.gemm_sp_wgmma, through nvcc -Xptxas -v:
    (cubin path, ptxas report)."""
    return cubin_with_report(
        nvcc, example_source(), "sm_90a", tmp_path_factory.mktemp("gemm_sp_wgmma")
    )


def test_ptxas_spills_nothing_for_the_examples_default_config(example_cubin):
    report = example_cubin[1]
    spills = spill_bytes(report)
    assert spills and max(spills) == 0, report


def test_the_sass_runs_hgmma_sp_in_the_main_loop(example_cubin):
    tool = require_cuobjdump()
    sass = subprocess.run(
        [tool, "-sass", str(example_cubin[0])], capture_output=True, text=True, check=True
    ).stdout
    lines = sass.splitlines()
    hgmma = [i for i, ln in enumerate(lines) if re.search(r"\bHGMMA\.", ln)]
    assert hgmma and all(
        re.search(r"\bHGMMA\.64x128x32\.F32\.SP\b|\bHGMMA\.SP\.", lines[i]) for i in hgmma
    ), [lines[i] for i in hgmma][:8]
    assert not re.search(r"\bHMMA\.", sass), "mma.sync / mma.sp left in the SASS"
    # The main loop: a backward branch whose body holds a K tile's 2 x 2 m64n128k32 (two
    # m64 blocks of the 128-row tile, two k32 steps of the 64-wide K tile).
    addr = {}  # instruction address -> line
    for i, ln in enumerate(lines):
        if m := re.match(r"\s*/\*([0-9a-f]{4,})\*/", ln):
            addr[int(m.group(1), 16)] = i
    loops = []
    for i, ln in enumerate(lines):
        m = re.search(r"/\*([0-9a-f]{4,})\*/.*\bBRA\s+0x([0-9a-f]+)", ln)
        if m and int(m.group(2), 16) < int(m.group(1), 16) and int(m.group(2), 16) in addr:
            loops.append((addr[int(m.group(2), 16)], i))
    assert any(sum(lo < h < hi for h in hgmma) >= 4 for lo, hi in loops), (loops, hgmma)


def test_8bit_operands_stay_on_mma_sp(caplog, fresh_compiles):
    """wgmma.sp is emitted for 16-bit operands: an int8 T.gemm_sp keeps mma.sp m16n8k64."""
    M, N, K = 64, 64, 128
    func = sparse_gemm(M, N, K, 64, 64, 128, "int8", "int32", accum="int32")
    with caplog.at_level(logging.DEBUG, logger="tilelang"):
        kernel = tilelang.compile(func, out_idx=[3], target=SM90A, pass_configs=ON)
    assert (
        "T.gemm_sp runs on mma.sp: wgmma.mma_async.sp is emitted for float16 and bfloat16"
        in caplog.text
    )
    source = kernel.get_kernel_source()
    assert MMA_SP in source and WGMMA_SP not in source
    a_sparse, e, b, ref = operands(M, N, K, "int8", "int32", seed=6)
    np.testing.assert_array_equal(np.asarray(kernel(a_sparse, e, b)), ref.astype(np.int64))


def register_a_gemm(
    M, N, K, bM, bN, bK, dtype, meta="int16", trans_B=False, threads=128, stages=2, policy=None
):
    """T.gemm_sp with A_sparse in a register fragment (TileLang's gemm_sp RS form):
    the kept values come from global memory into the fragment, E and B through shared
    memory."""
    import tilelang.language as T
    from tilelang.utils.sparse import e_factor

    ef = e_factor(dtype, meta)
    b_shape, bs_shape = ((N, K), (bN, bK)) if trans_B else ((K, N), (bK, bN))
    kwargs = {} if policy is None else {"policy": policy}

    @T.prim_func
    def main(
        A_sparse: T.Tensor((M, K // 2), dtype),
        E: T.Tensor((M, K // ef), meta),
        B: T.Tensor(b_shape, dtype),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_frag = T.alloc_fragment((bM, bK // 2), dtype)
            E_shared = T.alloc_shared((bM, bK // ef), meta)
            B_shared = T.alloc_shared(bs_shape, dtype)
            C_frag = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_frag)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                T.copy(A_sparse[by * bM, k * bK // 2], A_frag)
                T.copy(E[by * bM, k * bK // ef], E_shared)
                if trans_B:
                    T.copy(B[bx * bN, k * bK], B_shared)
                else:
                    T.copy(B[k * bK, bx * bN], B_shared)
                T.gemm_sp(A_frag, E_shared, B_shared, C_frag, transpose_B=trans_B, **kwargs)
            T.copy(C_frag, C[by * bM, bx * bN])

    return main


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("trans_B", [False, True])
@pytest.mark.parametrize(
    "M, N, K, bM, bN, bK, threads",
    [(128, 64, 256, 64, 64, 64, 128), (72, 56, 208, 128, 32, 64, 256)],
)
def test_a_sparse_from_registers_runs_on_wgmma_sp(
    caplog, fresh_compiles, dtype, trans_B, M, N, K, bM, bN, bK, threads
):
    """wgmma.mma_async.sp with A from registers (tl::wgmma_gemm_sp_rs), one and two
    warpgroups along M, ragged M / N / K, against numpy."""
    with caplog.at_level(logging.DEBUG, logger="tilelang"):
        kernel = tilelang.compile(
            register_a_gemm(M, N, K, bM, bN, bK, dtype, trans_B=trans_B, threads=threads),
            out_idx=[3],
            target=SM90A,
        )
    assert "A_sparse from registers" in caplog.text
    source = kernel.get_kernel_source()
    assert (
        f"tl::wgmma_gemm_sp_rs<{bM}, {bN}, {bK}, {threads // 128}, 1, {flag(trans_B)}, false"
        in source
    )
    assert MMA_SP not in source and WGMMA_SP not in source and "sp_code" not in source
    check(kernel, M, N, K, dtype, trans_B=trans_B, seed=7 + trans_B)


@pytest.mark.parametrize(
    "configs, threads, why",
    [
        ({"tl.gemm_sp_wgmma": False}, 128, "only wgmma.mma_async.sp takes"),
        ({}, 64, "not whole warpgroups"),
    ],
)
def test_a_sparse_in_registers_elsewhere_is_decoded(caplog, fresh_compiles, configs, threads, why):
    """Without wgmma.sp (the config off, or a block of 64 threads) a register A_sparse
    keeps the decoded tile, and the result is the same."""
    M, N, K = 64, 32, 128
    with caplog.at_level(logging.DEBUG, logger="tilelang"):
        kernel = tilelang.compile(
            register_a_gemm(M, N, K, 64, 32, 64, "float16", threads=threads),
            out_idx=[3],
            target=SM90A,
            pass_configs=configs,
        )
    assert "T.gemm_sp decodes A into a dense tile" in caplog.text and why in caplog.text
    assert "wgmma_gemm_sp" not in kernel.get_kernel_source()
    check(kernel, M, N, K, "float16", seed=9)


@pytest.mark.skipif("cuda" not in available_targets(), reason="needs NVRTC")
def test_register_a_source_compiles_to_hgmma_sp(nvcc, tmp_path):  # noqa: F811
    """nvcc accepts the sm_90a source, ptxas spills nothing, and the SASS runs
    HGMMA.SP with A from registers (no descriptor for A)."""
    func = register_a_gemm(4096, 4096, 4096, 128, 128, 64, "float16", threads=256)
    source = tilelang.compile(func, out_idx=[3], target="cuda -arch=sm_90a").get_kernel_source()
    assert "tl::wgmma_gemm_sp_rs<128, 128, 64, 2, 1" in source
    cubin, report = cubin_with_report(nvcc, source, "sm_90a", tmp_path)
    spills = spill_bytes(report)
    assert spills and max(spills) == 0, report
    tool = require_cuobjdump()
    sass = subprocess.run(
        [tool, "-sass", str(cubin)], capture_output=True, text=True, check=True
    ).stdout
    # A from a register (`R24, R88, gdesc[...]`), not a descriptor (`R24, gdesc[...]`).
    a_regs = re.findall(r"\bHGMMA\.SP\.64x128x32\.F32 R\d+, R\d+, gdesc\[", sass)
    assert len(a_regs) >= 4 and not re.search(r"HGMMA\.SP\S* R\d+, gdesc", sass), sass[:3000]
    assert "HMMA" not in sass.replace("HGMMA", "")


@pytest.mark.parametrize("bN", [96, 160])
def test_a_k_major_b_of_a_wide_tile_is_one_wgmma_sp_per_k_step(bN):
    """TileLang's issue 2928 for T.gemm_sp: a block_N that is itself a wgmma width (96,
    112, 160, ...) with B K-major runs as one m64nNk32 per k-step, not as n32 pieces
    (an N-major B keeps power-of-two instructions: whole swizzle blocks)."""
    M, N, K = 128, 2 * bN, 128
    func = sparse_gemm(M, N, K, 64, bN, 64, "float16", "int16", trans_B=True)
    kernel = tilelang.compile(func, out_idx=[3], target=SM90A, pass_configs=ON)
    check(kernel, M, N, K, "float16", trans_B=True, seed=bN)
    if "cuda" not in available_targets():
        return
    from test_device_sm80 import nvrtc_compile

    ok, log, ptx = nvrtc_compile("sm_90a", kernel.get_kernel_source(), want_ptx=True)
    assert ok, log
    shapes = set(re.findall(r"wgmma\.mma_async\.sp\.sync\.aligned\.(m\d+n\d+k\d+)", ptx))
    assert shapes == {f"m64n{bN}k32"}, shapes
