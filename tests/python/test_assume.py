"""T.assume: a promise the compiler relies on to drop the bounds checks it implies (for
the rest of the enclosing block, or until a variable it reads is assigned), and that
every call checks where it reads only scalar arguments and symbolic sizes."""

import re

import numpy as np
import pytest
import tilelang
import tilelang.language as T

SM80 = "cuda -arch=sm_80 -emulate"
TARGETS = ["cpu", SM80, "metal -emulate"]
rng = np.random.default_rng(11)


def zero_range():
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), lo: T.int32, hi: T.int32):
        with T.Kernel(1, threads=32) as _:
            for i in T.serial(hi - lo + 1):
                T.assume(lo + i >= 0 and lo + i < N)
                A[lo + i] = 0

    return main


def guards(source):
    return re.findall(r"if \(|\? ", source)


def test_a_promise_drops_the_check_it_implies():
    source = tilelang.compile(zero_range(), target=SM80).get_kernel_source()
    assert not guards(source), source


@pytest.mark.parametrize("target", TARGETS)
def test_a_kept_promise_gives_the_same_result(target):
    a = rng.standard_normal(64).astype(np.float32)
    want = a.copy()
    want[10:21] = 0
    tilelang.compile(zero_range(), target=target)(a, 10, 20)
    np.testing.assert_array_equal(a, want)


def test_without_the_promise_the_check_stays():
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), lo: T.int32, hi: T.int32):
        with T.Kernel(1, threads=32) as _:
            for i in T.serial(hi - lo + 1):
                A[lo + i] = 0

    source = tilelang.compile(main, target=SM80).get_kernel_source()
    assert guards(source), source


def test_a_promise_on_a_variable_ends_where_it_is_assigned():
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), out: T.Tensor((2,), "float32"), lo: T.int32):
        with T.Kernel(1, threads=32) as _:
            x = T.alloc_var(T.int32)
            x = lo
            T.assume(x >= 0 and x < N)
            out[0] = A[x]  # checked by the promise
            x = lo + 100
            out[1] = A[x]  # not: x changed

    source = tilelang.compile(main, target=SM80).get_kernel_source()
    # (a T.alloc_var is a plain variable in CUDA code)
    body = source[source.index(" x = l") :]
    first, second = body.split(" x = (l", 1)
    assert not guards(first) and len(guards(second)) == 1, source
    a = rng.standard_normal(8).astype(np.float32)
    out = np.zeros(2, np.float32)
    for target in TARGETS:
        tilelang.compile(main, target=target)(a, out, 3)
        np.testing.assert_array_equal(out, [a[3], 0])  # the second read is outside: 0


def test_a_promise_inside_a_branch_ends_with_it():
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), i: T.int32, flag: T.int32):
        with T.Kernel(1, threads=32) as _:
            if flag > 0:
                T.assume(i >= 0 and i < N)
                A[i] = 1
            A[i] = A[i] + 1

    source = tilelang.compile(main, target=SM80).get_kernel_source()
    assert len(guards(source)) >= 1, source
    a = np.zeros(4, np.float32)
    tilelang.compile(main, target="cpu")(a, 9, 0)  # out of bounds, and no promise made
    np.testing.assert_array_equal(a, 0)


def test_a_symbolic_loop_bound_needs_no_check():
    M, N = T.dynamic("M"), T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=1) as bx:
            for j in T.serial(N):
                B[bx, j] = A[bx, j] * 2

    source = tilelang.compile(main, target=SM80).get_kernel_source()
    assert not guards(source), source
    a = rng.standard_normal((3, 5)).astype(np.float32)
    b = np.zeros_like(a)
    tilelang.compile(main, target="cpu")(a, b)
    np.testing.assert_array_equal(b, a * 2)


def divisible_by_four():
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32):
            T.assume(N % 4 == 0)
            tx = T.get_thread_binding()
            if tx < N:
                A[tx] = 1.0

    return main


@pytest.mark.parametrize("target", TARGETS)
def test_a_promise_over_sizes_is_checked_at_every_call(target):
    kernel = tilelang.compile(divisible_by_four(), target=target)
    a = np.zeros(8, np.float32)
    kernel(a)
    np.testing.assert_array_equal(a, 1)
    b = np.zeros(6, np.float32)
    with pytest.raises(
        tilelang.AssumptionError, match=r"Assume: N % 4 == 0 does not hold for this call \(N = 6\)"
    ):
        kernel(b)
    np.testing.assert_array_equal(b, 0)  # nothing ran
    assert issubclass(tilelang.AssumptionError, RuntimeError)
    assert issubclass(tilelang.AssumptionError, tilelang.TileLangError)


def test_the_check_survives_export_and_load(tmp_path):
    kernel = tilelang.compile(divisible_by_four(), target="cpu")
    kernel.export_library(str(tmp_path / "k.tlk"))
    loaded = tilelang.JITKernel.from_library(str(tmp_path / "k.tlk"))
    a = np.zeros(4, np.float32)
    loaded(a)
    np.testing.assert_array_equal(a, 1)
    with pytest.raises(tilelang.AssumptionError, match="N % 4 == 0"):
        loaded(np.zeros(6, np.float32))


@pytest.mark.parametrize(
    ("cond", "match"),
    [
        ("False", r"T.assume\(False\): the promise never holds"),
        ("x", r"T.assume takes a condition such as `i < N`, got float32"),
    ],
)
def test_assume_errors(cond, match):
    with pytest.raises(Exception, match=match):

        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1) as _:
                x = A[0]  # noqa: F841 (read by eval)
                T.assume(eval(cond))


@pytest.mark.parametrize("target", TARGETS)
def test_a_promise_before_the_kernel_block_holds_in_it(target):
    """TileLang allows T.assume at the top of the function, outside T.Kernel."""
    stride = T.dynamic("stride")

    @T.prim_func
    def main(
        dst: T.StridedTensor((2, 64), (stride, 1), "uint8"),
        src: T.StridedTensor((2, 64), (stride, 1), "uint8"),
    ):
        T.assume(stride % 2 == 0)
        with T.Kernel(1):
            for r, c in T.Parallel(2, 64):
                dst[r, c] = src[r, c]

    kernel = tilelang.compile(main, target=target)
    src = rng.integers(0, 255, (4, 64), dtype=np.uint8)
    dst = np.zeros((4, 64), np.uint8)
    kernel(dst[::2], src[::2])
    np.testing.assert_array_equal(dst[::2], src[::2])
    odd = np.zeros((2, 65), np.uint8)
    with pytest.raises(
        tilelang.AssumptionError,
        match=r"Assume: stride % 2 == 0 does not hold for this call \(stride = 65\)",
    ):
        kernel(odd[:, :64], odd[:, :64])


def rows_by_four(M=32):
    """TileLang's language/test_tilelang_language_assume.py kernel: each thread copies
    four elements of its row; N % 4 == 0 makes every run 16-byte aligned."""
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=32) as _:
            tid = T.get_thread_binding()
            base = tid * 4
            T.assume(N % 4 == 0)
            for i in T.vectorized(4):
                T.assume(base + i < N)
                B[tid, base + i] = A[tid, base + i]

    return main


def test_a_promised_multiple_lets_a_vectorized_loop_move_whole_vectors():
    # The promise is checked at every call (above), so the vector access the compiler
    # derives from it can never be misaligned.
    source = tilelang.compile(rows_by_four(), target="cuda -arch=sm_90a").get_kernel_source()
    assert "tl::copy_vec<4>(" in source and not guards(source), source
    kernel = tilelang.compile(rows_by_four(), target=SM80)
    a = rng.standard_normal((32, 128)).astype(np.float32)
    b = np.zeros_like(a)
    kernel(a, b)
    want = np.zeros_like(a)
    for t in range(32):
        want[t, 4 * t : 4 * t + 4] = a[t, 4 * t : 4 * t + 4]
    np.testing.assert_array_equal(b, want)
    with pytest.raises(
        tilelang.AssumptionError, match=r"N % 4 == 0 does not hold for this call \(N = 6\)"
    ):
        kernel(np.zeros((32, 6), np.float32), np.zeros((32, 6), np.float32))


def test_without_a_promised_multiple_the_loop_stays_per_element():
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((32, N), "float32"), B: T.Tensor((32, N), "float32")):
        with T.Kernel(1, threads=32) as _:
            tid = T.get_thread_binding()
            for i in T.vectorized(4):
                T.assume(tid * 4 + i < N)
                B[tid, tid * 4 + i] = A[tid, tid * 4 + i]

    source = tilelang.compile(main, target="cuda -arch=sm_90a").get_kernel_source()
    assert "copy_vec" not in source, source  # row starts tid * N need not be aligned


@pytest.mark.parametrize("target", TARGETS)
def test_a_promise_over_a_let_holds_for_its_value(target):
    # TileLang's test_assume_complex_indexing: `i_src` is a let (tid + 2 once simplified);
    # the promise i_src < M then also says tid + 2 < M, which drops B's row check.
    M, N = T.dynamic("M"), T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=32) as _:
            tid = T.get_thread_binding()
            for j in T.serial(N):
                i_src = T.min(j + 233, tid + 2)
                T.assume(i_src >= 0 and i_src < M)
                B[tid, j] = A[i_src, j]

    if target == SM80:
        assert not guards(tilelang.compile(main, target=target).get_kernel_source())
    a = rng.standard_normal((40, 8)).astype(np.float32)
    b = np.zeros((40, 8), np.float32)
    tilelang.compile(main, target=target)(a, b)
    np.testing.assert_array_equal(b[:32], a[2:34])
    np.testing.assert_array_equal(b[32:], 0)
