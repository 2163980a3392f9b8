"""The sm_90a wgmma gemms (device/cuda/gemm_sm90.cuh) without a GPU: the test kernels
of wgmma_kernels.cu run on the CPU through the emulation shims, whose wgmma twin
(device/emu/wgmma_emu.h) decodes the matrix descriptors and applies the swizzle to
absolute shared addresses as the hardware does, and are compared with numpy; the same
file compiles with NVRTC for sm_90a into HGMMA code with the accumulators in
registers, and compiling a wgmma gemm for sm_90 stops at a static_assert naming
sm_90a. tests/gpu/test_wgmma_gpu.py runs the same tests on an H100/H200."""

import pathlib
import re

import ml_dtypes
import numpy as np
import pytest
from test_device_sm80 import build_emulated, launch, needs_nvrtc, nvrtc_compile

HERE = pathlib.Path(__file__).parent
KERNELS = HERE / "wgmma_kernels.cu"
rng = np.random.default_rng(90)
NP_DTYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    """The test kernels built for the CPU against the emulation shims."""
    return build_emulated(tmp_path_factory, KERNELS, "wgmma")


@pytest.fixture(scope="module")
def run(emu):
    """run(entry, threads, shared_bytes, *arrays): one block of entry, arrays updated in
    place. tests/gpu/test_wgmma_gpu.py runs the same tests with a GPU `run`."""

    def run_emulated(entry, threads, shared_bytes, *arrays):
        failure = launch(emu, entry, *arrays)
        assert failure is None, f"{entry}: {failure}"

    return run_emulated


# ---- the shared-memory layout


def wgmma_layout_reference(rows, cols, elem_bytes):
    """Element offsets of the wgmma layout: rows of S = 128 (else 64, 32) bytes, the
    16-byte chunk XOR the row's key for S-byte rows (the address bits 7.. the hardware
    XORs into bits 4..), longer rows cut into column blocks of S bytes."""
    row_bytes = cols * elem_bytes
    width = next(w for w in (128, 64, 32) if row_bytes % w == 0)
    block, vec = width // elem_bytes, 16 // elem_bytes
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    key = (r * width >> 7) % (width // 16)  # address bits 7.. of the row start
    inner = ((c % block) // vec ^ key) * vec + c % vec
    return (c // block) * rows * block + r * block + inner


@pytest.mark.parametrize(
    "rows, cols", [(16, 64), (16, 128), (16, 32), (16, 16), (16, 48), (16, 96)]
)
def test_layout_offsets(run, rows, cols):
    out = np.full(rows * cols, -1, np.int32)
    run(f"layout_{rows}x{cols}x2", 128, 0, out)
    ref = wgmma_layout_reference(rows, cols, 2)
    np.testing.assert_array_equal(out.reshape(rows, cols), ref)
    np.testing.assert_array_equal(np.sort(ref.ravel()), np.arange(rows * cols))  # a permutation


# ---- gemm_ss / gemm_rs


def random_operand(dtype, shape):
    return rng.standard_normal(shape).astype(NP_DTYPES[dtype])


def reference(a, b, c0):
    return (a.astype(np.float64) @ b.astype(np.float64) + c0).astype(np.float32)


SS_SHAPES = [
    (64, 64, 32, 1, 1),
    (128, 128, 128, 2, 1),
    (128, 64, 64, 1, 2),
    (64, 48, 32, 1, 1),
    (192, 16, 16, 1, 1),
]
SS_CASES = [
    (dtype, shape, ta, tb)
    for dtype in ("f16", "bf16")
    for shape in SS_SHAPES
    for ta in (False, True)
    for tb in (False, True)
] + [("f16", (128, 256, 64, 2, 1), False, False), ("bf16", (128, 256, 64, 2, 1), False, True)]


def ss_entry(dtype, shape, ta, tb):
    M, N, K, wgm, wgn = shape
    return f"wgmma_ss_{dtype}_{M}x{N}x{K}_{wgm}x{wgn}_{'nt'[ta]}{'nt'[tb]}"


def run_ss(run, entry, dtype, shape, ta, tb, extra_shared=0):
    M, N, K, wgm, wgn = shape
    # Two K tiles: the kernel runs the gemm once per tile (cp.async group) into one accumulator.
    a = random_operand(dtype, (2 * K, M) if ta else (M, 2 * K))
    b = random_operand(dtype, (N, 2 * K) if tb else (2 * K, N))
    c0 = rng.standard_normal((M, N)).astype(np.float32)
    c = np.zeros_like(c0)
    run(entry, wgm * wgn * 128, 2 * (M + N) * K * 2 + extra_shared, a, b, c0, c)
    return c, reference(a.T if ta else a, b.T if tb else b, c0)


@pytest.mark.parametrize(
    "dtype, shape, ta, tb",
    SS_CASES,
    ids=[f"{d}-{'x'.join(map(str, s))}-{'nt'[ta]}{'nt'[tb]}" for d, s, ta, tb in SS_CASES],
)
def test_wgmma_ss_matches_numpy(run, dtype, shape, ta, tb):
    c, ref = run_ss(run, ss_entry(dtype, shape, ta, tb), dtype, shape, ta, tb)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4)


def test_tiles_off_the_swizzle_pattern_give_wrong_products(run):
    """The hardware swizzles absolute shared addresses: a tile 256 bytes off its
    pattern is read with other chunks than the ones written, in emulation as on the GPU."""
    c, ref = run_ss(run, "wgmma_ss_f16_misaligned", "f16", (64, 64, 32, 1, 1), False, False, 256)
    assert np.abs(c - ref).max() > 1.0


RS_CASES = [("f16", (64, 64, 64, 1)), ("bf16", (128, 32, 32, 2)), ("f16", (128, 128, 16, 2))]


@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize(
    "dtype, shape", RS_CASES, ids=[f"{d}-{'x'.join(map(str, s))}" for d, s in RS_CASES]
)
def test_wgmma_rs_matches_numpy(run, dtype, shape, tb):
    M, N, K, wgm = shape
    a = random_operand(dtype, (M, K))
    b = random_operand(dtype, (N, K) if tb else (K, N))
    c0 = rng.standard_normal((M, N)).astype(np.float32)
    c = np.zeros_like(c0)
    run(f"wgmma_rs_{dtype}_{M}x{N}x{K}_{wgm}_{'nt'[tb]}", wgm * 128, N * K * 2, a, b, c0, c)
    np.testing.assert_allclose(c, reference(a, b.T if tb else b, c0), rtol=1e-4, atol=1e-4)


# ---- NVRTC


@needs_nvrtc
def test_kernels_compile_for_sm90a_with_accumulators_in_registers():
    ok, log, ptx = nvrtc_compile("sm_90a", KERNELS.read_text(), want_ptx=True)
    assert ok, log
    for shape in ("m64n64k16.f32.f16.f16", "m64n128k16.f32.bf16.bf16", "m64n256k16", "m64n16k16"):
        assert f"wgmma.mma_async.sync.aligned.{shape}" in ptx, shape
    assert "wgmma.wait_group.sync.aligned 0" in ptx and "fence.proxy.async.shared::cta" in ptx
    frames, entry = {}, None
    for line in log.splitlines():
        if m := re.search(r"Compiling entry function '(\w+)'", line):
            entry = m.group(1)
        elif m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores", line):
            frames[entry] = (int(m.group(1)), int(m.group(2)))
    expected = {ss_entry(*case) for case in SS_CASES}
    assert expected <= frames.keys(), sorted(expected - frames.keys())
    spilled = {name: f for name, f in frames.items() if name.startswith("wgmma") and f != (0, 0)}
    assert not spilled, f"wgmma kernels with a stack frame or spills: {spilled}"


ONE_GEMM = """#include "tl_cuda.cuh"
extern "C" __global__ void __launch_bounds__(128) one_gemm(float* out) {
  TL_DYNAMIC_SHARED(smem);
  float acc[32] = {};
  tl::wgmma_gemm_ss<64, 64, 16, 1, 1, false, false>(reinterpret_cast<const tl::half_t*>(smem),
                                                    reinterpret_cast<const tl::half_t*>(smem + 2048), acc);
  for (int i = 0; i < 32; ++i) out[threadIdx.x * 32 + i] = acc[i];
}
"""


@needs_nvrtc
def test_wgmma_needs_sm90a():
    ok, log, ptx = nvrtc_compile("sm_90a", ONE_GEMM, want_ptx=True)
    assert ok and "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16" in ptx, log
    ok, log = nvrtc_compile("sm_90", ONE_GEMM)
    assert not ok, "a wgmma gemm compiled for sm_90"
    assert "wgmma needs sm_90a" in log, log
