"""Regressions of fragment layout inference and lowering on CUDA (issue 4), run on
the CUDA emulator (sm_80 and sm_90a sources, executed on the CPU) and on the cpu
target, against float64 numpy:

- per-row vectors shared by tiles of different widths (FlashAttention with
  block_N != dim) keep every fragment in registers instead of demoting them all to
  shared memory, and a demotion that remains says why on the `tilelang` logger;
- a fallback gemm (tl::gemm_mma) and a register gemm sharing one swizzled tile;
- an unrolled constant-trip pipelined loop binding the same variable twice in one
  C++ scope."""

import importlib.util
import logging
import pathlib
import re

import numpy as np
import pytest
import tilelang
import tilelang.language as T

EXAMPLES = pathlib.Path(__file__).parents[2] / "examples"
SM80 = "cuda -arch=sm_80 -emulate"
SM90A = "cuda -arch=sm_90a -emulate"
rng = np.random.default_rng(11)


def load_flash_attention():
    spec = importlib.util.spec_from_file_location(
        "fragment_bugs_flash_attention", EXAMPLES / "flash_attention.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FA = load_flash_attention()
FA_FRAGMENTS = ["acc_s", "acc_o", "scores_max", "scores_max_prev", "scores_scale", "scores_sum"]


def compile_fa(target, seq_len, dim, causal, block_M, block_N, threads):
    prim = FA.flash_attention.get_tir(1, 2, seq_len, dim, causal, block_M, block_N, threads, 1)
    return tilelang.compile(prim, out_idx=[3], target=target)


@pytest.fixture
def uncached():
    """The compiler logs while it compiles: a kernel loaded from the cache logs nothing."""
    tilelang.disable_cache()
    yield
    tilelang.enable_cache()


def in_registers(source, name):
    """`name` is a per-thread array, not a pointer into the shared-memory window."""
    return re.search(rf"\b{name}\[\d+\];", source) is not None and not re.search(
        rf"\*\s*{name}\s*=\s*reinterpret_cast", source
    )


def check_fa(kernel, seq_len, dim, causal):
    q, k, v = (rng.standard_normal((1, seq_len, 2, dim)).astype(np.float16) for _ in range(3))
    out = kernel(q, k, v)
    np.testing.assert_allclose(
        out.astype(np.float64), FA.reference(q, k, v, causal), rtol=1e-2, atol=1e-2
    )


# (target, block_M, block_N, dim, threads, the two gemm calls the source must hold)
FA_CASES = {
    "sm80_bn32_d64": (
        SM80,
        64,
        32,
        64,
        128,
        ["tl::gemm_ss<64, 32, 64, 4, 1,", "tl::gemm_rs<64, 64, 32, 4, 1,"],
    ),
    "sm80_bn64_d128": (
        SM80,
        64,
        64,
        128,
        128,
        ["tl::gemm_ss<64, 64, 128, 4, 1,", "tl::gemm_rs<64, 128, 64, 4, 1,"],
    ),
    "sm90a_bn64_d128": (
        SM90A,
        64,
        64,
        128,
        128,
        ["tl::wgmma_gemm_ss<64, 64, 128, 1, 1,", "tl::wgmma_gemm_rs<64, 128, 64, 1, 1,"],
    ),
}


@pytest.mark.parametrize("name", sorted(FA_CASES))
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_flash_attention_with_block_n_not_dim_keeps_fragments_in_registers(name, causal):
    # The row max / scale / sum vectors scale both the scores (block_M x block_N) and
    # the output (block_M x dim). Under the default Square policy the two gemms split M
    # differently; they take FullRow, so both tiles give each thread the same rows and
    # the vectors stay in registers (before: everything went to shared memory).
    target, block_M, block_N, dim, threads, gemms = FA_CASES[name]
    seq_len = 2 * block_N + 7  # a partial last key tile
    kernel = compile_fa(target, seq_len, dim, causal, block_M, block_N, threads)
    source = kernel.get_kernel_source()
    for g in gemms:
        assert g in source, (g, source)
    for frag in FA_FRAGMENTS + ["acc_s_cast", "logsum"]:
        assert in_registers(source, frag), frag
    assert "gemm_mma" not in source
    check_fa(kernel, seq_len, dim, causal)


def test_flash_attention_with_block_n_not_dim_on_the_cpu():
    kernel = compile_fa("cpu", 45, 64, True, 32, 16, 128)
    check_fa(kernel, 45, 64, True)


def test_a_demotion_names_the_fragment_and_the_reason(caplog, uncached):
    # block_M = 32 over 4 warps cannot put every warp along M (8 rows per warp). Under
    # Square the scores would split 2 x 2 and the output 1 x 4, and no register vector
    # would hold the rows of both (every fragment went to shared memory). Both gemms
    # take FullRow, which gives the most warps along M that fit, 2 x 2 for both: the
    # row vectors keep their registers. P (acc_s_cast), the register A of P @ V, needs
    # every warp along M and alone goes to shared memory; the log says which and why.
    with caplog.at_level(logging.DEBUG, logger="tilelang"):
        kernel = compile_fa(SM80, 40, 64, False, 32, 32, 128)
    text = caplog.text
    assert "fragment 'acc_s_cast' stays in shared memory" in text, text
    assert "with every warp along M (policy FullRow); here 2 x 2 warps" in text, text
    source = kernel.get_kernel_source()
    for frag in FA_FRAGMENTS:
        assert f"fragment '{frag}'" not in text, text
        assert in_registers(source, frag), frag
    check_fa(kernel, 40, 64, False)


def gemm_then_store(chunked):
    """A 128^3 gemm into C_f, stored whole (T.copy) or as two column chunks read at an
    offset (C_f[i, c * 64 + j])."""
    M = N = K = 128

    @T.prim_func
    def kernel(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared((K, N), "float16")
            C_s = T.alloc_shared((M, 64), "float32")
            C_f = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(C_f)
            T.gemm(A_s, B_s, C_f)
            if chunked:
                for c in range(2):
                    for i, j in T.Parallel(M, 64):
                        C_s[i, j] = C_f[i, c * 64 + j]
                    T.copy(C_s, C[0, c * 64])
            else:
                T.copy(C_f, C)

    return kernel


def test_a_gemm_accumulator_pushed_to_shared_memory_is_a_warning(caplog, uncached):
    # Reading the accumulator at an offset (a column chunk of the tile) is not a
    # T.Parallel loop's own index, so C_f leaves the registers and the gemm becomes a
    # scalar loop: correct, but a performance cliff the default log level reports,
    # with the gemm's line and the use that caused it.
    with caplog.at_level(logging.WARNING, logger="tilelang"):
        kernel = tilelang.compile(gemm_then_store(True), out_idx=[2], target=SM80)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, caplog.text
    text = warnings[0].getMessage()
    assert "T.gemm runs as a scalar loop, not on the tensor cores" in text, text
    assert "accumulator 'C_f' stays in shared memory" in text, text
    assert "indexed by something other than the T.Parallel loop's variables" in text, text
    # The gemm's line and the use's.
    assert text.count("test_fragment_inference_bugs.py:") == 2, text
    a = rng.standard_normal((128, 128)).astype(np.float16)
    b = rng.standard_normal((128, 128)).astype(np.float16)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(kernel(a, b), ref, rtol=1e-3, atol=1e-2)

    # The tile stored whole keeps the registers and warns about nothing.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tilelang"):
        kernel = tilelang.compile(gemm_then_store(False), out_idx=[2], target=SM80)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert in_registers(kernel.get_kernel_source(), "C_f")
    np.testing.assert_allclose(kernel(a, b), ref, rtol=1e-3, atol=1e-2)


def rows_of_two_gemms(policy):
    """Two gemms with different N scaled by one row vector of the first's row max."""
    M, N1, N2, K = 64, 32, 64, 32

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B1: T.Tensor((K, N1), "float16"),
        B2: T.Tensor((K, N2), "float16"),
        C1: T.Tensor((M, N1), "float32"),
        C2: T.Tensor((M, N2), "float32"),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, K), "float16")
            B1_s = T.alloc_shared((K, N1), "float16")
            B2_s = T.alloc_shared((K, N2), "float16")
            c1 = T.alloc_fragment((M, N1), "float32")
            c2 = T.alloc_fragment((M, N2), "float32")
            mx = T.alloc_fragment((M,), "float32")
            T.copy(A, A_s)
            T.copy(B1, B1_s)
            T.copy(B2, B2_s)
            T.gemm(A_s, B1_s, c1, clear_accum=True, policy=policy)
            T.gemm(A_s, B2_s, c2, clear_accum=True, policy=policy)
            T.reduce_max(c1, mx, dim=1)
            for i, j in T.Parallel(M, N1):
                c1[i, j] = c1[i, j] - mx[i]
            for i, j in T.Parallel(M, N2):
                c2[i, j] = c2[i, j] * mx[i]
            T.copy(c1, C1)
            T.copy(c2, C2)

    return main


@pytest.mark.parametrize("target", [SM80, SM90A, "cpu"])
@pytest.mark.parametrize("policy", [T.GemmWarpPolicy.Square, T.GemmWarpPolicy.FullRow])
def test_one_row_vector_scales_tiles_of_two_widths(target, policy):
    kernel = tilelang.compile(rows_of_two_gemms(policy), target=target)
    if target != "cpu":
        source = kernel.get_kernel_source()
        for frag in ["c1", "c2", "mx"]:
            assert in_registers(source, frag), (frag, source)
    a = rng.standard_normal((64, 32)).astype(np.float16)
    b1 = rng.standard_normal((32, 32)).astype(np.float16)
    b2 = rng.standard_normal((32, 64)).astype(np.float16)
    c1, c2 = np.zeros((64, 32), np.float32), np.zeros((64, 64), np.float32)
    kernel(a, b1, b2, c1, c2)
    af = a.astype(np.float64)
    s1, s2 = af @ b1.astype(np.float64), af @ b2.astype(np.float64)
    mx = s1.max(axis=1, keepdims=True)
    np.testing.assert_allclose(c1, s1 - mx, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(c2, s2 * mx, rtol=1e-4, atol=1e-2)


def fallback_and_register_gemm_share_a_tile():
    @T.prim_func
    def main(
        Q: T.Tensor((16, 64), "float16"),
        KV: T.Tensor((32, 64), "float16"),
        P: T.Tensor((16, 32), "float16"),
        S: T.Tensor((16, 32), "float32"),
        O: T.Tensor((16, 64), "float32"),
    ):
        with T.Kernel(1, threads=128):
            Q_s = T.alloc_shared((16, 64), "float16")
            KV_s = T.alloc_shared((32, 64), "float16")
            P_s = T.alloc_shared((16, 32), "float16")
            s = T.alloc_fragment((16, 32), "float32")
            o = T.alloc_fragment((16, 64), "float32")
            T.copy(Q, Q_s)
            T.copy(KV, KV_s)
            T.copy(P, P_s)
            T.clear(s)
            T.clear(o)
            T.gemm(Q_s, KV_s, s, transpose_B=True)  # a warp's N is 8: not a register gemm
            T.gemm(P_s, KV_s, o)  # gemm_ss: KV_s is swizzled
            T.copy(s, S)
            T.copy(o, O)

    return main


@pytest.mark.parametrize("target", [SM80, SM90A, "cpu"])
def test_a_fallback_gemm_reads_a_swizzled_tile_through_its_layout(target):
    kernel = tilelang.compile(fallback_and_register_gemm_share_a_tile(), target=target)
    if target != "cpu":
        source = kernel.get_kernel_source()
        assert "tl::gemm_ss<16, 64, 32, 1, 4, false, false>" in source
        # tl::gemm_mma reads row-major tiles: not this one.
        assert "tl::gemm_mma" not in source
    q = rng.standard_normal((16, 64)).astype(np.float16)
    kv = rng.standard_normal((32, 64)).astype(np.float16)
    p = rng.standard_normal((16, 32)).astype(np.float16)
    s, o = np.zeros((16, 32), np.float32), np.zeros((16, 64), np.float32)
    kernel(q, kv, p, s, o)
    f = lambda x: x.astype(np.float64)
    np.testing.assert_allclose(s, f(q) @ f(kv).T, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(o, f(p) @ f(kv), rtol=1e-4, atol=1e-3)


def pipelined_constant_trips():
    M, N, K = 16, 32, 64

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((2 * N, K), "float16"),
        out: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared((N, K), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_s)
            for k in T.Pipelined(2, num_stages=2):
                T.copy(B[k * N, 0], B_s)
                for i, j in T.Parallel(M, N):
                    acc[i, j] = 0
                T.gemm(A_s, B_s, acc, transpose_B=True)
                for i, j in T.Parallel(M, N):
                    out[i, j] += acc[i, j]

    return main


@pytest.mark.parametrize("target", [SM80, SM90A, "cpu"])
def test_an_unrolled_pipeline_binds_each_loop_variable_once_per_scope(target):
    # Both one-trip loops of the pipeline (steady and tail) are unrolled into one
    # scope, each with its copy of `i = tx / 8`: the second gets its own name.
    kernel = tilelang.compile(pipelined_constant_trips(), target=target)
    a = rng.standard_normal((16, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    out = rng.standard_normal((16, 32)).astype(np.float32)
    ref = out.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64).T[:, :32]
    ref += a.astype(np.float64) @ b.astype(np.float64).T[:, 32:]
    kernel(a, b, out)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-3)
