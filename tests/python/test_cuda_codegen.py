"""The CUDA code generator without a GPU: kernels of the CPU tests compile with
NVRTC for sm_80 and sm_90 (the cubin is built; loading waits for a first call)."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_cpu_kernels import gemm_factory
from test_threads import mixed_tile_ops_and_threads, neighbour_sum
from tilelang.utils.target import available_targets

pytestmark = pytest.mark.skipif(
    "cuda" not in available_targets(), reason="NVRTC (libnvrtc.so) is not on this machine"
)


def softmax_like(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "bfloat16"), scale: T.float32):
        with T.Kernel(T.ceildiv(M, 16), threads=128) as bx:
            tile = T.alloc_fragment((16, N), "float32")
            T.copy(A[bx * 16, 0], tile)
            for i, j in T.Parallel(16, N):
                tile[i, j] = T.exp2(tile[i, j] * scale) + T.infinity("float32") * 0
            T.copy(tile, B[bx * 16, 0])

    return main


KERNELS = {
    "gemm_tails": lambda: gemm_factory(200, 130, 70, 64, 64, 32),
    "gemm_trans_b_relu": lambda: gemm_factory(128, 128, 64, 64, 64, 32, trans_b=True, relu=True),
    "threads_barrier": lambda: neighbour_sum(200),
    "tile_ops_and_threads": lambda: mixed_tile_ops_and_threads(20, 16),
    "elementwise_math": lambda: softmax_like(50, 64),
}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_generated_cuda_compiles_with_nvrtc(name, arch):
    kernel = tilelang.compile(KERNELS[name](), target=f"cuda -arch={arch}")
    source = kernel.get_kernel_source()
    assert '#include "tl_cuda.cuh"' in source and "__global__" in source
    assert kernel.target == f"cuda -arch={arch}"


def test_cuda_kernel_refuses_cpu_arrays():
    kernel = tilelang.compile(KERNELS["elementwise_math"](), target="cuda -arch=sm_80")
    a = np.zeros((50, 64), np.float32)
    with pytest.raises(
        tilelang.TileLangError, match=r"argument 'A' .* is on cpu, expected a cuda tensor"
    ):
        kernel(a, np.zeros((50, 64), np.uint16), 1.0)
