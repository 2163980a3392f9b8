"""The sparse sm_90a gemm tl::wgmma_gemm_sp_ss (wgmma.mma_async.sp, device/cuda/
gemm_sm90.cuh) without a GPU: the kernels of wgmma_sp_kernels.cu run on the CPU
through the emulation shims, whose twin (device/emu/wgmma_emu.h) decodes the
descriptors and the metadata as the PTX ISA lays them out, against numpy for float16
and bfloat16, every transpose of A, B and E and 8/16/32-bit metadata; NVRTC compiles
the file for sm_90a with no spills, and nvcc's SASS runs the sparse HGMMA."""

import os
import pathlib
import re
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from test_device_sm80 import build_emulated, launch, needs_nvrtc, nvrtc_compile
from tilelang import _native
from tilelang.utils.sparse import compress

sys.path.insert(0, os.path.dirname(__file__))
from test_examples_cuda_source import nvcc  # noqa: F401  (the fixture)
from test_gemm_sp import semi_sparse
from test_gemm_sp_mma import require_cuobjdump

HERE = pathlib.Path(__file__).parent
KERNELS = HERE / "wgmma_sp_kernels.cu"
NP = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}
META = {"i16": "int16", "u8": "uint8", "i32": "int32"}


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    """The test kernels built for the CPU against the emulation shims."""
    return build_emulated(tmp_path_factory, KERNELS, "wgmma_sp")


@pytest.fixture(scope="module")
def run(emu):
    """run(entry, threads, shared_bytes, *arrays): one block of entry, arrays updated in
    place; the failure it recorded, or None. tests/gpu/test_wgmma_sp_gpu.py runs the
    same tests with a GPU `run`."""

    def run_emulated(entry, threads, shared_bytes, *arrays):
        return launch(emu, entry, *arrays)

    return run_emulated


def run_case(run, dtype, etag, M, N, K, wgm, wgn, ta, tb, te, seed=0, e_override=None):
    entry = f"wgmma_sp_{dtype}_{etag}_{M}x{N}x{K}_{wgm}x{wgn}_{'nt'[ta]}{'nt'[tb]}{'nt'[te]}"
    a = semi_sparse(M, K, "float16" if dtype == "f16" else "bfloat16", seed=seed)
    rng = np.random.default_rng(seed + 1)
    b = (rng.integers(-8, 9, size=(K, N)) / 4).astype(NP[dtype])
    a_in = np.ascontiguousarray(a.T) if ta else a
    a_sparse, e = compress(a_in, transposed=ta, meta_dtype=META[etag])
    if te:
        e = np.ascontiguousarray(e.T)
    if e_override is not None:
        e = e_override(e)
    b_in = np.ascontiguousarray(b.T) if tb else b
    c0 = rng.standard_normal((M, N)).astype(np.float32)
    c = np.zeros_like(c0)
    shared = M * K + K * N * 2 + M * K // 8  # A_sparse, B, E (wgmma_sp_kernels.cu)
    failure = run(entry, wgm * wgn * 128, shared, np.ascontiguousarray(a_sparse), e, b_in, c0, c)
    ref = a.astype(np.float64) @ b.astype(np.float64) + c0
    return failure, c, ref


CASES = [
    (dtype, "i16", shape, ta, tb, False)
    for dtype, shape in [
        ("f16", (64, 64, 32, 1, 1)),
        ("bf16", (64, 64, 32, 1, 1)),
        ("f16", (128, 64, 64, 2, 1)),
        ("bf16", (128, 128, 128, 1, 2)),
        ("f16", (64, 48, 64, 1, 1)),
    ]
    for ta in (False, True)
    for tb in (False, True)
] + [
    ("f16", "u8", (64, 64, 64, 1, 1), False, False, False),
    ("bf16", "i32", (64, 64, 128, 1, 1), False, True, False),
    ("f16", "i16", (64, 64, 64, 1, 1), False, False, True),
]


@pytest.mark.parametrize(
    "dtype, etag, shape, ta, tb, te",
    CASES,
    ids=[
        f"{d}-{e}-{'x'.join(map(str, s))}-{'nt'[ta]}{'nt'[tb]}{'nt'[te]}"
        for d, e, s, ta, tb, te in CASES
    ],
)
def test_wgmma_sp_matches_numpy(run, dtype, etag, shape, ta, tb, te):
    failure, c, ref = run_case(run, dtype, etag, *shape, ta, tb, te, seed=len(shape) + ta + 2 * tb)
    assert failure is None, failure
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)


def test_invalid_metadata_fails_the_launch(emu):
    """A code naming one position twice (0b0101), which the PTX ISA leaves undefined,
    fails the launch in emulation."""

    def corrupt(e):
        e = e.copy()
        e[5, 0] = np.int16(0b0101_0100_0100_0100)
        return e

    failure, _, _ = run_case(
        lambda entry, _t, _s, *arrays: launch(emu, entry, *arrays),
        "f16",
        "i16",
        64,
        64,
        32,
        1,
        1,
        False,
        False,
        False,
        e_override=corrupt,
    )
    assert failure is not None
    assert (
        "wgmma.sp: the metadata of row 5 of the m64 tile, K elements 12-15 names position 1 twice (code 5)"
        in failure
    )


@needs_nvrtc
def test_kernels_compile_for_sm90a_without_spills():
    ok, log, ptx = nvrtc_compile("sm_90a", KERNELS.read_text(), want_ptx=True)
    assert ok, log
    for shape in ("m64n64k32.f32.f16.f16", "m64n64k32.f32.bf16.bf16", "m64n16k32.f32.f16.f16"):
        assert f"wgmma.mma_async.sp.sync.aligned.{shape}" in ptx, shape
    frames = re.findall(
        r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", log
    )
    assert frames and all(f == ("0", "0", "0") for f in frames), log


def test_the_sass_runs_the_sparse_hgmma(nvcc, tmp_path):  # noqa: F811
    tool = require_cuobjdump()
    cubin = tmp_path / "kernels.cubin"
    include = os.path.join(_native.load().device_include_dir(), "cuda")
    cmd = [nvcc, "-arch=sm_90a", "-cubin", "--std=c++17", "-allow-unsupported-compiler"]
    cmd += [f"-I{include}", "-o", str(cubin), str(KERNELS)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr
    sass = subprocess.run(
        [tool, "-sass", str(cubin)], capture_output=True, text=True, check=True
    ).stdout
    hgmma = re.findall(r"\bHGMMA\.[\w.]+", sass)
    assert hgmma and all(h.startswith("HGMMA.SP.") for h in hgmma), sorted(set(hgmma))[:10]
    for shape in ("64x64x32.F32", "64x64x32.F32.BF16", "64x16x32.F32"):
        assert f"HGMMA.SP.{shape}" in hgmma, shape
