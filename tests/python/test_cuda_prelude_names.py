"""Hand-written device code in a TileLang program (T.import_source) may use the short
unsigned names TileLang's CUDA header provides (`uint`, `uchar`, `ushort`), as
upstream's fp4 dequantize examples do in their inline PTX."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_device_sm80 import needs_nvrtc, nvrtc_compile

N = 256

DEVICE_CODE = """
#if defined(__CUDACC__) && !defined(TL_EMULATE)
__device__
#endif
inline uint tl_prelude_mix(uint x, uchar shift, ushort add) {
  return (x << shift) + add;
}
"""


def mix_kernel():
    @T.prim_func
    def mix(A: T.Tensor((N,), "uint32"), B: T.Tensor((N,), "uint32")):
        with T.Kernel(1, threads=N) as _:
            T.import_source(DEVICE_CODE)
            tx = T.get_thread_binding()
            B[tx] = T.call_extern("uint32", "tl_prelude_mix", A[tx], T.uint8(3), T.uint16(7))

    return mix


@pytest.mark.parametrize("target", ["cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate"])
def test_short_unsigned_names_run_in_device_code(target):
    kernel = tilelang.compile(mix_kernel(), target=target)
    a = np.random.default_rng(1).integers(0, 2**28, N, dtype=np.uint32)
    b = np.empty(N, np.uint32)
    kernel(a, b)
    np.testing.assert_array_equal(b, (a << np.uint32(3)) + np.uint32(7))


@needs_nvrtc
def test_short_unsigned_names_compile_with_nvrtc():
    kernel = tilelang.compile(mix_kernel(), target="cuda -arch=sm_90a")
    ok, log = nvrtc_compile("sm_90a", kernel.get_kernel_source())
    assert ok, log
