"""User errors name the kernel's file and line, quote bad names, and keep the traceback
short: what the frontend rejects and how it says so."""

import inspect
import traceback

import pytest
import tilelang
import tilelang.language as T

HERE = __file__


def line_of(marker):
    """The line number in this file of the line containing `marker`."""
    lines, _ = inspect.findsource(inspect.getmodule(line_of))
    return next(i + 1 for i, text in enumerate(lines) if marker in text and "line_of" not in text)


def test_try_statement_names_file_and_line():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                try:  # MARK-try  # noqa: SIM105 (the kernel's statement under test)
                    A[0] = 1.0
                except ValueError:
                    pass

    assert str(info.value).startswith(f"{HERE}:{line_of('MARK-try')}: `try` statements")
    assert "kernel 'main'" in str(info.value)


@pytest.mark.parametrize("construct", ["global", "nested def"])
def test_other_unsupported_statements(construct):
    with pytest.raises(tilelang.TileLangError, match="not supported"):
        if construct == "global":

            @T.prim_func
            def main(A: T.Tensor((4,), "float32")):
                global HERE  # noqa: PLW0602 - the construct under test
                with T.Kernel(1, threads=1):
                    A[0] = 1.0
        else:

            @T.prim_func
            def main2(A: T.Tensor((4,), "float32")):
                with T.Kernel(1, threads=1):

                    def helper():
                        return 1

                    A[0] = helper()


def test_with_on_unknown_object_inside_kernel():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1), T.serial(4):  # MARK-with
                A[0] = 1.0

    assert str(info.value).startswith(f"{HERE}:{line_of('MARK-with')}: `with` on a serial object")


def test_core_errors_carry_the_user_line_and_a_short_traceback():
    n = T.dynamic("n")
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=1):
                S = T.alloc_shared((n,), "float32")  # MARK-core
                T.copy(A, S)

    assert str(info.value).startswith(f"{HERE}:{line_of('MARK-core')}: ")
    assert "constant shape" in str(info.value)
    frames = traceback.extract_tb(info.value.__traceback__)
    assert frames[-1].filename == HERE and frames[-1].lineno == line_of("MARK-core")
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_frontend_errors_carry_the_user_line():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                A[0, 1] = 1.0  # MARK-index

    assert str(info.value).split("\n")[0] == (
        f"{HERE}:{line_of('MARK-index')}: buffer 'A' has 1 dimension(s) but is indexed with 2"
    )


def test_break_of_python_loop_inside_symbolic_if():
    with pytest.raises(tilelang.TileLangError, match="`break` of a Python-level loop"):

        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                for v in [1, 2]:
                    if A[v] > 0:
                        break


def test_missing_parameter_annotation():
    with pytest.raises(tilelang.TileLangError, match="parameter 'A' .* needs an annotation"):

        @T.prim_func
        def main(A):
            pass


def test_symbolic_condition_has_no_python_truth_value():
    with pytest.raises(TypeError, match="has no Python truth value"):

        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                A[0] = bool(A[1] > 0)


def test_eager_only_constructs_in_prim_func():
    with pytest.raises(tilelang.TileLangError, match="T.const is for eager"):

        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            M = T.const("M")  # noqa: F841

    with pytest.raises(tilelang.TileLangError, match="declarations in the body are for eager"):

        @T.prim_func
        def main2(A: T.Tensor((4,), "float32")):
            B: T.Tensor((4,), "float32")  # noqa: F842


def test_out_idx_with_eager_function():
    with pytest.raises(ValueError, match="out_idx cannot be used with the eager"):

        @tilelang.jit(out_idx=[-1])
        def add(A):
            A: T.Tensor((4,), "float32")
            with T.Kernel(1, threads=1):
                A[0] = 1.0


def test_language_outside_a_kernel_function():
    with pytest.raises(tilelang.TileLangError, match="only be used inside a @T.prim_func"):
        T.alloc_shared((4,), "float32")


def test_compile_rejects_non_prim_func():
    with pytest.raises(TypeError, match="expects a T.prim_func, got function"):
        tilelang.compile(lambda: None)


def _kernel_with(construct):
    """Traces a kernel whose body uses one unsupported construct (on its MARK- line)."""
    outer = 0

    if construct == "nonlocal":

        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            nonlocal outer  # MARK-nonlocal
            with T.Kernel(1, threads=1):
                A[0] = 1.0

    elif construct == "class":

        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):

                class Helper:  # MARK-class
                    pass

                A[0] = 1.0

    elif construct == "yield":

        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                yield A  # MARK-yield

    return outer


@pytest.mark.parametrize(
    ("construct", "words"),
    [
        ("nonlocal", "`nonlocal` statements"),
        ("class", "class definitions"),
        ("yield", "`yield` expressions"),
    ],
)
def test_unsupported_statements_name_the_line(construct, words):
    with pytest.raises(tilelang.TileLangError) as info:
        _kernel_with(construct)
    assert str(info.value).split("\n")[0] == (
        f"{HERE}:{line_of('MARK-' + construct)}: {words} are not supported in the body of "
        "kernel 'main'"
    )


def test_assigning_a_buffer_to_an_alloc_var():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                x = T.alloc_var(T.float32, init=0.0)
                S = T.alloc_shared((4,), "float32")
                x = S  # MARK-varbuf
                A[0] = x

    assert str(info.value).split("\n")[0] == (
        f"{HERE}:{line_of('MARK-varbuf')}: cannot assign buffer 'S' (shared.dyn, shape (4,)) to "
        "'x', a T.alloc_var scalar of float32; assign one element such as S[i], or bind the "
        "buffer to a new name"
    )


def test_assigning_a_string_to_an_alloc_var_or_a_buffer_element():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                x: T.int32 = 0
                x = "three"  # MARK-varstr
                A[0] = x

    assert str(info.value).split("\n")[0] == (
        f"{HERE}:{line_of('MARK-varstr')}: cannot assign str 'three' to 'x', a T.alloc_var "
        "scalar of int32; assign a number or an expression"
    )
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main2(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                A[1] = "1.5"  # MARK-elemstr

    assert str(info.value).split("\n")[0] == (
        f"{HERE}:{line_of('MARK-elemstr')}: cannot store str '1.5' into buffer 'A' (float32); "
        "store a number or an expression"
    )


def test_storing_a_buffer_into_an_element_suggests_copy():
    with pytest.raises(tilelang.TileLangError, match=r"use T.copy\(src, A\[...\]\)|T.copy"):

        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                S = T.alloc_shared((4,), "float32")
                A[0] = S


@pytest.mark.parametrize(
    ("grid", "threads", "message"),
    [
        ((1, 2, 3, 4), 32, "T.Kernel takes 1 to 3 grid dimensions, got 4"),
        ((4,), 0, "T.Kernel threads must be positive, got 0"),
        ((4,), [128, 0], "T.Kernel threads must be positive, got [128, 0]"),
        ((4,), (32, 2, -2), "T.Kernel threads must be positive, got (32, 2, -2)"),
        ((4,), [32, 64], "T.Kernel asks for 2048 threads per block; the limit is 1024"),
    ],
)
def test_wrong_kernel_arguments(grid, threads, message):
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(*grid, threads=threads):  # MARK-kernel
                A[0] = 1.0

    assert str(info.value).startswith(f"{HERE}:{line_of('MARK-kernel')}: {message}")


def test_normalize_threads_pads_to_three_extents():
    from tilelang.language.kernel import _normalize_threads

    assert _normalize_threads(None) == [128, 1, 1]
    assert _normalize_threads(256) == [256, 1, 1]
    assert _normalize_threads([32, 4]) == [32, 4, 1]
    assert _normalize_threads((32, 2, 2)) == [32, 2, 2]
    with pytest.raises(ValueError, match="threads must be positive"):
        _normalize_threads([-1])


def test_names_that_are_keywords_of_a_dialect_are_renamed():
    # A convolution's weight is often called `kernel` (an MSL keyword); FlashAttention
    # backward's dO tile `do` (a C++ keyword). Every target compiles them.
    import numpy as np
    import tilelang
    import tilelang.language as T

    @T.prim_func
    def main(kernel: T.Tensor((64,), "float32"), half: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            do = T.alloc_shared((64,), "float32")
            T.copy(kernel, do)
            for i in T.Parallel(64):
                half[i] = do[i] * 2

    a = np.arange(64, dtype=np.float32)
    for target in ("cpu", "cuda -arch=sm_80 -emulate", "metal -emulate"):
        out = np.zeros(64, np.float32)
        tilelang.compile(main, target=target)(a, out)
        np.testing.assert_array_equal(out, a * 2, err_msg=target)


def test_negative_tensor_shape_is_refused():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func  # MARK-negative (a parameter's errors point at the function)
        def main(A: T.Tensor((4, -2), "float32")):
            with T.Kernel(1, threads=1):
                A[0, 0] = 1.0

    assert str(info.value).split("\n")[0] == (
        f"{HERE}:{line_of('MARK-negative')}: shape of parameter 'A' must not be negative; "
        "dimension 1 is -2"
    )


@pytest.mark.parametrize("scope", ["shared", "fragment", "local"])
def test_negative_alloc_shape_is_refused(scope):
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=32):
                S = getattr(T, "alloc_" + scope)((-4, 8), "float32")  # MARK-alloc
                T.clear(S)

    assert str(info.value).split("\n")[0] == (
        f"{HERE}:{line_of('MARK-alloc')}: shape of 'S' must be positive; dimension 0 is -4"
    )


@pytest.mark.parametrize(
    ("operands", "accumulator", "advice"),
    [
        ("float16", "int32", "float operands in float32"),
        ("bfloat16", "int8", "float operands in float32"),
        ("int8", "float16", "integer operands in int32"),
        ("int8", "float32", "integer operands in int32"),
    ],
)
def test_gemm_accumulator_that_cannot_hold_the_products_is_refused(operands, accumulator, advice):
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((32, 32), operands), B: T.Tensor((32, 32), operands)):
            with T.Kernel(1, threads=128):
                A_s = T.alloc_shared((32, 32), operands)
                B_s = T.alloc_shared((32, 32), operands)
                C_f = T.alloc_fragment((32, 32), accumulator)
                T.copy(A, A_s)
                T.copy(B, B_s)
                T.gemm(A_s, B_s, C_f)  # MARK-gemm-acc

    assert str(info.value).split("\n")[0] == (
        f"{HERE}:{line_of('MARK-gemm-acc')}: T.gemm accumulator C 'C_f' is {accumulator}, which "
        f"cannot hold the products of {operands} A 'A_s' and {operands} B 'B_s'; accumulate {advice}"
    )


def test_slice_with_a_step_is_also_a_runtime_error():
    # TileLang refuses a buffer slice with a step with a RuntimeError; the error here is
    # that class too, and still names the buffer, the step and the user's line.
    with pytest.raises(RuntimeError) as info:

        @T.prim_func
        def main(A: T.Tensor((10,), "int32"), B: T.Tensor((5,), "int32")):
            with T.Kernel(1):
                B[0:5] = A[0:10:2]  # MARK-slice-step

    assert isinstance(info.value, tilelang.TileLangError)
    assert str(info.value).split("\n")[0] == (
        f"{HERE}:{line_of('MARK-slice-step')}: slices of buffer 'A' must have step 1, got 2"
    )


def test_an_error_shows_its_source_line_and_notes_where_the_buffer_was_made():
    """Under the message's first line, the source line as compilers show it
    (`--> path:line:col`), and a note with the line that allocated the fragment."""

    @T.prim_func
    def main(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            frag = T.alloc_fragment((4,), "float32")  # MARK-snippet-alloc
            for i in T.Parallel(4):
                frag[1] = A[i]  # MARK-snippet-store

    with pytest.raises(tilelang.TileLangError) as info:
        tilelang.compile(main, target="cpu")
    lines = str(info.value).split("\n")
    store, alloc = line_of("MARK-snippet-store"), line_of("MARK-snippet-alloc")
    assert lines[0].startswith(f"{HERE}:{store}: T.Parallel: every iteration stores frag[1]")
    pad = " " * len(str(store))
    assert lines[1:5] == [
        f"{pad}--> {HERE}:{store}:17",
        f"{pad} |",
        f"{store} |                 frag[1] = A[i]  # MARK-snippet-store",
        f"{pad} |",
    ]
    assert lines[5] == "note: fragment 'frag' is allocated here"
    assert lines[6] == f"{pad}--> {HERE}:{alloc}:13"
    assert "# MARK-snippet-alloc" in lines[8]


def test_a_frontend_error_shows_its_source_line_too():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((10,), "int32"), B: T.Tensor((5,), "int32")):
            with T.Kernel(1):
                B[0:5] = A[0:10:2]  # MARK-snippet-frontend

    line = line_of("MARK-snippet-frontend")
    assert str(info.value).split("\n")[1:4] == [
        f"{' ' * len(str(line))}--> {HERE}:{line}:17",
        f"{' ' * len(str(line))} |",
        f"{line} |                 B[0:5] = A[0:10:2]  # MARK-snippet-frontend",
    ]
