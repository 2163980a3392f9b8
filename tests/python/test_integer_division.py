"""Integer division and remainder by zero: a divisor that is the constant 0 is a user
error at the kernel's line; one that is 0 only at run time (a scalar argument, a tensor
element) gives TileLang's defined result, x // 0 == 0 and x % 0 == x, and INT_MIN // -1
wraps to INT_MIN, on the cpu target and under the CUDA and Metal emulators alike. C
leaves both undefined and x86 traps on them (SIGFPE), so each run-time case runs in a
subprocess first: a crash there fails the test instead of the pytest process."""

import inspect
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tilelang
import tilelang.language as T

HERE = __file__
TARGETS = ["cpu", "cuda -arch=sm_80 -emulate", "metal -emulate"]


def line_of(marker):
    lines, _ = inspect.findsource(inspect.getmodule(line_of))
    return next(i + 1 for i, text in enumerate(lines) if marker in text and "line_of" not in text)


# ---------------------------------------------------------------- compile time


def _kernel_dividing_by(op):
    @T.prim_func
    def main(A: T.Tensor((4,), "int32"), B: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(4):
                if op == "//":
                    B[i] = A[i] // 0  # MARK-floordiv
                elif op == "%":
                    B[i] = A[i] % 0  # MARK-floormod
                elif op == "floordiv":
                    B[i] = T.floordiv(A[i], 0)  # MARK-T.floordiv
                elif op == "floormod":
                    B[i] = T.floormod(A[i], 0)  # MARK-T.floormod
                elif op == "truncdiv":
                    B[i] = T.truncdiv(A[i], 0)  # MARK-T.truncdiv
                elif op == "truncmod":
                    B[i] = T.truncmod(A[i], 0)  # MARK-T.truncmod
                elif op == "ceildiv":
                    B[i] = T.ceildiv(A[i], 0)  # MARK-T.ceildiv
                elif op == "literal":
                    B[i] = T.int32(7) // T.int32(0)  # MARK-literal
                elif op == "python ceildiv":
                    B[i] = T.ceildiv(7, 0)  # MARK-python ceildiv

    return main


@pytest.mark.parametrize(
    ("op", "marker", "text"),
    [
        ("//", "floordiv", "`A[i] // 0`"),
        ("%", "floormod", "`A[i] % 0`"),
        ("floordiv", "T.floordiv", "`A[i] // 0`"),
        ("floormod", "T.floormod", "`A[i] % 0`"),
        ("truncdiv", "T.truncdiv", "`T.truncdiv(A[i], 0)`"),
        ("truncmod", "T.truncmod", "`T.truncmod(A[i], 0)`"),
        ("ceildiv", "T.ceildiv", "`T.ceildiv(A[i], 0)`"),
        ("literal", "literal", "`7 // 0`"),
        ("python ceildiv", "python ceildiv", "`T.ceildiv(7, 0)`"),
    ],
)
def test_constant_zero_divisor_is_a_user_error_at_the_line(op, marker, text):
    with pytest.raises(tilelang.TileLangError) as info:
        _kernel_dividing_by(op)
    assert str(info.value).split("\n")[0] == (
        f"{HERE}:{line_of('MARK-' + marker)}: integer division by zero: the divisor of {text} is "
        + (
            "0"
            if op == "python ceildiv"
            else "the constant 0; guard the division or use a non-zero divisor"
        )
    )


def test_float_division_by_zero_is_not_an_error():
    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(4):
                B[i] = A[i] / 0.0

    a = np.array([1.5, -2.0, 3.0, -4.25], np.float32)
    b = np.zeros(4, np.float32)
    tilelang.compile(main, target="cpu")(a, b)
    np.testing.assert_array_equal(b, np.sign(a) * np.inf)


# ---------------------------------------------------------------- run time

RUN_TIME_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import tilelang
    import tilelang.language as T

    target, dtype = sys.argv[1], sys.argv[2]

    @T.prim_func
    def main(A: T.Tensor((16,), dtype), D: T.Tensor((16,), dtype), s: T.int32,
             Q: T.Tensor((4, 16), dtype), R: T.Tensor((4, 16), dtype)):
        with T.Kernel(1, threads=16) as bx:
            i = T.get_thread_binding()
            Q[0, i] = A[i] // D[i]
            R[0, i] = A[i] % D[i]
            Q[1, i] = T.truncdiv(A[i], D[i])
            R[1, i] = T.truncmod(A[i], D[i])
            Q[2, i] = A[i] // s
            R[2, i] = A[i] % s
            Q[3, i] = T.truncdiv(A[i], s)
            R[3, i] = T.truncmod(A[i], s)

    kernel = tilelang.compile(main, target=target)
    info = np.iinfo(dtype)
    rng = np.random.default_rng(7)
    a = rng.integers(info.min // 2, info.max // 2, 16).astype(dtype)
    d = rng.integers(-9, 10, 16).astype(dtype)
    a[:4] = [info.min, info.min, 37, -37]
    d[:4] = [-1, 0, 0, 0]
    d[4:] = np.where(d[4:] == 0, 3, d[4:])
    d[5] = -1
    q = np.zeros((4, 16), dtype)
    r = np.zeros((4, 16), dtype)
    kernel(a, d, 0, q, r)
    np.save(sys.argv[3], np.stack([a, d, *q, *r]))
    """
)


def _reference(a, d):
    """Python's and C's division with TileLang's definitions where those two have none."""
    floor_q, floor_r, trunc_q, trunc_r = [], [], [], []
    for x, y in zip(a.tolist(), d.tolist()):
        if y == 0:
            floor_q.append(0), floor_r.append(x), trunc_q.append(0), trunc_r.append(x)
            continue
        fq = x // y
        tq = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        (
            floor_q.append(fq),
            floor_r.append(x - fq * y),
            trunc_q.append(tq),
            trunc_r.append(x - tq * y),
        )
    half = 1 << (a.dtype.itemsize * 8 - 1)

    def wrap(values):  # MIN // -1 wraps to MIN
        return np.array([(v + half) % (2 * half) - half for v in values], a.dtype)

    return wrap(floor_q), wrap(floor_r), wrap(trunc_q), wrap(trunc_r)


def _run(tmp_path, source, *args):
    """Runs `source` as a script in a fresh interpreter; returns the array it saves."""
    out, script = tmp_path / "out.npy", tmp_path / "divide.py"
    script.write_text(source)
    proc = subprocess.run(
        [sys.executable, str(script), *args, str(out)],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-3000:]}"
    return np.load(out)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("target", TARGETS)
def test_run_time_zero_divisor_gives_the_defined_result(target, dtype, tmp_path):
    a, d, *qr = _run(tmp_path, RUN_TIME_SCRIPT, target, dtype)
    fq, fr, tq, tr = _reference(a, d)
    s = np.zeros_like(d)
    fq0, fr0, tq0, tr0 = _reference(a, s)
    expected = [fq, tq, fq0, tq0, fr, tr, fr0, tr0]
    for got, want in zip(qr, expected):
        np.testing.assert_array_equal(got, want)
    assert a[0] == np.iinfo(dtype).min and qr[0][0] == np.iinfo(dtype).min  # MIN // -1 wraps


FOLDED_ZERO_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import tilelang
    import tilelang.language as T

    n = T.dynamic("n")

    @T.prim_func
    def main(A: T.Tensor((n,), "int32"), B: T.Tensor((n,), "int32"), C: T.Tensor((n,), "int32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                B[i] = A[i] // (n - n)
                C[i] = A[i] % (n - n)

    a = np.random.default_rng(1).integers(-1000, 1000, 16).astype(np.int32)
    b, c = np.full(16, 5, np.int32), np.full(16, 5, np.int32)
    tilelang.compile(main, target=sys.argv[1])(a, b, c)
    np.save(sys.argv[2], np.stack([a, b, c]))
    """
)


@pytest.mark.parametrize("target", TARGETS)
def test_divisor_that_folds_to_zero_is_kept_for_run_time(target, tmp_path):
    """`n - n` is 0 only once the simplifier has run: it neither folds the division nor
    crashes on it, and the kernel computes the defined result."""
    a, b, c = _run(tmp_path, FOLDED_ZERO_SCRIPT, target)
    np.testing.assert_array_equal(b, np.zeros(16, np.int32))
    np.testing.assert_array_equal(c, a)
