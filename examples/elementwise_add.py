"""Elementwise add written both ways TileLang allows: a factory returning a T.prim_func
(lazy, compiled with tilelang.compile) and an eager @tilelang.jit function whose sizes
come from its arguments. Both are checked against numpy on a size that is not a
multiple of the block."""

import numpy as np
import tilelang
import tilelang.language as T


def add_prim_func(N, block=256, dtype="float32"):
    @T.prim_func
    def add(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                idx = bx * block + i
                if idx < N:
                    C[idx] = A[idx] + B[idx]

    return add


@tilelang.jit
def add_eager(A, B, block=256):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B: T.Tensor((N,), T.float32)
    C = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
        for i in T.Parallel(block):
            idx = bx * block + i
            if idx < N:
                C[idx] = A[idx] + B[idx]
    return C


def main():
    n = 100_003
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)

    lazy = tilelang.compile(add_prim_func(n), out_idx=[-1])
    np.testing.assert_allclose(lazy(a, b), a + b, rtol=1e-6)
    print(f"elementwise_add (lazy prim_func): {n} elements on {lazy.target} match numpy")

    np.testing.assert_allclose(add_eager(a, b), a + b, rtol=1e-6)
    print(f"elementwise_add (eager jit): {n} elements match numpy")


if __name__ == "__main__":
    main()
