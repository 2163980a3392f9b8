"""How kernel bodies are traced: Python values decide at trace time, symbolic ones become
IR. Checked on the printed IR of small kernels (and, for tuple assignments, run)."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

m = T.dynamic("m")


@T.macro
def add_one(buf, i):
    buf[i] = buf[i] + 1


def traced(flag):
    @T.prim_func
    def main(A: T.Tensor((16,), "float32"), n: T.int32):
        with T.Kernel(1, threads=1):
            if flag:
                A[0] = 1.0
            else:
                A[0] = 2.0
            if A[1] > 0:
                A[2] = 3.0
            else:
                A[2] = 4.0

    return main.script()


def test_python_if_picks_one_branch_and_symbolic_if_keeps_both():
    script = traced(True)
    assert "A[0] = 1.0" in script and "A[0] = 2.0" not in script
    assert "if (A[1] > 0.0):" in script and "A[2] = 3.0" in script and "A[2] = 4.0" in script
    assert "A[0] = 2.0" in traced(False)


def test_range_becomes_serial_and_break_continue_are_ir():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32"), n: T.int32):
        with T.Kernel(1, threads=1):
            for k in range(n):
                if A[k] < 0:
                    break
                if A[k] > 5:
                    continue
                A[k] = 0.0
            for j in range(2, 16, 4):
                A[j] = 1.0

    script = main.script()
    assert "for k in T.serial(n):" in script
    assert "break" in script and "continue" in script
    assert "for j in T.serial(4):" in script


def test_python_loops_over_python_values_unroll():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=1):
            for v in [3, 5]:
                if v == 5:
                    break
                A[v] = 1.0
            k = 0
            while k < 2:
                A[10 + k] = 2.0
                k += 1

    script = main.script()
    assert "A[3] = 1.0" in script and "A[5]" not in script
    assert "A[10] = 2.0" in script and "A[11] = 2.0" in script and "while" not in script


def test_alloc_var_assignment_stores():
    @T.prim_func
    def main(A: T.Tensor((16,), "int32")):
        with T.Kernel(1, threads=1):
            x = T.alloc_var(T.int32, init=3)
            x = x + A[0]
            x += 2
            while x < 100:
                x = x * 2
            A[1] = x

    script = main.script()
    assert "x[0] = 3" in script and "x[0] = (x[0] + A[0])" in script
    assert "x[0] = (x[0] + 2)" in script and "while (x[0] < 100):" in script
    assert "A[1] = x[0]" in script


def test_chained_comparison_and_boolean_operators():
    @T.prim_func
    def main(A: T.Tensor((m,), "float32")):
        with T.Kernel(T.ceildiv(m, 4), threads=4) as bx:
            tx = T.get_thread_binding()
            i = bx * 4 + tx
            if 0 <= i < m:
                A[i] = 1.0
            if not (i < 3) or A[0] > 1:
                A[0] = 2.0
            limit = None
            if limit is not None and limit > 3:
                A[1] = 5.0
            A[2] = 1.0 if i > 2 else 0.0

    script = main.script()
    assert "if ((i >= 0) && (i < m)):" in script
    assert "||" in script and "!(" in script
    assert "A[1] = 5.0" not in script
    assert "T.if_then_else((i > 2), 1.0, 0.0)" in script


def test_parallel_pipelined_and_negative_index():
    @T.prim_func
    def main(A: T.Tensor((16, 8), "float32")):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((4, 8), "float32")
            for k in T.Pipelined(4, num_stages=3):
                T.copy(A[k * 4, 0], S)
            for i, j in T.Parallel(4, 8):
                S[i, j] = S[i, j] * 2.0
            A[-1, -2] = S[0, 0]
            T.copy(S, A[0:4, :])

    script = main.script()
    assert "S = T.alloc_shared((4, 8)" in script
    assert "T.Pipelined(4, num_stages=3)" in script
    assert "for i in T.Parallel(4):" in script and "for j in T.Parallel(8):" in script
    assert "A[15, 6] = S[0, 0]" in script
    assert "T.copy(S[0:4, 0:8], A[0:4, 0:8]" in script


def test_macro_is_inlined_each_call():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=1):
            add_one(A, 1)
            add_one(A, 2)

    script = main.script()
    assert "A[1] = (A[1] + 1.0)" in script and "A[2] = (A[2] + 1.0)" in script


def test_dynamic_shapes_and_scalar_params():
    n, k = T.dynamic("n, k")

    @T.prim_func
    def main(A: T.Tensor((n, k), "float16"), scale: T.float32):
        with T.Kernel(n, threads=1) as bx:
            for j in T.serial(k):
                A[bx, j] = A[bx, j] * scale

    script = main.script()
    assert 'A: T.Tensor((n, k), "float16")' in script and "scale: T.float32" in script
    assert main.params == ["A", "scale"]


def test_annotated_scalar_and_element_copy_and_region_store():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float16")):
        with T.Kernel(1, threads=1):
            acc: T.float32 = 0.0
            acc = acc + A[3]
            T.copy(A[2], B[5])
            B[8:12] = 0
            A[0] = acc

    script = main.script()
    assert 'acc = T.alloc_var((1,), "float32"' in script and "acc[0] = (acc[0] + A[3])" in script
    assert 'B[5] = T.cast(A[2], "float16")' in script
    assert "T.fill(B[8:12], " in script


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate", "metal -emulate"])
def test_tuple_assignment_reads_every_value_before_assigning(target):
    """`A[0], A[1] = A[1], A[0]` swaps, as in Python (the second store once read the
    element the first had just written: [2, 2]); variables and a rotation too."""

    @T.prim_func
    def swaps(A: T.Tensor((5,), "float32")):
        with T.Kernel(1, threads=1) as _:
            A[0], A[1] = A[1], A[0]
            a = T.alloc_var("float32", A[2])
            b = T.alloc_var("float32", A[3])
            a, b = b, a
            A[2], A[3] = a, b
            A[4], A[2], A[3] = A[2], A[3], A[4]
            x, y = 1, 2  # plain Python values stay Python
            A[0] = A[0] + x * 0 + y * 0

    a = np.array([1, 2, 3, 4, 5], np.float32)
    tilelang.compile(swaps, target=target)(a)
    # after the first swap [2, 1, 3, 4, 5]; vars swap 3 and 4: [2, 1, 4, 3, 5];
    # rotation: A[4] = 4, A[2] = 3, A[3] = 5
    np.testing.assert_array_equal(a, [2, 1, 3, 5, 4])


def test_tuple_assignment_with_the_wrong_count_is_python_s_error():
    with pytest.raises(ValueError, match=r"too many values to unpack \(expected 2\)"):

        @T.prim_func
        def bad(A: T.Tensor((3,), "float32")):
            with T.Kernel(1, threads=1) as _:
                A[0], A[1] = A[2], A[1], A[0]
