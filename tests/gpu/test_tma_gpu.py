"""The TMA copies and mbarriers on a Hopper GPU: the emulator's tests of
tests/python/test_tma_device.py (loads with out-of-bounds boxes in every swizzle
mode, element strides, ranks 1 to 5, clipped stores, the two-stage pipeline), with
tma_kernels.cu compiled by CuPy's NVRTC for the device, the tensor maps encoded by
the driver's cuTensorMapEncodeTiled through tl::encode_tensor_map, and the map
passed by value as the kernels' __grid_constant__ parameter; same numpy references.
The cases keep to the coordinates the H200 accepts (innermost starts in whole 16-byte
units; stores from coordinates >= 0): the others stop the context with an illegal
instruction, which the emulator reports instead (test_coordinates_the_gpu_refuses)."""

import ctypes
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))

cp = pytest.importorskip("cupy")

# The emulator's tests, run here with a GPU `run`.
from test_device_sm80 import DEVICE
from test_tma_device import (
    KERNELS,
    encode,
    test_load_2d,
    test_load_3d,
    test_load_3d_element_strides,
    test_load_inner_row_narrower_than_swizzle_span,
    test_load_ranks,
    test_store_clips_to_the_tensor,
    test_two_stage_pipeline,
)

__all__ = [
    "test_load_2d",
    "test_load_3d",
    "test_load_3d_element_strides",
    "test_load_inner_row_narrower_than_swizzle_span",
    "test_load_ranks",
    "test_store_clips_to_the_tensor",
    "test_two_stage_pipeline",
]

SHARED_BYTES = 2 * 8192 + 64  # test::kSharedBytes
THREADS = 64


@pytest.fixture(scope="module")
def run():
    if int(cp.cuda.Device().compute_capability) < 90:
        pytest.skip("TMA needs a Hopper (sm_90) or later GPU")
    module = cp.RawModule(
        code=KERNELS.read_text(),
        options=(f"-I{DEVICE / 'cuda'}", "--std=c++17"),
        backend="nvrtc",
    )

    def run_on_gpu(entry, tensor, map_kw, args, buf):
        # Raw bytes: CuPy has no bfloat16 dtype.
        dev_tensor = cp.asarray(np.ascontiguousarray(tensor).reshape(-1).view(np.uint8))
        dev_args = cp.asarray(np.asarray(args, np.int32))
        dev_buf = cp.asarray(buf.reshape(-1).view(np.uint8))
        tensor_map = encode(tensor, dev_tensor.data.ptr, False, **map_kw)
        # The kernel's parameters by value: the 128-byte map, then two pointers.
        params = [
            (ctypes.c_ubyte * 128).from_buffer_copy(tensor_map),
            ctypes.c_uint64(dev_args.data.ptr),
            ctypes.c_uint64(dev_buf.data.ptr),
        ]
        pointers = (ctypes.c_void_p * len(params))(*[ctypes.addressof(p) for p in params])
        kernel = module.get_function(entry)
        # A RawModule hands out RawKernels; the driver handle is their Function's.
        function = getattr(kernel, "kernel", kernel)
        stream = cp.cuda.get_current_stream()
        cp.cuda.driver.launchKernel(
            function.ptr,
            1,
            1,
            1,
            THREADS,
            1,
            1,
            SHARED_BYTES,
            stream.ptr,
            ctypes.addressof(pointers),
            0,
        )
        stream.synchronize()
        tensor.reshape(-1).view(np.uint8)[...] = cp.asnumpy(dev_tensor)
        buf.reshape(-1).view(np.uint8)[...] = cp.asnumpy(dev_buf)

    return run_on_gpu
