"""Loop constructs on the CPU, compared with numpy: T.serial with negative and non-unit
steps (constant and symbolic bounds), T.unroll, T.vectorized with start/stop, range with
1-3 arguments, T.Parallel with coalesced_width / loop_layout, T.Pipelined schedules; and
the errors for misused loops."""

import inspect

import numpy as np
import pytest
import tilelang
import tilelang.language as T

rng = np.random.default_rng(3)
HERE = __file__
N = 29


def line_of(marker):
    lines, _ = inspect.findsource(inspect.getmodule(line_of))
    return next(i + 1 for i, text in enumerate(lines) if marker in text and "line_of" not in text)


n_dyn = T.dynamic("n")


@T.prim_func
def loop_forms(A: T.Tensor((n_dyn,), "float32"), B: T.Tensor((8, n_dyn), "float32")):
    with T.Kernel(1, threads=1):
        for i in T.serial(n_dyn):  # row 0: copy
            B[0, i] = A[i]
        for i in T.serial(n_dyn - 1, -1, -1):  # row 1: reversed, negative step, symbolic start
            B[1, n_dyn - 1 - i] = A[i]
        for i in T.serial(1, n_dyn, 3):  # row 2: every third element from 1, symbolic stop
            B[2, i] = A[i] * 2.0
        for i in T.unroll(0, 6, 2):  # row 3: unrolled, constant bounds, step 2
            B[3, i] = A[i] + 1.0
        for i in T.vectorized(2, 6):  # row 4: vectorized with start/stop
            B[4, i] = A[i] - 1.0
        for i in range(3):  # row 5: range with one, two and three arguments
            B[5, i] = 1.0
        for i in range(4, n_dyn):
            B[5, i] = A[i]
        for i in range(n_dyn - 1, 10, -4):
            B[5, i] = -A[i]
        for i in T.serial(20, 2, -5):  # row 6: constant bounds, negative step
            B[6, i] = A[i] * 3.0
        for i, j in T.Parallel(2, 4, coalesced_width=2, loop_layout=lambda i, j: i * 4 + j):
            B[7, i * 4 + j] = A[i * 4 + j] + 0.5


def loop_forms_ref(a):
    n = a.size
    b = np.full((8, n), -7.0, np.float32)
    b[0] = a
    b[1] = a[::-1]
    b[2, 1::3] = a[1::3] * 2
    b[3, 0:6:2] = a[0:6:2] + 1
    b[4, 2:6] = a[2:6] - 1
    b[5, :3] = 1
    b[5, 4:] = a[4:]
    for i in range(n - 1, 10, -4):
        b[5, i] = -a[i]
    for i in range(20, 2, -5):
        b[6, i] = a[i] * 3
    b[7, :8] = a[:8] + 0.5
    return b


@pytest.fixture(scope="module")
def loop_kernel():
    return tilelang.compile(loop_forms, target="cpu")


@pytest.mark.parametrize("n", [29, 22])
def test_loop_forms_match_numpy(loop_kernel, n):
    a = rng.standard_normal(n).astype(np.float32)
    b = np.full((8, n), -7.0, np.float32)
    loop_kernel(a, b)
    np.testing.assert_allclose(b, loop_forms_ref(a), rtol=1e-6)


def test_loop_scripts():
    script = loop_forms.script()
    assert "T.unroll(" in script and "T.vectorized(" in script
    assert "coalesced_width" in script


@tilelang.jit(out_idx=[-1], target="cpu")
def pipelined_sum(n, block, stages):
    @T.prim_func
    def main(A: T.Tensor((n, block), "float32"), B: T.Tensor((block,), "float32")):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((block,), "float32")
            acc = T.alloc_fragment((block,), "float32")
            T.clear(acc)
            for k in T.Pipelined(n, num_stages=stages, order=[0, 1], stage=[0, stages]):
                T.copy(A[k, 0], S)
                for j in T.Parallel(block):
                    acc[j] += S[j] * (k + 1)
            T.copy(acc, B)

    return main


@pytest.mark.parametrize("stages", [0, 2])
def test_pipelined_with_order_and_stage(stages):
    a = rng.standard_normal((9, 16)).astype(np.float32)
    ref = (a * np.arange(1, 10, dtype=np.float32)[:, None]).sum(0)
    np.testing.assert_allclose(pipelined_sum(9, 16, stages)(a), ref, rtol=1e-5)


def test_pipelined_order_length_must_match_the_body():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((4, 8), "float32")):
            with T.Kernel(1, threads=32):
                S = T.alloc_shared((8,), "float32")
                for k in T.Pipelined(4, num_stages=2, order=[0, 1, 2]):  # MARK-order
                    T.copy(A[k, 0], S)
                    T.copy(S, A[k, 0])

    assert str(info.value).split("\n")[0] == (
        f"{HERE}:{line_of('MARK-order')}: T.Pipelined order=[0, 1, 2] has 3 entries but the "
        "loop body has 2 statement(s); give one entry per statement, in program order"
    )


def test_pipelined_schedule_values_are_checked():
    with pytest.raises(
        tilelang.TileLangError, match=r"stage=\[0, -2\] has entries \[-2\] below -1"
    ):

        @T.prim_func
        def main(A: T.Tensor((4, 8), "float32")):
            with T.Kernel(1, threads=32):
                S = T.alloc_shared((8,), "float32")
                for k in T.Pipelined(4, num_stages=2, stage=[0, -2]):
                    T.copy(A[k, 0], S)
                    T.copy(S, A[k, 0])

    with pytest.raises(tilelang.TileLangError, match=r"order=\[1, 1\] must number"):

        @T.prim_func
        def main2(A: T.Tensor((4, 8), "float32")):
            with T.Kernel(1, threads=32):
                S = T.alloc_shared((8,), "float32")
                for k in T.Pipelined(4, num_stages=2, order=[1, 1]):
                    T.copy(A[k, 0], S)
                    T.copy(S, A[k, 0])

    with pytest.raises(tilelang.TileLangError, match="num_stages must be a non-negative"):

        @T.prim_func
        def main3(A: T.Tensor((4, 8), "float32")):
            with T.Kernel(1, threads=32):
                for k in T.Pipelined(4, num_stages=-1):
                    A[k, 0] = 1.0


def test_zero_step_names_the_loop_and_the_fix():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=1):
                for i in T.serial(0, 8, 0):  # MARK-zero
                    A[i] = 1.0

    assert str(info.value).split("\n")[0] == (
        f"{HERE}:{line_of('MARK-zero')}: T.serial(0, 8, 0): the step must not be zero; use a "
        "positive step to count up or a negative one to count down"
    )


@T.prim_func
def run_time_steps(
    A: T.Tensor((N,), "float32"),
    B: T.Tensor((3, N), "float32"),
    start: T.int32,
    stop: T.int32,
    step: T.int32,
):
    with T.Kernel(1, threads=1):
        for i in T.serial(start, stop, step):
            B[0, i] = A[i] * 2.0
        for i in T.unroll(start, stop, step):
            B[1, i] = A[i] + 1.0
        for i in T.Serial(start, stop, step):
            B[2, i] = A[i] - 3.0


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
def test_steps_known_at_run_time_count_up_down_or_not_at_all(target):
    # TileLang takes a T.serial / T.unroll step that is an expression; its sign decides
    # the direction at run time, and a step of 0 runs no iteration.
    kernel = tilelang.compile(run_time_steps, target=target)
    for start, stop, step in [(1, N, 3), (N - 1, -1, -2), (27, 2, -5), (0, N, -3), (3, 20, 0)]:
        a = rng.standard_normal(N).astype(np.float32)
        b = np.full((3, N), -7.0, np.float32)
        kernel(a, b, start, stop, step)
        ref = np.full((3, N), -7.0, np.float32)
        idx = list(range(start, stop, step)) if step else []
        ref[0, idx] = a[idx] * 2
        ref[1, idx] = a[idx] + 1
        ref[2, idx] = a[idx] - 3
        np.testing.assert_allclose(b, ref, rtol=1e-6, err_msg=f"range({start}, {stop}, {step})")


def test_stepped_loops_are_not_tvm_frames():
    # As in TileLang: a loop of step 1 is a TVM IRBuilderFrame, one of another step a
    # SerialForWithStep / UnrollForWithStep.
    from tilelang.tvm.script.ir_builder.base import IRBuilderFrame

    assert isinstance(T.serial(1, 10, 1), IRBuilderFrame)
    assert isinstance(T.serial(1, 10), IRBuilderFrame)
    assert not isinstance(T.serial(10, -1, -1), IRBuilderFrame)
    assert type(T.serial(0, 10, 2)).__name__ == "SerialForWithStep"
    assert type(T.unroll(0, 10, 2)).__name__ == "UnrollForWithStep"
    assert isinstance(T.unroll(0, 10, 2), T.unroll)


def test_step_that_is_not_an_integer_or_of_a_vectorized_loop_is_rejected():
    with pytest.raises(
        tilelang.TileLangError, match=r"T.serial\(0, 8, s\): the step must be an integer"
    ):

        @T.prim_func
        def main(A: T.Tensor((8,), "float32"), s: T.float32):
            with T.Kernel(1, threads=1):
                for i in T.serial(0, 8, s):
                    A[i] = 1.0

    with pytest.raises(
        tilelang.TileLangError, match=r"T.vectorized\(0, 8, s\): the step must be a constant"
    ):

        @T.prim_func
        def main2(A: T.Tensor((8,), "float32"), s: T.int32):
            with T.Kernel(1, threads=1):
                for i in T.vectorized(0, 8, s):
                    A[i] = 1.0


def test_parallel_loop_layout_is_checked():
    with pytest.raises(tilelang.TileLangError, match="loop_layout=...\\) expects a T.Fragment"):

        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=8):
                for i in T.Parallel(8, loop_layout=3):
                    A[i] = 1.0

    with pytest.raises(tilelang.TileLangError, match="T.Parallel extents must be integers"):

        @T.prim_func
        def main2(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=8):
                for i in T.Parallel(8.0):
                    A[i] = 1.0


@T.prim_func
def capitalized_loops(A: T.Tensor((12,), "float32"), B: T.Tensor((3, 12), "float32")):
    with T.Kernel(1, threads=1):
        for i in T.Serial(
            1, 12, 2
        ):  # TileLang's capitalized aliases of serial / unroll / vectorized
            B[0, i] = A[i] * 2.0
        for i in T.Unroll(4):
            B[1, i] = A[i] + 1.0
        for i in T.Vectorized(4, 12):
            B[2, i] = A[i] - 3.0


def test_capitalized_loop_aliases_match_numpy():
    a = rng.standard_normal(12).astype(np.float32)
    b = np.full((3, 12), -7.0, np.float32)
    tilelang.compile(capitalized_loops, target="cpu")(a, b)
    ref = np.full((3, 12), -7.0, np.float32)
    ref[0, 1::2] = a[1::2] * 2
    ref[1, :4] = a[:4] + 1
    ref[2, 4:] = a[4:] - 3
    np.testing.assert_allclose(b, ref, rtol=1e-6)


@T.prim_func
def unrolled_by_factor(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
    with T.Kernel(1, threads=1):
        for i in T.unroll(0, 16, unroll_factor=4):
            B[i] = A[i] * 2.0 + 1.0


@pytest.mark.parametrize(
    "target, pragma",
    [("cpu", "#pragma GCC unroll 4"), ("cuda -arch=sm_80 -emulate", "#pragma unroll 4")],
)
def test_unroll_factor_is_the_pragma_count(target, pragma):
    # TileLang's T.unroll(..., unroll_factor=n) unrolls n times (`#pragma unroll n`);
    # without it the loop is unrolled as the target's default pragma says.
    kernel = tilelang.compile(unrolled_by_factor, target=target)
    assert pragma + "\n" in kernel.get_kernel_source()
    a = rng.standard_normal(16).astype(np.float32)
    b = np.zeros(16, np.float32)
    kernel(a, b)
    np.testing.assert_allclose(b, a.astype(np.float64) * 2 + 1, rtol=1e-6)
