"""T.gemm with a float16 accumulator (float16 operands) on the tensor cores' f16-accumulate
instructions: mma.sync m16n8k16 .f16.f16.f16.f16 from sm_80, wgmma m64nNk16 .f16.f16.f16
on sm_90a. The emulator's twins round the way the hardware does: each instruction adds
its 16 products to the accumulator in float and rounds to float16 once
(docs/design/cuda_lowering.md, "f16 accumulators"). TileLang's own test
(testing/python/kernel/test_tilelang_kernel_gemm.py, the f16f16f16 cases) is the
kernel below with its tolerance: isclose(rtol=1e-2, atol=1e-2) on at least 99 % of the
elements against a float32 reference."""

import importlib.util
import logging
import os
import pathlib
import sys

import numpy as np
import pytest
import tilelang
import tilelang.language as T

sys.path.insert(0, os.path.dirname(__file__))
from test_device_sm80 import needs_nvrtc, nvrtc_compile

SM80 = "cuda -arch=sm_80 -emulate"
SM90A = "cuda -arch=sm_90a -emulate"
MMA_F16 = "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"
rng = np.random.default_rng(16)


def matmul(M, N, K, bM, bN, bK, ta, tb, acc, stages, threads=128, a_regs=False, b_regs=False):
    """TileLang's test kernel: C = op(A) @ op(B) tile by tile, the accumulator C_local of
    dtype `acc`; with a_regs / b_regs an operand is copied on into a fragment first."""
    a_tile = (bK, bM) if ta else (bM, bK)
    b_tile = (bN, bK) if tb else (bK, bN)

    @T.prim_func
    def main(
        A: T.Tensor((K, M) if ta else (M, K), "float16"),
        B: T.Tensor((N, K) if tb else (K, N), "float16"),
        C: T.Tensor((M, N), "float16"),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_shared = T.alloc_shared(a_tile, "float16")
            B_shared = T.alloc_shared(b_tile, "float16")
            if a_regs:
                A_local = T.alloc_fragment(a_tile, "float16")
            if b_regs:
                B_local = T.alloc_fragment(b_tile, "float16")
            C_local = T.alloc_fragment((bM, bN), acc)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                if ta:
                    T.copy(A[k * bK, by * bM], A_shared)
                else:
                    T.copy(A[by * bM, k * bK], A_shared)
                if tb:
                    T.copy(B[bx * bN, k * bK], B_shared)
                else:
                    T.copy(B[k * bK, bx * bN], B_shared)
                if a_regs:
                    T.copy(A_shared, A_local)
                    T.gemm(A_local, B_shared, C_local, ta, tb)
                elif b_regs:
                    T.copy(B_shared, B_local)
                    T.gemm(A_shared, B_local, C_local, ta, tb)
                else:
                    T.gemm(A_shared, B_shared, C_local, ta, tb)
            T.copy(C_local, C[by * bM, bx * bN])

    return main


def accumulate_into(M, N, K, bM, bN, bK, threads=128, policy=T.GemmWarpPolicy.Square):
    """C = C0 + A @ B with the float16 accumulator loaded from C0."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C0: T.Tensor((M, N), "float16"),
        C: T.Tensor((M, N), "float16"),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_f = T.alloc_fragment((bM, bN), "float16")
            T.copy(C0[by * bM, bx * bN], C_f)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f, policy=policy)
            T.copy(C_f, C[by * bM, bx * bN])

    return main


def operands(M, N, K, ta, tb):
    a = rng.uniform(-1, 1, (K, M) if ta else (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (N, K) if tb else (K, N)).astype(np.float16)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    return a, b, (af.T if ta else af) @ (bf.T if tb else bf)


def mismatched(out, ref):
    """TileLang's assert_allclose count: elements outside isclose(rtol=1e-2, atol=1e-2)."""
    return int((~np.isclose(out.astype(np.float32), ref, rtol=1e-2, atol=1e-2)).sum())


# (M, N, K, bM, bN, bK, trans_A, trans_B, stages, A in registers, B in registers): TileLang's
# f16f16f16 cases with M and N cut to a few blocks (K, which the rounding error grows
# with, kept at 768); the tails case does not divide its tiles.
CASES = {
    "nn": (256, 128, 768, 128, 128, 32, False, False, 0, False, False),
    "tn": (128, 256, 768, 128, 128, 32, True, False, 0, False, False),
    "nt": (128, 256, 768, 128, 128, 32, False, True, 3, False, False),
    "tails": (128 - 9, 256 - 7, 768 - 5, 128, 256, 32, False, False, 2, False, False),
    "rs": (256, 128, 768, 128, 128, 32, False, False, 2, True, False),
    "sr": (128, 256, 768, 128, 128, 32, False, True, 0, False, True),
}


@pytest.mark.parametrize("target", ["cpu", SM80, SM90A], ids=["cpu", "sm80", "sm90a"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_tilelang_f16_accumulator_cases_pass_its_tolerance(name, target):
    M, N, K, bM, bN, bK, ta, tb, stages, a_regs, b_regs = CASES[name]
    func = matmul(M, N, K, bM, bN, bK, ta, tb, "float16", stages, a_regs=a_regs, b_regs=b_regs)
    kernel = tilelang.compile(func, out_idx=[2], target=target)
    source = kernel.get_kernel_source()
    if target != "cpu":
        # The accumulator stays in registers and the gemm runs on the tensor cores.
        assert "alignas(4) tl::half_t C_local[" in source
        rs = a_regs and not ta
        prefix = "tl::wgmma_gemm" if target == SM90A else "tl::gemm"
        assert f"{prefix}_{'rs' if rs else 'ss'}<{bM}, {bN}, {bK}, " in source, source
    a, b, ref = operands(M, N, K, ta, tb)
    bad = mismatched(kernel(a, b), ref)
    assert bad <= M * N // 100, f"{bad} of {M * N} elements off (TileLang allows 1 %)"


def per_instruction_reference(a, b, c0, k_step):
    """c0 + a @ b with the sum rounded to float16 after every k_step products of each
    element (a, b, c0 hold small integers, so every partial sum is exact before it)."""
    acc = c0.astype(np.float64)
    af, bf = a.astype(np.float64), b.astype(np.float64)
    for k in range(0, a.shape[1], k_step):
        acc = (
            (acc + af[:, k : k + k_step] @ bf[k : k + k_step]).astype(np.float16).astype(np.float64)
        )
    return acc.astype(np.float16)


def integer_operands(M, N, K):
    """0/1 operands and even accumulators in [2048, 3072), where float16's spacing is 2:
    a sum of 16 products is an integer up to 16 and, when odd, rounds to even."""
    a = rng.integers(0, 2, (M, K)).astype(np.float16)
    b = rng.integers(0, 2, (K, N)).astype(np.float16)
    c0 = (2 * rng.integers(1024, 1536, (M, N))).astype(np.float16)
    return a, b, c0


# (args of accumulate_into, the template the gemm lowers to): register accumulators on
# mma.sync and wgmma, and a warp tile 8 wide (no ldmatrix), which keeps the accumulator
# in shared memory (tl::gemm_mma).
ROUNDING_CASES = {
    "mma_sync": (SM80, (128, 128, 64, 64, 64, 32), "tl::gemm_ss<64, 64, 32, 2, 2, false, false>"),
    "wgmma": (
        SM90A,
        (128, 128, 64, 64, 64, 32),
        "tl::wgmma_gemm_ss<64, 64, 32, 1, 1, false, false, 1, false>",
    ),
    "shared_accumulator": (
        SM80,
        (128, 40, 64, 128, 8, 32, 256, T.GemmWarpPolicy.FullRow),
        "tl::gemm_mma<128, 8, 32, false, false, false, 8, 1>",
    ),
}


@pytest.mark.parametrize("name", sorted(ROUNDING_CASES))
def test_each_instruction_rounds_to_float16_once(name):
    target, args, template = ROUNDING_CASES[name]
    M, N, K = args[:3]
    kernel = tilelang.compile(accumulate_into(*args), out_idx=[-1], target=target)
    assert template in kernel.get_kernel_source()
    a, b, c0 = integer_operands(M, N, K)
    out = kernel(a, b, c0)
    np.testing.assert_array_equal(out, per_instruction_reference(a, b, c0, 16))
    # Rounding after every product, or once per 32-deep tile, gives other sums here.
    assert (per_instruction_reference(a, b, c0, 1) != out).mean() > 0.2
    assert (per_instruction_reference(a, b, c0, 32) != out).mean() > 0.1


def load_example(name):
    path = pathlib.Path(__file__).parents[2] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"f16_accum_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("use_wgmma", [True, False], ids=["wgmma_gemm", "gemm"])
def test_warp_specialized_consumer_rounds_each_instruction_once(use_wgmma):
    # examples/gemm_ws_hopper.py (T.ws, TMA, mbarriers) with a float16 accumulator: the
    # consumer's T.wgmma_gemm / T.gemm is the f16-accumulator wgmma.
    M, N, K = 128, 128, 128
    func = load_example("gemm_ws_hopper").gemm_ws(
        M, N, K, use_wgmma=use_wgmma, accum_dtype="float16"
    )
    kernel = tilelang.compile(func, out_idx=[2], target=SM90A)
    source = kernel.get_kernel_source()
    assert (
        "alignas(4) tl::half_t C_f[" in source
        and "tl::wgmma_gemm_ss<128, 128, 64, 1, 1, " in source
    )
    a, b, _ = integer_operands(M, N, K)
    a[:, 0], b[0, :] = 2048, 1  # every sum starts at 2048, where float16's spacing is 2
    out = kernel(a, b)
    zero = np.zeros((M, N), np.float16)
    np.testing.assert_array_equal(out, per_instruction_reference(a, b, zero, 16))
    assert (per_instruction_reference(a, b, zero, 1) != out).mean() > 0.2


def test_cpu_target_rounds_once_per_gemm_call():
    # The cpu target sums each T.gemm call's K tile in float and rounds it once.
    kernel = tilelang.compile(accumulate_into(128, 128, 64, 64, 64, 32), out_idx=[-1], target="cpu")
    a, b, c0 = integer_operands(128, 128, 64)
    np.testing.assert_array_equal(kernel(a, b, c0), per_instruction_reference(a, b, c0, 32))


@pytest.fixture
def uncached():
    """The compiler logs while it compiles: a kernel loaded from the cache logs nothing."""
    tilelang.disable_cache()
    yield
    tilelang.enable_cache()


def test_bfloat16_accumulator_stays_off_the_tensor_cores(caplog, uncached):
    # No mma.sync or wgmma accumulates in bfloat16: the gemm runs as a loop nest,
    # rounding to bfloat16 after every product, and a warning says why.
    @T.prim_func
    def main(
        A: T.Tensor((64, 32), "bfloat16"),
        B: T.Tensor((32, 64), "bfloat16"),
        C: T.Tensor((64, 64), "bfloat16"),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((64, 32), "bfloat16")
            B_s = T.alloc_shared((32, 64), "bfloat16")
            C_f = T.alloc_fragment((64, 64), "bfloat16")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(C_f)
            T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C)

    bf16 = pytest.importorskip("ml_dtypes").bfloat16
    a = rng.uniform(-1, 1, (64, 32)).astype(bf16)
    b = rng.uniform(-1, 1, (32, 64)).astype(bf16)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    ref = np.zeros((64, 64), np.float32)
    for k in range(32):  # each product and each sum rounded to bfloat16
        product = (af[:, k : k + 1] * bf[k : k + 1, :]).astype(bf16).astype(np.float32)
        ref = (ref + product).astype(bf16).astype(np.float32)
    for target in (SM80, SM90A):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="tilelang"):
            kernel = tilelang.compile(main, out_idx=[-1], target=target)
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1, caplog.text
        assert "test_gemm_f16_accum.py:" in warnings[0], warnings[0]
        assert (
            "T.gemm runs as a scalar loop, not on the tensor cores: no tensor-core instruction that tilelang "
            "emits takes bfloat16 x bfloat16 into a bfloat16 accumulator" in warnings[0]
        ), warnings[0]
        assert warnings[0].endswith("; use a float32 accumulator"), warnings[0]
        source = kernel.get_kernel_source()
        assert "gemm_ss" not in source and "gemm_mma" not in source, target
        np.testing.assert_array_equal(kernel(a, b).astype(np.float32), ref)


# ---- generated source through NVRTC


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_generated_source_uses_the_f16_accumulator_instructions(arch):
    func = matmul(512, 1024, 768, 128, 128, 32, False, True, "float16", 3)
    source = tilelang.compile(func, out_idx=[2], target=f"cuda -arch={arch}").get_kernel_source()
    ok, log, ptx = nvrtc_compile(f"compute_{arch[3:]}", source, want_ptx=True)
    assert ok, log
    if arch == "sm_80":
        assert MMA_F16 in ptx and ".f32.f16.f16.f32" not in ptx
    else:
        assert (
            "wgmma.mma_async.sync.aligned.m64n128k16.f16.f16.f16" in ptx
            and ".f32.f16.f16" not in ptx
        )
    ok, log = nvrtc_compile(arch, source)  # to a cubin: ptxas -v
    assert ok, log
    assert "0 bytes spill stores" in log, log


@needs_nvrtc
def test_register_a_and_f16_accumulators_compile_for_sm90a():
    func = matmul(512, 1024, 768, 128, 128, 32, False, False, "float16", 2, a_regs=True)
    source = tilelang.compile(func, out_idx=[2], target="cuda -arch=sm_90a").get_kernel_source()
    assert "tl::wgmma_gemm_rs<128, 128, 32, 1, 1, false, 1, false>" in source
    ok, log, ptx = nvrtc_compile("compute_90a", source, want_ptx=True)
    assert ok, log
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f16.f16.f16" in ptx


@needs_nvrtc
@pytest.mark.parametrize(
    "call, message",
    [
        (
            "tl::gemm_ss<16, 8, 16, 1, 1, false, true>(a, b, acc)",
            "mma.sync has no bfloat16 accumulator",
        ),
        (
            "tl::wgmma_gemm_ss<64, 16, 16, 1, 1, false, true>(a, b, acc)",
            "wgmma has no bfloat16 accumulator",
        ),
    ],
)
def test_bfloat16_accumulators_are_refused_by_the_device_headers(call, message):
    source = f"""#include "tl_cuda.cuh"
extern "C" __global__ void bf16_acc(const tl::bfloat16_t* a, const tl::bfloat16_t* b, tl::bfloat16_t* out) {{
  alignas(4) tl::bfloat16_t acc[8];
  {call};
  out[threadIdx.x] = acc[0];
}}
"""
    ok, log = nvrtc_compile("sm_90a", source)
    assert not ok
    assert message in log, log
