"""Debugging kernels on the CPU: T.print's text (tiles, slices, expressions, messages,
each line prefixed with block and thread), T.device_assert raised as a Python error
after the launch, and pass_configs key checking."""

import inspect

import numpy as np
import pytest
import tilelang
import tilelang.language as T

HERE = __file__.rsplit("/", 1)[-1]
P0 = "[block (0, 0, 0), thread (0, 0, 0)]"


def line_of(marker):
    lines, _ = inspect.findsource(inspect.getmodule(line_of))
    return next(i + 1 for i, text in enumerate(lines) if marker in text and "line_of" not in text)


def test_print_tiles_expressions_and_messages(capfd):
    @T.prim_func
    def main(
        A: T.Tensor((2, 3), "float32"),
        H: T.Tensor((4,), "float16"),
        I: T.Tensor((3,), "int32"),
    ):
        with T.Kernel(1, threads=4):
            s = T.alloc_shared((2, 3), "float32")
            T.copy(A, s)
            T.print(s)
            T.print(H[1:3], msg="halves")
            T.print(A[1, 2] * 2.0, msg="twice")
            T.print(I[0] + I[1])
            T.print(I[2] > 0, msg="positive")
            v = T.alloc_var("int8", init=-7)
            T.print(v)
            T.print(msg='done: "quoted"\\path')

    a = np.array([[0.5, -1.25, 3.0], [1e-3, 2.5e10, -0.0]], np.float32)
    h = np.array([1.0, 0.1, 65504.0, -2.0], np.float16)
    i = np.array([20, 22, -1], np.int32)
    kernel = tilelang.compile(main, target="cpu")
    capfd.readouterr()
    kernel(a, h, i)
    out = capfd.readouterr().out
    assert out.splitlines() == [
        f"{P0} buffer s (float32, shape (2, 3))",
        "  s[0, :] = 0.5 -1.25 3",
        "  s[1, :] = 0.001 2.5e+10 -0",
        f"{P0} halves: buffer H[1:3] (float16, shape (2,))",
        "  H[1:3] = 0.1 6.55e+04",
        f"{P0} twice: -0",
        f"{P0} I[0] + I[1]: 42",
        f"{P0} positive: False",
        f"{P0} v: -7",
        f'{P0} done: "quoted"\\path',
    ]


def test_print_from_every_block(capfd):
    @T.prim_func
    def main(A: T.Tensor((3, 2, 4), "float32")):
        with T.Kernel(3, 2, threads=(8, 2)) as (bx, by):
            T.print(A[bx, by, 1:4], msg="row")
            T.print(bx * 10 + by, msg="id")

    a = np.arange(24, dtype=np.float32).reshape(3, 2, 4) / 4
    kernel = tilelang.compile(main, target="cpu")
    capfd.readouterr()
    kernel(a)
    out = capfd.readouterr().out
    ids = sorted(line for line in out.splitlines() if " id: " in line)
    assert ids == [
        f"[block ({x}, {y}, 0), thread (0, 0, 0)] id: {10 * x + y}"
        for x in range(3)
        for y in range(2)
    ]
    # A tile is printed whole even though blocks run in parallel.
    lines = out.splitlines()
    for x in range(3):
        for y in range(2):
            head = f"[block ({x}, {y}, 0), thread (0, 0, 0)] row: buffer A[bx, by, 1:4]"
            k = lines.index(f"{head} (float32, shape (1, 1, 3))")
            values = " ".join(f"{v:g}" for v in a[x, y, 1:4])
            assert lines[k + 1] == f"  A[{x}, {y}, 1:4] = {values}"


@pytest.fixture(scope="module")
def assert_kernel():
    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(4, threads=1) as bx:
            T.device_assert(A[bx] >= 0, "A must be non-negative")  # MARK-assert
            T.device_assert(True, "never emitted")
            B[bx] = T.sqrt(A[bx])

    return tilelang.compile(main, target="cpu")


def test_device_assert_failure_is_a_python_error(assert_kernel):
    a = np.array([1.0, 4.0, -9.0, 16.0], np.float32)
    b = np.zeros(4, np.float32)
    with pytest.raises(tilelang.TileLangError) as info:
        assert_kernel(a, b)
    assert str(info.value).split("\n")[0] == (
        "device assertion failed in kernel 'main': A must be non-negative "
        f"(at {HERE}:{line_of('MARK-assert')}) (block (2, 0, 0))"
    )
    # The failure is cleared: the kernel runs normally afterwards.
    a[2] = 9.0
    assert_kernel(a, b)
    np.testing.assert_array_equal(b, [1, 2, 3, 4])
    assert "never emitted" not in assert_kernel.get_kernel_source()


def test_device_assert_without_message_quotes_the_condition():
    @T.prim_func
    def main(N: T.int32, A: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=1):
            T.device_assert(N < 4)  # MARK-bare
            A[0] = N

    a = np.zeros(4, np.int32)
    kernel = tilelang.compile(main, target="cpu")
    kernel(3, a)
    assert a[0] == 3
    with pytest.raises(tilelang.TileLangError) as info:
        kernel(5, a)
    assert f"'main': `N < 4` is false (at {HERE}:{line_of('MARK-bare')}) (block (0, 0, 0))" in str(
        info.value
    )


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
def test_device_assert_on_fragment_elements_in_a_parallel_loop(target):
    # A T.Parallel loop whose only statement is an assertion on fragment elements is
    # spread over the threads that hold them (it was an internal compiler error).
    @T.prim_func
    def main(score: T.Tensor((16,), "float32"), out: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            frag = T.alloc_fragment((32,), "float32")
            for i in T.Parallel(32):
                if i < 16:
                    frag[i] = score[i] * 2
                else:
                    frag[i] = T.infinity("float32")
            for i in T.Parallel(32):
                if i < 16:
                    T.device_assert(T.isfinite(frag[i]), "score must be finite")  # MARK-frag
            T.copy(frag, out)

    kernel = tilelang.compile(main, target=target)
    score = np.random.default_rng(5).standard_normal(16).astype(np.float32)
    out = np.zeros(32, np.float32)
    kernel(score, out)
    np.testing.assert_array_equal(out[:16], score * 2)
    assert np.isinf(out[16:]).all()
    score[11] = np.nan
    with pytest.raises(tilelang.TileLangError) as info:
        kernel(score, out)
    assert f"score must be finite (at {HERE}:{line_of('MARK-frag')})" in str(info.value)


def test_print_and_assert_misuse():
    with pytest.raises(
        tilelang.TileLangError, match="T.print must be called inside a `with T.Kernel"
    ):

        @T.prim_func
        def outside(A: T.Tensor((4,), "float32")):
            T.print(A)

    with pytest.raises(tilelang.TileLangError, match=r"T.print\(\) needs something to print"):

        @T.prim_func
        def empty(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                T.print()

    with pytest.raises(tilelang.TileLangError, match="T.print takes a buffer, a slice of one"):

        @T.prim_func
        def wrong(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                T.print([1, 2])

    with pytest.raises(
        tilelang.TileLangError, match="T.device_assert msg must be a string, got int"
    ):

        @T.prim_func
        def bad_msg(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                T.device_assert(A[0] > 0, 3)


def copy_kernel():
    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8):
            for i in T.Parallel(8):
                B[i] = T.exp(A[i])

    return main


def test_unknown_pass_config_key_lists_the_known_ones():
    with pytest.raises(ValueError) as info:
        tilelang.compile(copy_kernel(), target="cpu", pass_configs={"tl.enable_fast_maths": True})
    message = str(info.value)
    assert message.startswith(
        "unknown pass config key 'tl.enable_fast_maths' (did you mean 'tl.enable_fast_math'?); "
        "known keys: "
    )
    assert "tl.disable_tma_lower" in message and "tl.disable_warp_specialized" in message
    # @tilelang.jit reports it when decorating, before any call.
    with pytest.raises(ValueError, match="unknown pass config key 'bogus'; known keys: "):

        @tilelang.jit(pass_configs={"bogus": 1})
        def factory():
            return copy_kernel()

    with pytest.raises(TypeError, match="pass_configs must be a dict"):
        tilelang.compile(copy_kernel(), target="cpu", pass_configs=["tl.enable_fast_math"])


def test_known_pass_configs_are_accepted():
    configs = {
        tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True,
        "tl.disable_warp_specialized": True,
        "tir.disable_vectorize": False,
        "tirx.disable_cse_tir": True,
    }
    kernel = tilelang.compile(copy_kernel(), target="cpu", pass_configs=configs)
    a = np.linspace(-2, 2, 8).astype(np.float32)
    b = np.zeros(8, np.float32)
    kernel(a, b)
    np.testing.assert_allclose(b, np.exp(a), rtol=1e-6)


def test_the_key_list_is_the_compiler_core_s():
    """tilelang.PassConfigKey names exactly the keys the core's table has
    (src/transform/pass_config.cpp), and the core checks a C++-level call too."""
    from tilelang import _native

    core = {key for key, *_ in _native.load().pass_config_keys()}
    assert {k.value for k in tilelang.PassConfigKey} == core
    used = {key for key, _, _, used in _native.load().pass_config_keys() if used}
    assert "tl.disable_tma_lower" in used and "tl.Simplify" not in used
    core_fn = copy_kernel().core
    with pytest.raises(
        tilelang.TileLangError,
        match=r"unknown pass config key 'tl.disable_tma_lowr' \(did you mean 'tl.disable_tma_lower'\?\)",
    ):
        _native.load().generate_source(core_fn, "cpu", {"tl.disable_tma_lowr": True})
    with pytest.raises(
        tilelang.TileLangError,
        match=r"pass config 'tl.config_index_bitwidth' must be 32 or 64, got int 16",
    ):
        _native.load().generate_source(core_fn, "cpu", {"tl.config_index_bitwidth": 16})
