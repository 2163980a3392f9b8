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


@pytest.mark.parametrize("target", TARGETS)
def test_a_shared_allocation_at_the_top_opens_the_kernel(target):
    # TVM's root-block allocation: the shared buffer belongs to the binding loops' kernel.
    @T.prim_func
    def reverse_rows(A: T.Tensor((4, 64), "float32"), B: T.Tensor((4, 64), "float32")):
        S = T.alloc_buffer((64,), "float32", scope="shared")
        for bx in T.thread_binding(4, thread="blockIdx.x"):
            for tx in T.thread_binding(64, thread="threadIdx.x"):
                S[tx] = A[bx, tx] * 2.0
                T.sync_threads()
                B[bx, tx] = S[63 - tx]

    kernel = tilelang.compile(reverse_rows, target=target)
    a = rng.standard_normal((4, 64)).astype(np.float32)
    b = np.zeros_like(a)
    kernel(a, b)
    np.testing.assert_array_equal(b.astype(np.float64), 2.0 * a.astype(np.float64)[:, ::-1])


def test_allocations_alone_at_the_top_make_a_one_thread_kernel():
    # TileLang's frontend_v2 test_dtype_str_repr: allocations of each dtype spelling.
    @T.prim_func
    def allocs():
        T.alloc_buffer((1,), dtype=T.bool, scope="shared")
        T.alloc_buffer((1,), dtype=T.long, scope="shared")
        T.alloc_buffer((1,), dtype=T.float8_e8m0fnu, scope="local")

    text = str(allocs)
    assert "with T.Kernel(1, threads=1)" in text
    assert 'T.alloc_shared((1,), "int64", scope="shared")' in text
    assert 'T.alloc_local((1,), "float8_e8m0fnu", scope="local")' in text


def test_a_kernel_block_after_a_top_allocation_is_refused():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def mixed(A: T.Tensor((4,), "float32")):
            S = T.alloc_buffer((4,), "float32", scope="shared")  # noqa: F841
            with T.Kernel(1, threads=4):
                A[0] = 1.0

    assert (
        "T.Kernel after T.alloc_buffer(..., scope='shared') at the top of the function body: "
        "that TVM-style allocation opened the body's kernel (launched by T.thread_binding "
        "loops); allocate inside `with T.Kernel(...)` instead" in str(info.value)
    )
