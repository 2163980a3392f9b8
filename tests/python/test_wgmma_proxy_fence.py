"""The generic -> async proxy fence of the sm_90a wgmma gemms (device/cuda/gemm_sm90.cuh,
docs/design/hopper.md "The wgmma proxy fence"): a wgmma whose shared tiles only TMA
writes is emitted with Fence = false and issues no fence.proxy.async (MEMBAR.ALL.CTA +
FENCE.VIEW.ASYNC.S in the SASS); one that reads a tile that threads write (a
dequantizing loop, a copy from a fragment) keeps it. Bytes that TMA fills after thread
stores wrote them under another buffer's name (shared memory reuse) get the fence once,
before the reuse barrier. Each kernel runs in the emulator against numpy; with NVRTC and
cuobjdump the SASS of the cubins NVRTC builds shows where the fence went."""

import re
import subprocess

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_gemm_sp_mma import require_cuobjdump
from test_wgmma_gemm import needs_nvrtc, operands, wgmma_gemm

SM90A = "cuda -arch=sm_90a -emulate"
rng = np.random.default_rng(4141)


def tma_gemm():
    """A pipelined f16 GEMM with tails, both tiles through TMA."""
    return wgmma_gemm(100, 72, 80, 64, 64, 32, "float16", False, False, 128, 0, 2)


def dequant_gemm(M, N, K, bM=64, bN=64, bK=32):
    """C = A @ (Bq * scale): A's tile comes through TMA, the int8 Bq too, and the
    float16 B tile the gemm reads is written by the threads of a T.Parallel loop."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        Bq: T.Tensor((K, N), "int8"),
        scale: T.Tensor((N,), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            Bq_s = T.alloc_shared((bK, bN), "int8")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(Bq[k * bK, bx * bN], Bq_s)
                for i, j in T.Parallel(bK, bN):
                    B_s[i, j] = Bq_s[i, j].astype("float16") * scale[bx * bN + j]
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * bM, bx * bN])

    return main


def dequant_operands(M, N, K):
    a = rng.standard_normal((M, K)).astype(np.float16)
    bq = rng.integers(-8, 8, (K, N)).astype(np.int8)
    scale = (rng.random(N) * 0.5 + 0.25).astype(np.float16)
    # The kernel's B tile: each product rounded to float16.
    b = (bq.astype(np.float16) * scale).astype(np.float64)
    ref = a.astype(np.float64) @ b
    return a, bq, scale, ref


def register_a_gemm(M, N, K, fragment_b, bM=64, bN=64, bK=32):
    """C = A @ B with A's tile in registers (wgmma_gemm_rs): B's tile comes through
    TMA, or (`fragment_b`) through a fragment copied into it by the threads."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_f = T.alloc_fragment((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, k * bK], A_f)
                if fragment_b:
                    B_f = T.alloc_fragment((bK, bN), "float16")
                    T.copy(B[k * bK, bx * bN], B_f)
                    T.copy(B_f, B_s)
                else:
                    T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_f, B_s, C_f)
            T.copy(C_f, C[by * bM, bx * bN])

    return main


def test_a_tma_fed_wgmma_has_no_fence_and_matches_numpy():
    kernel = tilelang.compile(tma_gemm(), target=SM90A)
    src = kernel.get_kernel_source()
    assert "tl::tma_load<2>((&A_s[" in src and "tl::tma_load<2>((&B_s[" in src, src
    # Pending = 1 (left in flight in the pipeline), then Fence = false.
    assert "tl::wgmma_gemm_ss<64, 64, 32, 1, 1, false, false, 1, false>(" in src, src
    assert "tl::fence_proxy_async" not in src.split("tl::wgmma_gemm_ss")[0].split("for (")[-1]
    a, b, c0, ref = operands(100, 72, 80, "float16", False, False)
    c = np.zeros_like(c0)
    kernel(a, b, c0, c)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)


def test_a_tile_written_by_threads_keeps_the_fence_and_matches_numpy():
    M, N, K = 96, 80, 96
    kernel = tilelang.compile(dequant_gemm(M, N, K), target=SM90A)
    src = kernel.get_kernel_source()
    # A comes through TMA, the dequantized B from the threads' stores: fenced.
    assert "tl::tma_load<2>((&A_s[" in src and "B_s[" in src, src
    assert "tl::wgmma_gemm_ss<64, 64, 32, 1, 1, false, false, 1>(" in src, src
    a, bq, scale, ref = dequant_operands(M, N, K)
    c = np.zeros((M, N), np.float32)
    kernel(a, bq, scale, c)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("fragment_b", [False, True], ids=["tma_b", "fragment_b"])
def test_register_a_gemm_fences_only_a_b_tile_that_threads_write(fragment_b):
    M, N, K = 128, 64, 96
    kernel = tilelang.compile(register_a_gemm(M, N, K, fragment_b), target=SM90A)
    src = kernel.get_kernel_source()
    calls = re.findall(r"tl::wgmma_gemm_rs<([^>]*)>\(", src)
    assert calls, src
    want = "64, 64, 32, 1, 1, false" if fragment_b else "64, 64, 32, 1, 1, false, 1, false"
    assert set(calls) == {want}, calls
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    kernel(a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)


def reuse_after_thread_writes(M, N, K, bM=64, bN=64, bK=32):
    """First the threads write a shared tile (a row scale read back right away), then a
    TMA-fed GEMM whose stages may take its bytes: C = diag(r) (A @ B)."""

    @T.prim_func
    def main(
        R: T.Tensor((M, 256), "float32"),
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            R_s = T.alloc_shared((bM, 256), "float32")
            r = T.alloc_fragment((bM,), "float32")
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_f = T.alloc_fragment((bM, bN), "float32")
            for i, j in T.Parallel(bM, 256):
                R_s[i, j] = R[by * bM + i, j] * 0.5
            T.reduce_sum(R_s, r, dim=1)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f)
            for i, j in T.Parallel(bM, bN):
                C[by * bM + i, bx * bN + j] = C_f[i, j] * r[i]

    return main


def test_tma_tiles_on_bytes_threads_wrote_get_one_fence_before_the_reuse_barrier():
    M, N, K = 128, 64, 64
    # Without a producer warpgroup the pipeline starts after R_s is done with, so
    # its tiles take R_s's bytes.
    kernel = tilelang.compile(
        reuse_after_thread_writes(M, N, K),
        target=SM90A,
        pass_configs={"tl.disable_warp_specialized": True},
    )
    src = kernel.get_kernel_source()
    offsets = dict(re.findall(r"\* (\w+) = reinterpret_cast<[^>]*>\(tl_smem \+ (\d+)\)", src))
    assert offsets["R_s"] == "0" and "0" in (offsets["A_s"], offsets["B_s"]), offsets
    assert "tl::wgmma_gemm_ss<64, 64, 32, 1, 1, false, false, 1, false>(" in src, src
    # After the reduction's reads of R_s every thread fences its generic writes for the
    # async proxy, then the barrier; then the TMA loads into those bytes.
    head = src.split("tl::tma_load<")[0].split("TL_SMEM(R_s")[-1]
    assert re.search(r"tl::fence_proxy_async\(\);\s*__syncthreads\(\);", head), head
    r = rng.standard_normal((M, 256)).astype(np.float32)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    kernel(r, a, b, c)
    ref = (r.astype(np.float64) * 0.5).sum(1)[:, None] * (a.astype(np.float64) @ b)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-2)


def test_an_epilogue_tile_on_tma_bytes_needs_no_fence():
    """The staged epilogue (threads write C's tile over the finished pipeline stages):
    the async proxy's reads come first, so neither the gemm nor the reuse fences."""
    kernel = tilelang.compile(
        wgmma_gemm(128, 128, 64, 128, 128, 32, "float16", False, False, 128, 0, 2), target=SM90A
    )
    src = kernel.get_kernel_source()
    offsets = re.findall(r"\* (\w+) = reinterpret_cast<[^>]*>\(tl_smem \+ (\d+)\)", src)
    assert "tl::wgmma_gemm_ss<128, 128, 32, 1, 1, false, false, 1, false>(" in src, src
    loop_end = src.index("tl::wgmma_wait<0>()")
    assert "tl::fence_proxy_async" not in src[:loop_end], src
    assert offsets, src


def sass_of(func, tmp_path):
    """The SASS of the cubin NVRTC builds for `func` on sm_90a, as the runtime loads it."""
    kernel = tilelang.compile(func, target="cuda -arch=sm_90a")
    tool = require_cuobjdump()
    kernel.export_library(str(tmp_path))
    done = subprocess.run(
        [tool, "-sass", str(tmp_path / "kernel.cubin")], capture_output=True, text=True, check=True
    )
    return done.stdout


def before_wgmmas(sass):
    """For each wgmma issue (WARPGROUP.ARRIVE) after the first wgmma (HGMMA) of the
    kernel: the SASS since the wgmma before it, where its proxy fence goes (a loop's
    later steps, the pipeline's drain)."""
    lines = sass.splitlines()
    windows, last = [], None
    for i, x in enumerate(lines):
        if "HGMMA" in x:
            last = i
        elif "WARPGROUP.ARRIVE" in x and last is not None:
            windows.append("\n".join(lines[last + 1 : i]))
    return windows


@needs_nvrtc
def test_the_sass_of_a_tma_fed_gemm_has_no_membar_in_its_loop(tmp_path):
    tma_steps = before_wgmmas(sass_of(tma_gemm(), tmp_path / "tma"))
    dq_steps = before_wgmmas(sass_of(dequant_gemm(96, 80, 96), tmp_path / "dq"))
    assert tma_steps and dq_steps
    for step in tma_steps:
        assert "MEMBAR" not in step and "FENCE.VIEW.ASYNC.S" not in step, step
    for step in dq_steps:
        assert "MEMBAR.ALL.CTA" in step and "FENCE.VIEW.ASYNC.S" in step, step
