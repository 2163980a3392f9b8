"""Kernels for the sm_75 (Turing) target, shared by tests/python/test_sm75.py (NVRTC
and the emulator) and tests/gpu/test_sm75_gpu.py (a real GPU, which runs sm_75 code
through its PTX): gemms of each operand type, a pipelined gemm, a hand-written
T.ptx_cp_async copy and an atomic add of bfloat16."""

import ml_dtypes
import numpy as np
import tilelang.language as T

SM75 = "cuda -arch=sm_75"


def gemm(M, N, K, in_dtype, acc_dtype, threads=128):
    """C = A @ B of one block, the operands staged in shared memory."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), in_dtype), B: T.Tensor((K, N), in_dtype), C: T.Tensor((M, N), acc_dtype)
    ):
        with T.Kernel(1, threads=threads):
            A_s = T.alloc_shared((M, K), in_dtype)
            B_s = T.alloc_shared((K, N), in_dtype)
            C_l = T.alloc_fragment((M, N), acc_dtype)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(C_l)
            T.gemm(A_s, B_s, C_l, policy=T.GemmWarpPolicy.FullRow)
            T.copy(C_l, C)

    return main


def pipelined_gemm(M, N, K, bm=64, bn=64, bk=32, stages=3, dtype="float16"):
    """A tiled float16 gemm with a T.Pipelined K loop."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")
    ):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), dtype)
            B_s = T.alloc_shared((bk, bn), dtype)
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * bm, bx * bn])

    return main


def cp_async_copy(n=256):
    """Y = X through shared memory by T.ptx_cp_async of 16 bytes a thread."""

    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=n // 4):
            s = T.alloc_shared((n,), "float32")
            t = T.get_thread_binding()
            T.ptx_cp_async(T.access_ptr(s[t * 4], "w"), T.access_ptr(X[t * 4], "r"), 4)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            T.sync_threads()
            for i in T.Parallel(n):
                Y[i] = s[(i + 4) % n]

    return main


def atomic_add_bf16(n=256):
    """Y[i % 32] += X[i] in bfloat16."""

    @T.prim_func
    def main(X: T.Tensor((n,), "bfloat16"), Y: T.Tensor((32,), "bfloat16")):
        with T.Kernel(1, threads=n):
            t = T.get_thread_binding()
            T.atomic_add(Y[t % 32], X[t])

    return main


def small_integers(shape, dtype, seed):
    """Values in [-3, 3]: products and sums of them are exact in every dtype here."""
    v = np.random.default_rng(seed).integers(-3, 4, size=shape).astype(np.float64)
    return v.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
