"""Kernels the Metal tests share: the text tests read their MSL, the emulated tests run
them on the CPU and the macOS tests on torch MPS, all against numpy references."""

import numpy as np
import tilelang.language as T


def gemm(
    M,
    N,
    K,
    bm=64,
    bn=64,
    bk=32,
    threads=128,
    dtype="float16",
    acc="float32",
    out_dtype=None,
    policy=0,
    trans_a=False,
    trans_b=False,
    c_shared=False,
    epilogue=False,
):
    """C = A @ B (op(A) = A^T when trans_a, likewise B) tiled bm x bn x bk. `epilogue`
    applies relu(x) * 0.5 + 1 to the accumulator in a T.Parallel loop before the
    copy-out; `c_shared` keeps the accumulator in shared memory."""
    out_dtype = out_dtype or acc
    a_shape, a_tile = ((K, M), (bk, bm)) if trans_a else ((M, K), (bm, bk))
    b_shape, b_tile = ((N, K), (bn, bk)) if trans_b else ((K, N), (bk, bn))

    @T.prim_func
    def main(
        A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), out_dtype)
    ):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_s = T.alloc_shared(a_tile, dtype)
            B_s = T.alloc_shared(b_tile, dtype)
            if c_shared:
                C_l = T.alloc_shared((bm, bn), acc)
            else:
                C_l = T.alloc_fragment((bm, bn), acc)
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                if trans_a:
                    T.copy(A[k * bk, by * bm], A_s)
                else:
                    T.copy(A[by * bm, k * bk], A_s)
                if trans_b:
                    T.copy(B[bx * bn, k * bk], B_s)
                else:
                    T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l, transpose_A=trans_a, transpose_B=trans_b, policy=policy)
            if epilogue:
                for i, j in T.Parallel(bm, bn):
                    C_l[i, j] = T.max(C_l[i, j], 0) * 0.5 + 1
            T.copy(C_l, C[by * bm, bx * bn])

    return main


def gemm_reference(a, b, trans_a=False, trans_b=False, epilogue=False):
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    c = (a.T if trans_a else a) @ (b.T if trans_b else b)
    return np.maximum(c, 0) * 0.5 + 1 if epilogue else c


def axpb():
    """Y[i] = X[i] * alpha + bias over a dynamic length: scalar parameters and a
    dynamic dim travel in the argument struct."""
    n = T.dynamic("n")

    @T.prim_func
    def main(
        X: T.Tensor((n,), "float16"), Y: T.Tensor((n,), "float32"), alpha: T.float32, bias: T.int32
    ):
        with T.Kernel(T.ceildiv(n, 256), threads=128) as bx:
            for i in T.Parallel(256):
                if bx * 256 + i < n:
                    Y[bx * 256 + i] = T.cast(X[bx * 256 + i], "float32") * alpha + T.cast(
                        bias, "float32"
                    )

    return main


def row_reduce(M, N, kind, shared=False, dtype="float32"):
    """out[i] = reduce_<kind>(X[i, :]) for a block of 8 rows, the rows staged in a
    fragment (or shared memory)."""
    reducers = {
        "sum": T.reduce_sum,
        "max": T.reduce_max,
        "min": T.reduce_min,
        "abssum": T.reduce_abssum,
        "absmax": T.reduce_absmax,
    }

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Out: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, 8), threads=128) as bx:
            if shared:
                x = T.alloc_shared((8, N), dtype)
                r = T.alloc_shared((8,), dtype)
            else:
                x = T.alloc_fragment((8, N), dtype)
                r = T.alloc_fragment((8,), dtype)
            T.copy(X[bx * 8, 0], x)
            reducers[kind](x, r, dim=1)
            T.copy(r, Out[bx * 8])

    return main


ROW_REFERENCE = {
    "sum": lambda x: x.sum(axis=1),
    "max": lambda x: x.max(axis=1),
    "min": lambda x: x.min(axis=1),
    "abssum": lambda x: np.abs(x).sum(axis=1),
    "absmax": lambda x: np.abs(x).max(axis=1),
}


def histogram(N, bins):
    """Hist[X[i] % bins] += 1 and Total += X[i] * 0.5 and Peak = max(X * 0.25), all
    with atomics (int32 add, float32 add, float32 max)."""

    @T.prim_func
    def main(
        X: T.Tensor((N,), "int32"),
        Hist: T.Tensor((bins,), "int32"),
        Total: T.Tensor((1,), "float32"),
        Peak: T.Tensor((1,), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < N:
                    T.atomic_add(Hist[X[bx * 128 + i] % bins], 1)
                    T.atomic_add(Total[0], T.cast(X[bx * 128 + i], "float32") * 0.5)
                    T.atomic_max(Peak[0], T.cast(X[bx * 128 + i], "float32") * 0.25)

    return main


def special_values(N):
    """Literals and built-ins: infinities, NaN tests, select, as_type."""

    @T.prim_func
    def main(
        X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"), H: T.Tensor((N,), "float16")
    ):
        with T.Kernel(T.ceildiv(N, 64), threads=64) as bx:
            for i in T.Parallel(64):
                v = X[bx * 64 + i]
                bits = T.reinterpret(v, "int32")
                clipped = T.if_then_else(v > 1.5, T.infinity("float32"), v)
                Y[bx * 64 + i] = T.if_then_else(T.isinf(clipped), -1.0, clipped) + T.cast(
                    bits & 1, "float32"
                )
                H[bx * 64 + i] = T.cast(v, "float16") * T.cast(0.5, "float16")

    return main
