"""TVM's form of a kernel without T.Kernel: nested `for v in T.thread_binding(n,
thread="blockIdx.x" / "threadIdx.x")` loops launch it, each loop setting its axis'
extent; run on the cpu target and in the CUDA emulator against numpy, and the errors."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

rng = np.random.default_rng(17)
TARGETS = ["cpu", "cuda -arch=sm_80 -emulate"]


@T.prim_func
def scaled_rows(A: T.Tensor((6, 4, 32), "float32"), B: T.Tensor((6, 4, 32), "float32")):
    for by in T.thread_binding(4, thread="blockIdx.y"):
        for bx in T.thread_binding(0, 6, thread="blockIdx.x"):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                B[bx, by, tx] = A[bx, by, tx] * T.cast(by + 1, "float32") + T.cast(tx, "float32")


@pytest.mark.parametrize("target", TARGETS)
def test_binding_loops_launch_the_kernel(target):
    kernel = tilelang.compile(scaled_rows, target=target)
    a = rng.standard_normal((6, 4, 32)).astype(np.float32)
    b = np.zeros_like(a)
    kernel(a, b)
    ref = a.astype(np.float64) * (np.arange(4) + 1)[None, :, None] + np.arange(32)[None, None, :]
    np.testing.assert_allclose(b, ref, rtol=1e-6)


def test_a_handle_parameter_and_an_unrolled_loop_inside():
    # TileLang's unroll test: a kernel of binding loops over a T.match_buffer tensor.
    @T.prim_func
    def main(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (16, 16), dtype=T.float32, align=16)
        for _bx in T.thread_binding(1, thread="blockIdx.x"):
            for tx in T.thread_binding(16, thread="threadIdx.x"):
                for i in T.unroll(0, 16, step=4):
                    A[tx, i] = A[tx, i] + 1.0

    kernel = tilelang.compile(main, target="cuda -arch=sm_80 -emulate")
    assert "#pragma unroll" in kernel.get_kernel_source()
    a = rng.standard_normal((16, 16)).astype(np.float32)
    ref = a.copy()
    ref[:, ::4] += 1
    kernel(a)
    np.testing.assert_allclose(a, ref, rtol=1e-6)


def test_misused_binding_loops_are_refused():
    with pytest.raises(tilelang.TileLangError, match=r"threadIdx.x is bound twice in one kernel"):

        @T.prim_func
        def twice(A: T.Tensor((32,), "float32")):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                for _ty in T.thread_binding(32, thread="threadIdx.x"):
                    A[tx] = 1.0

    with pytest.raises(
        tilelang.TileLangError, match=r"a thread extent must be a positive constant"
    ):

        @T.prim_func
        def dynamic(A: T.Tensor((32,), "float32"), n: T.int32):
            for tx in T.thread_binding(n, thread="threadIdx.x"):
                A[tx] = 1.0

    with pytest.raises(tilelang.TileLangError, match=r"thread must be one of threadIdx.x"):

        @T.prim_func
        def axis(A: T.Tensor((32,), "float32")):
            for tx in T.thread_binding(32, thread="warp.x"):
                A[tx] = 1.0

    with pytest.raises(
        tilelang.TileLangError, match=r"T.Kernel threads must be positive|asks for 2048"
    ):

        @T.prim_func
        def too_many(A: T.Tensor((32,), "float32")):
            for _tx in T.thread_binding(2048, thread="threadIdx.x"):
                A[0] = 1.0
