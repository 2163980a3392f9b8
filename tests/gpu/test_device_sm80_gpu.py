"""The sm_80 device building blocks on a real GPU: the emulator's tests of
tests/python/test_device_sm80.py (swizzle, ldmatrix, gemm_ss, gemm_rs, the fp8 mma and
gemm_ss on sm_89+, the sparse mma.sp m16n8k32, shuffles, cp.async), with their kernels
compiled by CuPy's NVRTC for the device's arch and launched there, against the same
numpy references."""

import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))

cp = pytest.importorskip("cupy")

# The emulator's tests, run here with a GPU `run`.
from test_device_sm80 import (
    DEVICE,
    KERNELS,
    test_atomic_adds_of_every_type,
    test_cp_async_groups_and_zero_fill,
    test_gemm_rs_matches_numpy,
    test_gemm_ss_fp8_matches_numpy,
    test_gemm_ss_matches_numpy,
    test_ldmatrix_fragment_layout,
    test_mma_fp8_fragments,
    test_mma_sp_fragments,
    test_shuffles_follow_cuda_width_rules,
    test_swizzle_offsets,
    test_warp_allreduce,
)

__all__ = [
    "test_atomic_adds_of_every_type",
    "test_cp_async_groups_and_zero_fill",
    "test_gemm_rs_matches_numpy",
    "test_gemm_ss_fp8_matches_numpy",
    "test_gemm_ss_matches_numpy",
    "test_ldmatrix_fragment_layout",
    "test_mma_fp8_fragments",
    "test_mma_sp_fragments",
    "test_shuffles_follow_cuda_width_rules",
    "test_swizzle_offsets",
    "test_warp_allreduce",
]


@pytest.fixture(scope="module")
def run():
    module = cp.RawModule(
        code=KERNELS.read_text(),
        options=(f"-I{DEVICE / 'cuda'}", "--std=c++17"),
        backend="nvrtc",
    )

    arch = int(cp.cuda.Device().compute_capability)

    def run_on_gpu(entry, threads, shared_bytes, *arrays):
        if arch < 89 and ("e4m3" in entry or "e5m2" in entry):
            pytest.skip(f"fp8 mma needs sm_89 or later; this GPU is sm_{arch}")
        kernel = module.get_function(entry)
        if shared_bytes > 48 * 1024:
            kernel.max_dynamic_shared_size_bytes = shared_bytes
        # Raw bytes: CuPy has no bfloat16 dtype.
        dev = [cp.asarray(np.ascontiguousarray(a).reshape(-1).view(np.uint8)) for a in arrays]
        kernel((1,), (threads,), tuple(dev), shared_mem=shared_bytes)
        cp.cuda.get_current_stream().synchronize()
        for a, d in zip(arrays, dev):
            a.reshape(-1).view(np.uint8)[...] = cp.asnumpy(d)

    return run_on_gpu
