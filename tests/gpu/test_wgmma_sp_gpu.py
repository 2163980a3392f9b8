"""The sparse sm_90a gemm (tl::wgmma_gemm_sp_ss, wgmma.mma_async.sp) on an H100/H200:
tests/python/test_wgmma_sp_device.py's numpy comparisons with its kernels compiled by
NVRTC for sm_90a and launched through the CUDA driver. Skipped without a GPU of
compute capability 9.0."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))

pytest.importorskip("torch")

import test_wgmma_sp_device as device_tests
from test_wgmma_gpu import Driver, nvrtc_cubin
from test_wgmma_sp_device import test_wgmma_sp_matches_numpy

__all__ = ["test_wgmma_sp_matches_numpy"]

pytestmark = pytest.mark.usefixtures("hopper")  # tests/gpu/conftest.py


@pytest.fixture(scope="module")
def run():
    """The emulator tests' `run`, on the GPU (no failure to report: None)."""
    driver = Driver(nvrtc_cubin(device_tests.KERNELS.read_text(), "wgmma_sp_kernels.cu"))

    def run_on_gpu(entry, threads, shared_bytes, *arrays):
        driver.launch(entry, threads, shared_bytes, *arrays)

    return run_on_gpu
