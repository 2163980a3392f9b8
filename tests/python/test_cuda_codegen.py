"""The CUDA code generator without a GPU: kernels of the CPU tests compile with
NVRTC for sm_80 and sm_90 (the cubin is built; loading waits for a first call)."""

import re

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


def shared_parallel(rows):
    @T.prim_func
    def main(A: T.Tensor((rows, 40), "float32"), B: T.Tensor((rows, 40), "float32")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((rows, 40), "float32")
            T.copy(A, S)
            for i, j in T.Parallel(rows, 20):  # an inner loop: not a vectorizable body
                for p in T.unroll(2):
                    S[i, j * 2 + p] = S[i, j * 2 + p] * 2 + i
            T.copy(S, B)

    return main


@pytest.mark.parametrize("rows", [16, 13])
def test_block_parallel_loops_count_in_32_bits(rows):
    """A T.Parallel loop over a shared tile is a counted int32 loop over the thread's
    share (unrolled when short, guarded when the threads do not divide it), so nvcc
    folds its index arithmetic; the cpu target and the emulator give the same values."""
    func = shared_parallel(rows)
    source = tilelang.compile(func, out_idx=[1], target="cuda -arch=sm_90a").get_kernel_source()
    trips = -(-rows * 20 // 128)
    loop = (
        rf"#pragma unroll\s+for \(int32_t tl_flat0_it = 0; tl_flat0_it < {trips}; \+\+tl_flat0_it\)"
    )
    assert re.search(loop, source), source
    assert ("if (tl_flat0 < 260)" in source) == (rows == 13)
    a = np.arange(rows * 40, dtype=np.float32).reshape(rows, 40)
    want = a * 2 + np.arange(rows, dtype=np.float32)[:, None]
    for target in ("cpu", "cuda -arch=sm_90a -emulate"):
        np.testing.assert_array_equal(tilelang.compile(func, out_idx=[1], target=target)(a), want)
