"""Control flow on symbolic values, run on the CPU and compared with numpy: if/elif/else
(with names bound in both branches used after the `if`), while, break, continue, boolean
operators and chained comparisons mixing Python and symbolic operands."""

import inspect

import numpy as np
import pytest
import tilelang
import tilelang.language as T

rng = np.random.default_rng(7)
N = 37
HERE = __file__


def line_of(marker):
    lines, _ = inspect.findsource(inspect.getmodule(line_of))
    return next(i + 1 for i, text in enumerate(lines) if marker in text and "line_of" not in text)


@tilelang.jit(out_idx=[-1], target="cpu")
def branches(n, limit=0.5):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                if A[i] > limit:
                    t = A[i] * 2.0  # a temporary, then the name used after the if
                    y = t + 1.0
                elif A[i] < -limit:
                    y = A[i] - 3.0
                else:
                    y = A[i] * 0.0 + 7.0
                bonus = 0  # a Python int that one branch changes
                if i % 3 == 0:
                    bonus = 100
                B[i] = y + bonus

    return main


def branches_ref(a, limit=0.5):
    y = np.where(a > limit, a * 2 + 1, np.where(a < -limit, a - 3, 7.0))
    return (y + np.where(np.arange(a.size) % 3 == 0, 100, 0)).astype(np.float32)


def test_if_elif_else_binds_names_used_after_the_if():
    a = rng.standard_normal(N).astype(np.float32)
    np.testing.assert_allclose(branches(N)(a), branches_ref(a), rtol=1e-6)
    script = branches(N).prim_func.script()
    assert 'y = T.alloc_var((1,), "float32"' in script
    assert 'bonus = T.alloc_var((1,), "int32"' in script


@tilelang.jit(out_idx=[-1], target="cpu")
def loops_with_jumps(n):
    @T.prim_func
    def main(A: T.Tensor((n,), "int32"), B: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=1):
            # first index whose value exceeds 50, found with a while on a symbolic condition
            k = T.alloc_var(T.int32, init=0)
            while k < n and A[k] <= 50:
                k += 1
            B[0] = k
            # sum of the even values before the first negative one: break + continue
            total: T.int32 = 0
            for i in range(n):
                if A[i] < 0:
                    break
                if A[i] % 2 == 1:
                    continue
                total += A[i]
            B[1] = total
            # a while True loop left with break
            j = T.alloc_var(T.int32, init=n - 1)
            while True:
                if A[j] > 90 or j == 0:
                    break
                j -= 1
            B[2] = j
            # boolean operators and chained comparisons mixing Python and symbolic values
            count = T.alloc_var(T.int32, init=0)
            lo = 10
            for i in T.serial(n):
                if lo <= A[i] < 40 and not (A[i] == 20) or A[i] == -1:  # noqa: SIM201
                    count += 1
            B[3] = count

    return main


def loops_ref(a):
    n = a.size
    k = 0
    while k < n and a[k] <= 50:
        k += 1
    total = 0
    for v in a:
        if v < 0:
            break
        if v % 2 == 1:
            continue
        total += v
    j = n - 1
    while not (a[j] > 90 or j == 0):
        j -= 1
    count = int(np.sum(((a >= 10) & (a < 40) & (a != 20)) | (a == -1)))
    return np.array([k, total, j, count], np.int32)


@pytest.mark.parametrize("case", ["random", "negative-early", "all-small"])
def test_while_break_continue_and_boolean_operators(case):
    kernel = loops_with_jumps(N)
    a = rng.integers(0, 100, N).astype(np.int32)
    if case == "negative-early":
        a[5] = -1
    elif case == "all-small":
        a = rng.integers(-1, 45, N).astype(np.int32)
        a[a < 0] = 2
    np.testing.assert_array_equal(kernel(a), loops_ref(a))


def test_the_same_loops_on_the_emulated_gpu_keep_vars_as_plain_variables():
    """On CUDA a T.alloc_var is a plain variable (`int32_t k;`, `k = (k + 1);`, `&k`),
    as in TileLang's CUDA code; the emulator runs the same source to the same result."""
    kernel = tilelang.compile(
        loops_with_jumps.get_tir(N), out_idx=[-1], target="cuda -arch=sm_80 -emulate"
    )
    src = kernel.get_kernel_source()
    for name in ("k", "j", "count"):
        assert f"  int32_t {name};" in src and f"{name}[0]" not in src, src
    a = rng.integers(0, 100, N).astype(np.int32)
    np.testing.assert_array_equal(kernel(a), loops_ref(a))


def test_symbolic_if_script_hoists_names():
    @T.prim_func
    def main(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1):
            if A[0] > 0:
                y = A[1]
            else:
                y = A[2]
            A[3] = y

    script = main.script()
    assert 'y = T.alloc_var((1,), "float32"' in script
    assert "y[0] = A[1]" in script and "y[0] = A[2]" in script and "A[3] = y[0]" in script


def test_name_bound_in_one_branch_used_after_the_if():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=1):
                if A[0] > 0:  # MARK-if
                    y = A[1]
                A[3] = y  # MARK-use

    msg = str(info.value)
    assert msg.startswith(f"{HERE}:{line_of('MARK-use')}: 'y' is assigned inside the symbolic")
    assert f"`if` at line {line_of('MARK-if')}" in msg
    assert "assign it in both branches" in msg


def test_name_bound_after_an_allocation_in_the_branch():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=1):
                if A[0] > 0:
                    S = T.alloc_local((2,), "float32")
                    S[0] = A[1]
                    y = S[0]
                else:
                    y = A[2]
                A[3] = y  # MARK-alloc-use

    msg = str(info.value)
    assert msg.startswith(f"{HERE}:{line_of('MARK-alloc-use')}: 'y'")
    assert "declare it before the `if` with `y = T.alloc_var(dtype)`" in msg


def test_then_branch_names_are_not_visible_in_else():
    with pytest.raises(tilelang.TileLangError, match="'t' is assigned inside the symbolic"):

        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=1):
                if A[0] > 0:
                    t = A[1] * 2.0
                    A[4] = t
                else:
                    A[5] = t


def test_break_inside_parallel_is_rejected():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=1):
                for i in T.Parallel(8):
                    if A[i] > 0:
                        break  # MARK-pbreak

    assert str(info.value).startswith(
        f"{HERE}:{line_of('MARK-pbreak')}: `break` inside a T.Parallel loop is not supported"
    )
    assert "use T.serial" in str(info.value)


def test_break_outside_a_loop_of_the_kernel():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            for _ in [0]:
                with T.Kernel(1, threads=1):
                    if A[0] > 0:
                        break  # MARK-outside

    assert str(info.value).startswith(
        f"{HERE}:{line_of('MARK-outside')}: `break` outside a loop of the kernel"
    )


@pytest.mark.parametrize("name", ["y", "k", "w", "j", "S"])
def test_name_bound_in_a_loop_used_after_it(name):
    """A let bound in an IR loop's body, the loop variable (also a stepped one, which the
    name holds as start + i * step) and a buffer allocated in the body have no value
    after the loop: a clear error at the use, naming the loop's line (each was an
    internal verifier error)."""
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((8,), "int32"), n: T.int32):
            with T.Kernel(1, threads=1):
                for k in T.serial(n):  # MARK-loop
                    y = A[k] * 2
                    S = T.alloc_local((2,), "int32")
                    S[0] = y
                    A[k] = S[0]
                for j in T.serial(0, 8, 2):  # MARK-step
                    A[j] = j
                i = T.alloc_var("int32", 0)
                while i < n:  # MARK-while
                    w = A[i] + 1
                    A[i] = w
                    i = i + 1
                if name == "y":
                    A[3] = y  # MARK-after-y
                elif name == "k":
                    A[3] = k  # MARK-after-k
                elif name == "w":
                    A[3] = w  # MARK-after-w
                elif name == "j":
                    A[3] = j  # MARK-after-j
                else:
                    A[3] = S[0]  # MARK-after-S

    msg = str(info.value).split("\n")[0]  # (the source line follows)
    loop = line_of({"w": "MARK-while", "j": "MARK-step"}.get(name, "MARK-loop"))
    assert msg.startswith(
        f"{HERE}:{line_of(f'MARK-after-{name}')}: '{name}' is assigned inside the loop at line "
        f"{loop} ("
    ), msg
    if name == "S":
        assert "a buffer allocated in a loop's body lives for one iteration" in msg
        assert msg.endswith("so it has no value here; allocate it before the loop to use it after")
    else:
        assert "(its values live in one iteration), so it has no value here" in msg
        assert f"declare `{name} = T.alloc_var(dtype)` before the loop" in msg


@tilelang.jit(out_idx=[-1], target="cpu")
def rebound_after_loop(n):
    @T.prim_func
    def main(A: T.Tensor((n,), "int32"), m: T.int32, B: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=1):
            t = T.alloc_var("int32", 0)
            for r in T.serial(2):
                if m > r:  # a symbolic `if` that hoists (both branches bind `c`)
                    c = r + 1
                    for k in T.serial(m):
                        p = (t - 1) % 2  # bound in the loop ...
                        A[k] = A[k] + p
                        t = t + 1
                    p = t * 10  # ... and again after it, inside the `if`
                    B[r] = p + c
                else:
                    c = 0
                    B[r] = c
            for s in [0, 1]:  # a Python loop: its names stay usable after it
                q = s * 3
            B[2] = q
            B[3] = t

    return main


def test_name_rebound_after_the_loop_that_bound_it():
    """The same name bound in a loop body and again after the loop in a symbolic `if`
    that turns names into locals (the pattern of flash_attention_hopper's consumer loop:
    it raised an internal error, the local was initialised from the loop's let)."""
    a = np.zeros(6, dtype=np.int32)
    b = rebound_after_loop(6)(a, 3)
    # r = 0: t 0..2 -> p = 1, 0, 1; B[0] = 30 + 1. r = 1: t 3..5 -> p = 0, 1, 0; B[1] = 62.
    np.testing.assert_array_equal(a[:3], [1, 1, 1])
    np.testing.assert_array_equal(b, [31, 62, 3, 6])


def test_name_bound_in_a_with_block_used_after_it():
    """A value bound inside a `with` block that opens an IR scope (here a warpgroup region,
    T.ws) has no value after the block: a clear error naming the block's line."""
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((256,), "float32")):
            with T.Kernel(1, threads=256):
                with T.ws(0):  # MARK-ws
                    x = A[0] + 1.0
                    A[1] = x
                with T.ws(1):
                    A[2] = x  # MARK-ws-use

    assert str(info.value).split("\n")[0] == (
        f"{HERE}:{line_of('MARK-ws-use')}: 'x' is assigned inside the `with` block at line "
        f"{line_of('MARK-ws')} (its value lives there), so it has no value here; to carry a "
        "value out, declare `x = T.alloc_var(dtype)` before the `with` block and assign to it"
    )


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate", "metal -emulate"])
def test_with_t_while_tests_before_each_iteration(target):
    """TileLang's `with T.While(cond):` form of a loop on a condition."""

    @T.prim_func
    def steps(limit: T.Tensor((1,), "int32"), out: T.Tensor((1,), "int32")):
        with T.Kernel(1):
            state = T.alloc_fragment((1,), "int32")
            count = T.alloc_var("int32")
            count = 0
            state[0] = 0
            with T.While(state[0] < limit[0]):
                state[0] = state[0] + 3
                count += 1
            out[0] = state[0] * 100 + count

    kernel = tilelang.compile(steps, target=target)
    for limit, want in ((10, 1204), (0, 0), (3, 301)):
        out = np.zeros(1, np.int32)
        kernel(np.array([limit], np.int32), out)
        assert out[0] == want, (limit, out)
    with pytest.raises(tilelang.TileLangError, match="T.While takes a condition"):

        @T.prim_func
        def bad(A: T.Tensor((1,), "float32")):
            with T.Kernel(1), T.While(A[0]):
                A[0] = 0


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate", "metal -emulate"])
def test_a_var_without_an_initial_value_starts_at_zero(target):
    """TileLang's frontend_v2 while loop: `s = T.alloc_var(T.int32)` then `s += i`. A
    register var starts at zero as in TileLang (it was left unset: 1073741824 on an H100);
    the scope may follow the dtype or the initial value positionally."""

    @T.prim_func
    def main(A: T.Tensor((5,), "int32"), H: T.Tensor((2,), "float16")):
        with T.Kernel(1):
            i = T.alloc_var(T.int32, 0)
            s = T.alloc_var(T.int32)
            while i < 10:
                s += i
                i += 1
            A[0] = s
            f = T.alloc_var("float32")
            A[1] = T.cast(f, "int32") + 7
            w = T.alloc_var(T.int32, "local.var")
            A[2] = w
            x = T.alloc_var(T.int32, 5, "local.var")
            A[3] = x
            v = T.alloc_var(T.float16x2)
            H[0] = v[0]
            H[1] = v[1]
            A[4] = T.alloc_var(T.int32, init=9)

    kernel = tilelang.compile(main, target=target)
    out = np.full(5, -1, np.int32)
    h = np.ones(2, np.float16)
    kernel(out, h)
    assert out.tolist() == [45, 7, 0, 5, 9]
    assert h.tolist() == [0.0, 0.0]
    with pytest.raises(TypeError, match="scope must be a string"):

        @T.prim_func
        def bad(A: T.Tensor((1,), "int32")):
            with T.Kernel(1):
                A[0] = T.alloc_var(T.int32, 1, 2)


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate", "metal -emulate"])
def test_a_body_without_a_kernel_block_runs_as_one_block(target):
    """TileLang's cpu programs of plain loops, with no T.Kernel: one block of one thread."""
    n = 256

    @T.prim_func
    def arith(
        A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), S: T.Tensor((n,), "float32")
    ):
        for i in T.Parallel(n):
            S[i] = A[i] * 2 + B[i]
        for i in T.serial(n - 1):
            S[i + 1] = S[i + 1] + S[i] * 0  # reads the loop above's result

    rng = np.random.default_rng(9)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    s = np.zeros(n, np.float32)
    tilelang.compile(arith, target=target)(a, b, s)
    np.testing.assert_allclose(s, a * 2 + b, rtol=1e-6)
