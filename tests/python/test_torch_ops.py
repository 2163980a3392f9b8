"""Kernels as PyTorch operators (tilelang.torch.op) on the cpu target with torch CPU
tensors: the schema, mutated arguments and outputs read off the signature, the fake
implementation (static and T.dynamic sizes), opcheck of every operator,
torch.compile(fullgraph=True) with no graph break, torch.export, autograd of the
FlashAttention operator against torch's attention, and the errors."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tilelang
import tilelang.language as T
import torch
from tilelang import TileLangError
from torch._subclasses.fake_tensor import FakeTensorMode

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
NS = "tl_test_ops"


def add_kernel():
    """C = A + B * alpha over a T.dynamic number of rows of 4."""
    n = T.dynamic("n")

    @T.prim_func
    def add(
        A: T.Tensor((n, 4), "float32"),
        B: T.Tensor((n, 4), "float32"),
        alpha: T.float32,
        C: T.Tensor((n, 4), "float32"),
    ):
        with T.Kernel(T.ceildiv(n, 16), threads=16) as bx:
            for i, j in T.Parallel(16, 4):
                if bx * 16 + i < n:
                    C[bx * 16 + i, j] = A[bx * 16 + i, j] + B[bx * 16 + i, j] * alpha

    return tilelang.compile(add, out_idx=[3], target="cpu")


def scale_kernel():
    """X *= s in place (written, so mutated); returns nothing."""
    n = T.dynamic("n")

    @T.prim_func
    def scale(X: T.Tensor((n,), "float32"), s: T.float32):
        with T.Kernel(T.ceildiv(n, 32), threads=32) as bx:
            for i in T.Parallel(32):
                if bx * 32 + i < n:
                    X[bx * 32 + i] = X[bx * 32 + i] * s

    return tilelang.compile(scale, target="cpu")


def pairs_kernel():
    """From x of n rows of 2: the n row sums and, static, the first 8 elements doubled
    in float64; outputs in out_idx order [Firsts, Sums]."""
    n = T.dynamic("n")

    @T.prim_func
    def pairs(
        X: T.Tensor((n, 2), "float32"),
        Sums: T.Tensor((n,), "float32"),
        Firsts: T.Tensor((8,), "float64"),
    ):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                Sums[i] = X[i, 0] + X[i, 1]
            for i in T.serial(8):
                Firsts[i] = T.cast(X[i // 2, i % 2], "float64") * 2

    return tilelang.compile(pairs, out_idx=[2, 1], target="cpu")


@tilelang.jit(target="cpu")
def rms_norm(X, W, eps: float = 1e-6):
    """Eager: Y = X / sqrt(mean(X^2) + eps) * W, rows of N from T.const sizes."""
    M, N = T.const("M N")
    X: T.Tensor((M, N), "float32")
    W: T.Tensor((N,), "float32")
    Y = T.empty((M, N), "float32")
    with T.Kernel(M, threads=32) as bx:
        row = T.alloc_fragment((N,), "float32")
        sq = T.alloc_fragment((N,), "float32")
        total = T.alloc_fragment((1,), "float32")
        T.copy(X[bx, :], row)
        for j in T.Parallel(N):
            sq[j] = row[j] * row[j]
        T.reduce_sum(sq, total, dim=0)
        for j in T.Parallel(N):
            Y[bx, j] = row[j] * T.rsqrt(total[0] / N + eps) * W[j]
    return Y


@tilelang.jit(target="cpu")
def axpy_(Y, X, a: int = 2):
    """Eager, in place: Y += a * X (Y written, so mutated; `a` a config value)."""
    N = T.const("N")
    Y: T.Tensor((N,), "float32")
    X: T.Tensor((N,), "float32")
    with T.Kernel(T.ceildiv(N, 32), threads=32) as bx:
        for i in T.Parallel(32):
            if bx * 32 + i < N:
                Y[bx * 32 + i] += X[bx * 32 + i] * a


@pytest.fixture(scope="module")
def ops():
    return {
        "add": tilelang.torch.op(add_kernel(), f"{NS}::add"),
        "scale": tilelang.torch.op(scale_kernel(), f"{NS}::scale"),
        "pairs": tilelang.torch.op(pairs_kernel(), f"{NS}::pairs"),
        "rms_norm": tilelang.torch.op(f"{NS}::rms_norm")(rms_norm),
        "axpy_": tilelang.torch.op(f"{NS}::axpy_")(axpy_),
    }


def rand(*shape, seed=0, dtype=torch.float32):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape)).to(dtype)


def rms_norm_ref(x, w, eps=1e-6):
    x, w = x.double(), w.double()
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * w


def test_import_tilelang_does_not_import_torch():
    code = (
        "import sys, tilelang; assert 'torch' not in sys.modules, 'imported torch'; "
        "tilelang.torch.op; assert 'torch' in sys.modules; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.stdout.strip() == "ok", out.stderr


def test_torch_compile_caches_its_graph_with_tilelang_imported(tmp_path):
    """Inductor pickles the compiled graph's cache key, and pickle searches every loaded
    module for names: with tilelang's modules loaded the key pickles (no "Failed to pickle
    cache key" warning) and the FX graph cache stores the graph. A fresh process, so that
    what other tests imported does not count."""
    code = """
import io, logging
import tilelang, torch
log = io.StringIO()
logging.getLogger("torch._inductor").addHandler(logging.StreamHandler(log))
torch._inductor.config.fx_graph_cache = True
f = torch.compile(lambda x: torch.sin(x) * 2 + 1)
x = torch.randn(64, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
torch.testing.assert_close(f(x), torch.sin(x) * 2 + 1)
print("pickle failures:", log.getvalue().count("Failed to pickle"))
print("graph cache:", dict(torch._dynamo.utils.counters["inductor"]).get("fxgraph_cache_miss", 0))
"""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env
    )
    assert out.returncode == 0, out.stderr
    assert "pickle failures: 0" in out.stdout and "graph cache: 1" in out.stdout, (
        out.stdout + out.stderr
    )


def test_schema_from_the_signature(ops):
    schemas = {k: str(op._opoverload._schema) for k, op in ops.items()}
    assert schemas["add"] == f"{NS}::add(Tensor A, Tensor B, float alpha) -> Tensor"
    assert schemas["scale"] == f"{NS}::scale(Tensor(a!) X, float s) -> ()"
    assert schemas["pairs"] == f"{NS}::pairs(Tensor X) -> (Tensor, Tensor)"
    eps = ops["rms_norm"]._opoverload._schema.arguments[2]
    assert schemas["rms_norm"].startswith(f"{NS}::rms_norm(Tensor X, Tensor W, float eps=")
    assert eps.default_value == 1e-6  # the function's default, also the operator's
    assert schemas["axpy_"] == f"{NS}::axpy_(Tensor(a!) Y, Tensor X, int a=2) -> ()"
    assert torch.ops.tl_test_ops.add.default._schema == ops["add"]._opoverload._schema


def test_results_match_numpy(ops):
    a, b = rand(37, 4, seed=1), rand(37, 4, seed=2)
    np.testing.assert_allclose(
        ops["add"](a, b, 0.5).double(), a.double() + b.double() * 0.5, rtol=1e-6
    )
    x = rand(45, seed=3)
    expected = x.double() * -1.5
    assert ops["scale"](x, -1.5) is None
    np.testing.assert_allclose(x.double(), expected, rtol=1e-6)
    x = rand(11, 2, seed=4)
    firsts, sums = ops["pairs"](x)
    np.testing.assert_allclose(sums.double(), x.double().sum(1), rtol=1e-6)
    assert firsts.dtype == torch.float64 and firsts.shape == (8,)
    np.testing.assert_allclose(firsts, x.view(-1)[:8].double() * 2)
    x, w = rand(5, 24, seed=5), rand(24, seed=6)
    np.testing.assert_allclose(ops["rms_norm"](x, w, 1e-6).double(), rms_norm_ref(x, w), rtol=1e-5)
    y, x = rand(70, seed=23), rand(70, seed=24)
    expected = y.double() + 3 * x.double()
    assert ops["axpy_"](y, x, 3) is None
    np.testing.assert_allclose(y.double(), expected, rtol=1e-6)
    ops["axpy_"](y, x)  # a = 2, the function's default
    np.testing.assert_allclose(y.double(), expected + 2 * x.double(), rtol=1e-5, atol=1e-6)


def test_opcheck_every_op(ops):
    x = rand(11, 2, seed=7)
    cases = {
        "add": (rand(37, 4, seed=8), rand(37, 4, seed=9), 0.25),
        "scale": (rand(45, seed=10), 3.0),
        "pairs": (x,),
        "rms_norm": (rand(5, 24, seed=11), rand(24, seed=12), 1e-5),
        "axpy_": (rand(40, seed=25), rand(40, seed=26), 2),
    }
    for name, args in cases.items():
        torch.library.opcheck(ops[name], args)


def test_export_with_dynamic_sizes(ops):
    """The fake implementation gives the outputs' sizes in the inputs' symbols, so
    torch.export keeps them symbolic and the exported program runs at other sizes."""
    ep = torch.export.export(
        _Pairs(ops["pairs"]),
        (rand(15, 2, seed=14),),
        dynamic_shapes={"x": {0: torch.export.Dim("n", min=4, max=1024)}},
    )
    assert f"torch.ops.{NS}.pairs.default" in str(ep.graph_module.code)
    (out_node,) = [n for n in ep.graph.nodes if n.op == "output"]
    firsts, sums = (n.meta["val"] for n in out_node.args[0])
    (x,) = [n.meta["val"] for n in ep.graph.nodes if n.op == "placeholder"]
    assert firsts.shape == (8,) and firsts.dtype == torch.float64
    assert isinstance(sums.shape[0], torch.SymInt) and str(sums.shape[0]) == str(x.shape[0])
    x = rand(25, 2, seed=15)
    firsts, sums = ep.module()(x)
    np.testing.assert_allclose(sums.double(), x.double().sum(1), rtol=1e-6)


def test_fake_tensor_mode(ops):
    with FakeTensorMode():
        a, b = torch.empty(70, 4), torch.empty(70, 4)
        c = ops["add"](a, b, 1.0)
        firsts, sums = ops["pairs"](torch.empty(9, 2))
        y = ops["rms_norm"](torch.empty(3, 40), torch.empty(40), 1e-6)
    assert c.shape == (70, 4) and c.dtype == torch.float32
    assert sums.shape == (9,) and firsts.shape == (8,) and firsts.dtype == torch.float64
    assert y.shape == (3, 40)


class _Pairs(torch.nn.Module):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, x):
        return self.op(x)


class _Block(torch.nn.Module):
    def __init__(self, ops):
        super().__init__()
        self.ops = ops
        self.w = torch.nn.Parameter(rand(24, seed=16))

    def forward(self, x, y):
        h = self.ops["add"](x, y, 2.0)
        self.ops["scale"](y.view(-1), 0.5)
        return self.ops["rms_norm"](h.view(-1, 24), self.w, 1e-6)


def block_ref(x, y, w):
    h = x.double() + y.double() * 2
    return rms_norm_ref(h.view(-1, 24), w)


def test_torch_compile_three_ops_one_graph(ops):
    def f(x, y, w):
        h = ops["add"](x, y, 2.0)
        ops["scale"](h.view(-1), 0.5)
        return ops["rms_norm"](h.view(-1, 24), w, 1e-6)

    x, y, w = rand(30, 4, seed=17), rand(30, 4, seed=18), rand(24, seed=19)
    explained = torch._dynamo.explain(f)(x, y, w)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    compiled = torch.compile(f, fullgraph=True, dynamic=True)
    for rows in (30, 54):
        x, y = rand(rows, 4, seed=rows), rand(rows, 4, seed=rows + 1)
        ref = rms_norm_ref((x.double() + y.double() * 2).view(-1, 24) * 0.5, w)
        np.testing.assert_allclose(compiled(x, y, w).double(), ref, rtol=1e-5, atol=1e-6)


def test_export_module(ops):
    x, y = rand(12, 4, seed=20), rand(12, 4, seed=21)
    module = _Block(ops)
    ep = torch.export.export(module, (x, y.clone()))
    code = str(ep.graph_module.code)
    for name in ("add", "scale", "rms_norm"):
        assert f"torch.ops.{NS}.{name}.default" in code
    y2 = y.clone()
    got = ep.module()(x, y2)
    np.testing.assert_allclose(got.detach().double(), block_ref(x, y, module.w.detach()), rtol=1e-5)
    np.testing.assert_allclose(y2, y * 0.5)  # the mutation of y survives export


def test_device_mismatch_names_the_argument(ops):
    with FakeTensorMode(), pytest.raises(ValueError) as err:
        ops["add"](torch.empty(8, 4, device="cuda"), torch.empty(8, 4, device="cuda"), 1.0)
    assert str(err.value).split("\n")[0] == (
        f"argument 'A' of operator {NS}::add is a cuda tensor (cuda:0), but kernel 'add' "
        "was compiled for target 'cpu', which takes cpu tensors; move it with .to('cpu') or "
        "compile the kernel for a target that runs there"
    )


def test_wrong_dtype_and_size_under_fake_tensors(ops):
    with FakeTensorMode(), pytest.raises(TypeError) as err:
        ops["add"](torch.empty(8, 4, dtype=torch.float16), torch.empty(8, 4), 1.0)
    assert (
        "argument 'A' of operator tl_test_ops::add (kernel 'add') has dtype torch.float16, expected torch.float32"
        in str(err.value)
    )
    with FakeTensorMode(), pytest.raises(RuntimeError) as err:
        ops["add"](torch.empty(8, 5), torch.empty(8, 5), 1.0)
    assert (
        "dimension 1 of argument 'A' of operator tl_test_ops::add (kernel 'add') is 5, expected 4"
        in str(err.value)
    )


def test_emulated_cuda_kernel_takes_cpu_tensors():
    n = T.dynamic("n")

    @T.prim_func
    def double(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 64), threads=64) as bx:
            for i in T.Parallel(64):
                B[bx * 64 + i] = A[bx * 64 + i] * 2

    kernel = tilelang.compile(double, out_idx=[1], target="cuda -arch=sm_80 -emulate")
    op = tilelang.torch.op(kernel, f"{NS}::double_emulated")
    x = rand(100, seed=22)
    np.testing.assert_allclose(op(x), x * 2)
    torch.library.opcheck(op, (x,))


def test_registration_errors():
    k = add_kernel()
    with pytest.raises(ValueError, match="the operator name must be 'namespace::name', got 'add'"):
        tilelang.torch.op(k, "add")
    with pytest.raises(ValueError) as err:
        tilelang.torch.op(k, f"{NS}::add_bad_save", backward=lambda ctx, g: g, save=("A", "D"))
    assert "save= names ['D'], which are not parameters of kernel 'add'" in str(err.value)
    with pytest.raises(TypeError, match="save= and setup_context= need backward="):
        tilelang.torch.op(k, f"{NS}::add_no_backward", save=("A",))
    with pytest.raises(TypeError, match="wraps a compiled kernel"):
        tilelang.torch.op(lambda x: x, f"{NS}::not_a_kernel")

    @T.prim_func
    def twice(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=16):
            for i in T.Parallel(16):
                B[i] = A[i] * 2

    with pytest.raises(TypeError) as err:
        tilelang.torch.op(tilelang.compile(twice, out_idx=[1], target="metal"), f"{NS}::metal")
    assert str(err.value).split("\n")[0] == (
        f"tilelang.torch.op '{NS}::metal': kernel 'twice' runs through torch.mps "
        "(execution_backend='torch'); operators of Metal kernels are not supported yet"
    )

    @tilelang.jit(target="cpu")
    def double_in_place(A):
        N = T.const("N")
        A: T.Tensor((N,), "float32")
        with T.Kernel(1, threads=1):
            for i in T.serial(N):
                A[i] = A[i] * 2
        return A

    with pytest.raises(TypeError) as err:
        tilelang.torch.op(f"{NS}::double_in_place")(double_in_place)
    assert str(err.value).split("\n")[0] == (
        f"tilelang.torch.op '{NS}::double_in_place': 'double_in_place' returns its parameter "
        "'A', not a T.empty output; an operator's outputs are new tensors (write an input in "
        "place and return nothing, or return a T.empty tensor)"
    )

    m, n = T.dynamic("m n")

    @T.prim_func
    def spread(A: T.Tensor((m,), "float32"), B: T.Tensor((m, n), "float32")):
        with T.Kernel(m, threads=1) as bx:
            for j in T.serial(n):
                B[bx, j] = A[bx]

    with pytest.raises(ValueError) as err:
        tilelang.torch.op(tilelang.compile(spread, out_idx=[1], target="cpu"), f"{NS}::spread")
    assert str(err.value).split("\n")[0] == (
        f"tilelang.torch.op '{NS}::spread': dimension 1 of output 'B' of kernel 'spread' is "
        "`n`, and no input has n as a dimension or scalar; the kernel cannot allocate it "
        "(give the output as an input the kernel writes)"
    )


# ---- outputs sized by expressions of the inputs' sizes


def halves_kernel():
    """From X of (n, m): Y (n // 2, m), the sums of row pairs, and Z (2 * n, m), X
    stacked on 3 * X."""
    n, m = T.dynamic("n m")

    @T.prim_func
    def halves(
        X: T.Tensor((n, m), "float32"),
        Y: T.Tensor((n // 2, m), "float32"),
        Z: T.Tensor((2 * n, m), "float32"),
    ):
        with T.Kernel(1, threads=1):
            for i, j in T.grid(n // 2, m):
                Y[i, j] = X[2 * i, j] + X[2 * i + 1, j]
            for i, j in T.grid(n, m):
                Z[i, j] = X[i, j]
                Z[n + i, j] = X[i, j] * 3

    return tilelang.compile(halves, out_idx=[1, 2], target="cpu")


def unpair_kernel():
    """From X of (2 * k + 1,): S (k,), the sums of X's pairs after its first element;
    k appears only through X's expression."""
    k = T.dynamic("k")

    @T.prim_func
    def unpair(X: T.Tensor((k * 2 + 1,), "float32"), S: T.Tensor((k,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(k):
                S[i] = X[2 * i + 1] + X[2 * i + 2]

    return tilelang.compile(unpair, out_idx=[1], target="cpu")


def halves_ref(x):
    x = x.double().numpy()
    return x[: x.shape[0] // 2 * 2].reshape(-1, 2, x.shape[1]).sum(1), np.concatenate([x, 3 * x])


def unpair_ref(x):
    return x.double().numpy()[1:].reshape(-1, 2).sum(1)


@pytest.fixture(scope="module")
def expr_ops():
    return (
        tilelang.torch.op(halves_kernel(), f"{NS}::halves"),
        tilelang.torch.op(unpair_kernel(), f"{NS}::unpair"),
    )


def test_outputs_sized_by_expressions(expr_ops):
    halves, unpair = expr_ops
    for rows in (7, 10):
        x = rand(rows, 3, seed=rows)
        y, z = halves(x)
        y_ref, z_ref = halves_ref(x)
        assert y.shape == (rows // 2, 3) and z.shape == (2 * rows, 3)
        np.testing.assert_allclose(y.double(), y_ref, rtol=1e-6)
        np.testing.assert_allclose(z.double(), z_ref, rtol=1e-6)
        torch.library.opcheck(halves, (x,))
    for k in (4, 9):
        x = rand(2 * k + 1, seed=k)
        s = unpair(x)
        assert s.shape == (k,)
        np.testing.assert_allclose(s.double(), unpair_ref(x), rtol=1e-6)
        torch.library.opcheck(unpair, (x,))


def test_size_only_an_expression_gives_is_solved_by_the_kernel_call():
    """The runtime solves k from X's size 2 * k + 1 to allocate S, as the operator does."""
    x = rand(13, seed=30)
    np.testing.assert_allclose(unpair_kernel()(x).double(), unpair_ref(x), rtol=1e-6)


def test_expression_sizes_under_torch_compile(expr_ops):
    halves, unpair = expr_ops

    @torch.compile(fullgraph=True, dynamic=True)
    def f(x, u):
        y, z = halves(x)
        return y * 2, z, unpair(u)

    for rows, k in ((9, 5), (16, 11)):
        x, u = rand(rows, 4, seed=rows), rand(2 * k + 1, seed=k + 50)
        y, z, s = f(x, u)
        y_ref, z_ref = halves_ref(x)
        assert y.shape == (rows // 2, 4) and z.shape == (2 * rows, 4) and s.shape == (k,)
        np.testing.assert_allclose(y.double(), 2 * y_ref, rtol=1e-6)
        np.testing.assert_allclose(z.double(), z_ref, rtol=1e-6)
        np.testing.assert_allclose(s.double(), unpair_ref(u), rtol=1e-6)


class _Exprs(torch.nn.Module):
    def __init__(self, halves, unpair):
        super().__init__()
        self.halves, self.unpair = halves, unpair

    def forward(self, x, u):
        y, z = self.halves(x)
        return y, z, self.unpair(u)


def test_expression_sizes_under_export(expr_ops):
    n, k = torch.export.Dim("n", min=4, max=512), torch.export.Dim("k", min=2, max=512)
    ep = torch.export.export(
        _Exprs(*expr_ops),
        (rand(12, 3, seed=40), rand(9, seed=41)),
        dynamic_shapes={"x": {0: n, 1: torch.export.Dim.STATIC}, "u": {0: 2 * k + 1}},
    )
    (out_node,) = [nd for nd in ep.graph.nodes if nd.op == "output"]
    y, z, s = (nd.meta["val"] for nd in out_node.args[0])
    assert all(isinstance(v.shape[0], torch.SymInt) for v in (y, z, s))
    x, u = rand(21, 3, seed=42), rand(15, seed=43)
    y, z, s = ep.module()(x, u)
    y_ref, z_ref = halves_ref(x)
    np.testing.assert_allclose(y.double(), y_ref, rtol=1e-6)
    np.testing.assert_allclose(z.double(), z_ref, rtol=1e-6)
    np.testing.assert_allclose(s.double(), unpair_ref(u), rtol=1e-6)


def test_expression_dimension_of_an_input_is_checked_under_fake_tensors():
    n = T.dynamic("n")

    @T.prim_func
    def widen(
        X: T.Tensor((n,), "float32"), W: T.Tensor((2 * n,), "float32"), Y: T.Tensor((n,), "float32")
    ):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                Y[i] = X[i] * W[2 * i]

    op = tilelang.torch.op(tilelang.compile(widen, out_idx=[2], target="cpu"), f"{NS}::widen")
    x, w = rand(6, seed=45), rand(12, seed=46)
    np.testing.assert_allclose(op(x, w).double(), x.double() * w.double()[::2], rtol=1e-6)
    with FakeTensorMode(), pytest.raises(RuntimeError) as err:
        op(torch.empty(6), torch.empty(11))
    assert (
        f"dimension 0 of argument 'W' of operator {NS}::widen (kernel 'widen') is 11, "
        "expected (2 * n) = 12" in str(err.value)
    )


def test_size_no_integer_solves_is_an_error(expr_ops):
    _, unpair = expr_ops
    expected = (
        f"dimension 0 of argument 'X' of operator {NS}::unpair (kernel 'unpair') is 12, which "
        "is ((k * 2) + 1) for no integer k"
    )
    with FakeTensorMode(), pytest.raises(RuntimeError) as err:
        unpair(torch.empty(12))
    assert expected in str(err.value)
    with pytest.raises(TileLangError) as err:
        unpair(rand(12, seed=44))
    assert (
        "argument 'X' of kernel 'unpair' has shape (12,): dimension 0 is 12, which is "
        "k * 2 + 1 for no integer k of its dtype" in str(err.value)
    )


# ---- packed sub-byte parameters (int4, float4_e2m1fn: two elements a byte)


def packed_kernels():
    """dequant: int4 A (n, k) * s -> float32; negate: float4_e2m1fn (n, k) -> its negation;
    quant: float32 (n, 6) -> int4 (n, 6) (rows of 3 bytes), rounded and clamped."""
    n, k = T.dynamic("n k")

    @T.prim_func
    def dequant(A: T.Tensor((n, k), "int4"), s: T.float32, B: T.Tensor((n, k), "float32")):
        with T.Kernel(1, threads=1):
            for i, j in T.grid(n, k):
                B[i, j] = T.cast(A[i, j], "float32") * s

    @T.prim_func
    def negate(A: T.Tensor((n, k), "float4_e2m1fn"), B: T.Tensor((n, k), "float4_e2m1fn")):
        with T.Kernel(1, threads=1):
            for i, j in T.grid(n, k):
                B[i, j] = -A[i, j]

    @T.prim_func
    def quant(X: T.Tensor((n, 6), "float32"), Q: T.Tensor((n, 6), "int4")):
        with T.Kernel(1, threads=1):
            for i, j in T.grid(n, 6):
                Q[i, j] = T.cast(T.max(T.min(T.round(X[i, j]), 7.0), -8.0), "int4")

    return [
        tilelang.compile(f, out_idx=[out], target="cpu")
        for f, out in ((dequant, 2), (negate, 1), (quant, 1))
    ]


def int4_ref(packed):
    """The int4 elements of bytes (element 2k in the low nibble of byte k), as int64."""
    b = packed.view(torch.uint8).numpy().astype(np.int64)
    lo, hi = b & 15, b >> 4
    return (np.stack([lo, hi], -1).reshape(*b.shape[:-1], -1) ^ 8) - 8


@pytest.fixture(scope="module")
def packed_ops():
    dequant, negate, quant = packed_kernels()
    return {
        "kernels": (dequant, negate, quant),
        "dequant": tilelang.torch.op(dequant, f"{NS}::dequant"),
        "negate": tilelang.torch.op(negate, f"{NS}::negate"),
        "quant": tilelang.torch.op(quant, f"{NS}::quant"),
    }


def rand_bytes(*shape, seed=0, dtype=torch.uint8):
    b = np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)
    return torch.from_numpy(b).view(dtype)


def test_packed_parameters_take_what_the_kernel_call_takes(packed_ops):
    dequant_k, negate_k, quant_k = packed_ops["kernels"]
    dequant, negate, quant = (packed_ops[n] for n in ("dequant", "negate", "quant"))
    for dtype in (torch.int8, torch.uint8):
        a = rand_bytes(3, 4, seed=60, dtype=dtype)
        out = dequant(a, 0.5)
        assert out.shape == (3, 8)
        np.testing.assert_array_equal(out.double(), int4_ref(a) * 0.5)
        torch.testing.assert_close(out, dequant_k(a, 0.5))
        torch.library.opcheck(dequant, (a, 0.5))
    f = rand_bytes(4, 3, seed=61)
    for arg in (f, f.view(torch.float4_e2m1fn_x2)):
        out = negate(arg)
        # Outputs are allocated as the kernel call allocates them: bytes of fp4 pairs.
        assert out.dtype == torch.float4_e2m1fn_x2 and out.shape == (4, 3)
        assert negate_k(arg).dtype == out.dtype
        # Negation flips the sign bit (bit 3) of both elements of each byte.
        np.testing.assert_array_equal(out.view(torch.uint8).numpy(), f.numpy() ^ 0x88)
    torch.library.opcheck(negate, (f,))
    # torch's schema check copies the inputs, which torch cannot do for
    # float4_e2m1fn_x2 ("copy_" not implemented); the other checks run on them.
    torch.library.opcheck(
        negate,
        (f.view(torch.float4_e2m1fn_x2),),
        test_utils=("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic"),
    )
    x = torch.from_numpy(np.random.default_rng(62).uniform(-10, 10, (7, 6)).astype(np.float32))
    q = quant(x)
    assert q.dtype == torch.int8 and q.shape == (7, 3)  # 6 elements in 3 bytes
    expected = np.clip(np.round(x.double().numpy()), -8, 7)
    np.testing.assert_array_equal(int4_ref(q), expected)
    np.testing.assert_array_equal(q.numpy(), quant_k(x).numpy())
    torch.library.opcheck(quant, (x,))


def test_packed_parameters_under_torch_compile_and_export(packed_ops):
    dequant, negate = packed_ops["dequant"], packed_ops["negate"]

    @torch.compile(fullgraph=True, dynamic=True)
    def f(a, b):
        return dequant(a, 2.0), negate(b)

    for rows, cols in ((3, 5), (7, 2)):
        a, b = rand_bytes(rows, cols, seed=rows, dtype=torch.int8), rand_bytes(rows, 4, seed=cols)
        x, y = f(a, b)
        assert x.shape == (rows, 2 * cols) and y.shape == (rows, 4)
        np.testing.assert_array_equal(x.double(), int4_ref(a) * 2.0)
        np.testing.assert_array_equal(y.view(torch.uint8).numpy(), b.numpy() ^ 0x88)

    class Dequant(torch.nn.Module):
        def forward(self, a):
            return dequant(a, 1.5)

    ep = torch.export.export(
        Dequant(),
        (rand_bytes(4, 6, seed=63, dtype=torch.int8),),
        dynamic_shapes={"a": {0: torch.export.Dim("n", min=2), 1: torch.export.Dim("kb", min=2)}},
    )
    (out_node,) = [nd for nd in ep.graph.nodes if nd.op == "output"]
    (a_node,) = [nd.meta["val"] for nd in ep.graph.nodes if nd.op == "placeholder"]
    out = out_node.args[0][0].meta["val"]
    assert str(out.shape[1]) == f"2*{a_node.shape[1]}"
    a = rand_bytes(5, 9, seed=64, dtype=torch.int8)
    np.testing.assert_array_equal(ep.module()(a).double(), int4_ref(a) * 1.5)


@tilelang.jit(target="cpu")
def dequant_eager(A, s: float = 1.0):
    """Eager: the int4 A (M, K) as float32 times s, and A copied to a new int4 tensor."""
    M, K = T.const("M K")
    A: T.Tensor((M, K), "int4")
    B = T.empty((M, K), "float32")
    Q = T.empty((M, K), "int4")
    with T.Kernel(1, threads=1):
        for i, j in T.grid(M, K):
            B[i, j] = T.cast(A[i, j], "float32") * s
            Q[i, j] = A[i, j]
    return B, Q


def test_packed_parameters_of_an_eager_function():
    op = tilelang.torch.op(f"{NS}::dequant_eager")(dequant_eager)
    a = rand_bytes(3, 4, seed=66, dtype=torch.int8)
    b, q = op(a, 0.5)
    assert b.shape == (3, 8) and q.shape == (3, 4) and q.dtype == torch.int8
    np.testing.assert_array_equal(b.double(), int4_ref(a) * 0.5)
    np.testing.assert_array_equal(q.numpy(), a.numpy())
    torch.library.opcheck(op, (a, 0.5))
    compiled = torch.compile(op, fullgraph=True, dynamic=True)
    for rows in (3, 5):
        a = rand_bytes(rows, 6, seed=rows + 70, dtype=torch.int8)
        b, q = compiled(a, 2.0)
        np.testing.assert_array_equal(b.double(), int4_ref(a) * 2.0)
        np.testing.assert_array_equal(q.numpy(), a.numpy())


def test_packed_parameter_of_a_wrong_dtype_names_it(packed_ops):
    with pytest.raises(TileLangError) as err:  # the kernel's own check
        packed_ops["dequant"](rand(3, 4, seed=65).half(), 1.0)
    assert (
        "argument 'A' (parameter 0 of kernel 'dequant') has dtype float16, expected int4: a "
        "tensor of bytes holding two elements each along its last dimension (int8 or uint8)"
    ) in str(err.value)
    with FakeTensorMode(), pytest.raises(TypeError) as err:
        packed_ops["dequant"](torch.empty(3, 4, dtype=torch.float16), 1.0)
    assert str(err.value).split("\n")[0] == (
        f"argument 'A' of operator {NS}::dequant (kernel 'dequant') has dtype torch.float16, "
        "expected int4: a tensor of bytes holding two elements each along its last dimension "
        "(torch.int8 or torch.uint8)"
    )
    with FakeTensorMode(), pytest.raises(TypeError) as err:
        packed_ops["negate"](torch.empty(3, 4, dtype=torch.int16))
    assert (
        "has dtype torch.int16, expected float4_e2m1fn: a tensor of bytes holding two elements "
        "each along its last dimension (torch.float4_e2m1fn_x2 or torch.int8 or torch.uint8)"
    ) in str(err.value)


@pytest.fixture(scope="module")
def attention():
    """examples/torch_attention.py's differentiable FlashAttention operator (and its two
    backward operators), causal, at a sequence length no tile divides."""
    sys.path.insert(0, EXAMPLES)
    try:
        import torch_attention
    finally:
        sys.path.remove(EXAMPLES)
    ops = torch_attention.attention_op(1, 2, 40, 16, True, namespace=NS, target="cpu")
    return torch_attention, ops


def test_attention_gradients_match_torch(attention):
    module, (attn, _, _) = attention
    assert str(attn._opoverload._schema) == (
        f"{NS}::flash_attention(Tensor Q, Tensor K, Tensor V) -> (Tensor, Tensor)"
    )
    q, k, v, d_out = (rand(1, 40, 2, 16, seed=30 + i, dtype=torch.float16) for i in range(4))
    grads = {}
    for name, fn in (
        ("ours", lambda *t: attn(*t)[0]),
        ("torch", lambda *t: module.torch_reference(*t, True)),
    ):
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        out = fn(*leaves)
        (out.float() * d_out.float()).sum().backward()
        grads[name] = [out.detach().float()] + [t.grad.float() for t in leaves]
    assert attn(q, k, v)[1].requires_grad is False
    for label, got, ref in zip(("O", "dQ", "dK", "dV"), grads["ours"], grads["torch"]):
        torch.testing.assert_close(
            got, ref, rtol=2e-2, atol=2e-2, msg=lambda m, n=label: f"{n}: {m}"
        )


def test_attention_logsumexp_matches_numpy(attention):
    """The forward's second output (flash_attention.py's kernel with lse=True): each query
    row's logsumexp of the scaled, causally masked scores, against numpy in float64. At
    seq_len 40 the one causal row tile starts 24 rows before row 0, whose rows are not
    stored."""
    _, (attn, _, _) = attention
    q, k, v = (rand(1, 40, 2, 16, seed=50 + i, dtype=torch.float16) for i in range(3))
    lse = attn(q, k, v)[1]
    qd, kd = (t.double().numpy() for t in (q, k))
    scores = np.einsum("bqhd,bkhd->bhqk", qd, kd) / np.sqrt(16)
    scores = np.where(np.tril(np.ones((40, 40), dtype=bool)), scores, -np.inf)
    top = scores.max(-1, keepdims=True)
    ref = (top + np.log(np.exp(scores - top).sum(-1, keepdims=True)))[..., 0]
    assert lse.shape == (1, 2, 40) and lse.dtype == torch.float32
    np.testing.assert_allclose(lse.double().numpy(), ref, rtol=1e-3, atol=1e-3)


def test_attention_opcheck(attention):
    _, (attn, delta_op, bwd_op) = attention
    assert str(bwd_op._opoverload._schema) == (
        f"{NS}::flash_attention_bwd(Tensor Q, Tensor K, Tensor V, Tensor dO, Tensor lse, "
        "Tensor Delta, Tensor(a!) dQ) -> (Tensor, Tensor)"
    )
    q, k, v, d_out = (rand(1, 40, 2, 16, seed=40 + i, dtype=torch.float16) for i in range(4))
    out, lse = attn(q, k, v)
    torch.library.opcheck(attn, [t.clone().requires_grad_() for t in (q, k, v)])
    torch.library.opcheck(delta_op, (out, d_out))
    delta = delta_op(out, d_out)
    dq = torch.zeros(1, 40, 2, 16)
    torch.library.opcheck(bwd_op, (q, k, v, d_out, lse, delta, dq))


# ---- eager functions keep T.const sizes symbolic under torch.compile and torch.export


@tilelang.jit(target="cpu")
def pair_rows(X, scale: float = 1.0):
    """Eager: Y (M // 2, 2 * N), row pair i of X side by side, times scale."""
    M, N = T.const("M N")
    X: T.Tensor((M, N), "float32")
    Y = T.empty((M // 2, 2 * N), "float32")
    with T.Kernel(1, threads=1):
        for i, j in T.grid(M // 2, N):
            Y[i, j] = X[2 * i, j] * scale
            Y[i, N + j] = X[2 * i + 1, j] * scale
    return Y


def pair_rows_ref(x, scale):
    x = x.double().numpy()
    rows = x.shape[0] // 2
    return x[: 2 * rows].reshape(rows, 2 * x.shape[1]) * scale


def test_eager_op_compiles_once_for_dynamic_sizes(ops):
    """The fake implementation evaluates the T.empty shapes on torch's symbolic sizes
    (no int(), which would specialize each size), so torch.compile(dynamic=True) traces
    once for every size; the kernel call selects its specialization from the real ones."""
    from torch._dynamo.testing import CompileCounter

    pairs = tilelang.torch.op(f"{NS}::pair_rows")(pair_rows)
    counter = CompileCounter()

    @torch.compile(backend=counter, fullgraph=True, dynamic=True)
    def f(x, w, p):
        return ops["rms_norm"](x, w, 1e-6) * 2, pairs(p, 0.5)

    w = rand(24, seed=80)
    for rows, prows, cols in ((5, 6, 3), (9, 11, 7), (14, 8, 5)):
        x, p = rand(rows, 24, seed=rows + 81), rand(prows, cols, seed=rows + 82)
        y, q = f(x, w, p)
        np.testing.assert_allclose(y.double(), 2 * rms_norm_ref(x, w), rtol=1e-5, atol=1e-6)
        assert q.shape == (prows // 2, 2 * cols)
        np.testing.assert_allclose(q.double(), pair_rows_ref(p, 0.5), rtol=1e-6)
    assert counter.frame_count == 1

    packed = tilelang.torch.op(f"{NS}::dequant_eager_dyn")(dequant_eager)
    counter = CompileCounter()
    g = torch.compile(packed, backend=counter, fullgraph=True, dynamic=True)
    for rows, cols in ((3, 4), (6, 5)):
        a = rand_bytes(rows, cols, seed=rows + 90, dtype=torch.int8)
        b, q = g(a, 1.5)
        assert b.shape == (rows, 2 * cols) and q.shape == (rows, cols)
        np.testing.assert_array_equal(b.double(), int4_ref(a) * 1.5)
        np.testing.assert_array_equal(q.numpy(), a.numpy())
    assert counter.frame_count == 1


class _EagerPair(torch.nn.Module):
    def __init__(self, rms, pairs):
        super().__init__()
        self.rms, self.pairs = rms, pairs

    def forward(self, x, w, p):
        return self.rms(x, w, 1e-6), self.pairs(p, 3.0)


def test_eager_op_exports_with_dynamic_dims(ops):
    pairs = tilelang.torch.op(f"{NS}::pair_rows_export")(pair_rows)
    m, r, c = (torch.export.Dim(n, min=4, max=512) for n in ("m", "r", "c"))
    ep = torch.export.export(
        _EagerPair(ops["rms_norm"], pairs),
        (rand(6, 24, seed=83), rand(24, seed=84), rand(10, 6, seed=85)),
        dynamic_shapes={"x": {0: m}, "w": None, "p": {0: r, 1: c}},
    )
    code = str(ep.graph_module.code)
    assert f"torch.ops.{NS}.rms_norm.default" in code
    assert f"torch.ops.{NS}.pair_rows_export.default" in code
    (out_node,) = [nd for nd in ep.graph.nodes if nd.op == "output"]
    y, q = (nd.meta["val"] for nd in out_node.args[0])
    x_in, _, p_in = (nd.meta["val"] for nd in ep.graph.nodes if nd.op == "placeholder")
    assert str(y.shape[0]) == str(x_in.shape[0])
    assert str(q.shape[0]) == f"({p_in.shape[0]}//2)"
    assert str(q.shape[1]) == f"2*{p_in.shape[1]}"
    x, w, p = rand(13, 24, seed=86), rand(24, seed=87), rand(9, 5, seed=88)
    y, q = ep.module()(x, w, p)
    np.testing.assert_allclose(y.double(), rms_norm_ref(x, w), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(q.double(), pair_rows_ref(p, 3.0), rtol=1e-6)


# ---- packed tensors of an odd number of elements a row


def odd_int4_kernels():
    """quant: float32 X (n,) -> int4 Q (n,); scale: float32 S (n,) and int4 A (n,) ->
    A * S; rows: float32 X (m, 5) -> int4 Q (m, 5)."""
    n, m = T.dynamic("n m")

    @T.prim_func
    def quant(X: T.Tensor((n,), "float32"), Q: T.Tensor((n,), "int4")):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                Q[i] = T.cast(T.cast(X[i], "int32"), "int4")

    @T.prim_func
    def scale(
        S: T.Tensor((n,), "float32"), A: T.Tensor((n,), "int4"), B: T.Tensor((n,), "float32")
    ):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                B[i] = T.cast(A[i], "float32") * S[i]

    @T.prim_func
    def rows(X: T.Tensor((m, 5), "float32"), Q: T.Tensor((m, 5), "int4")):
        with T.Kernel(1, threads=1):
            for i, j in T.grid(m, 5):
                Q[i, j] = T.cast(T.cast(X[i, j], "int32"), "int4")

    return [tilelang.compile(f, out_idx=[-1], target="cpu") for f in (quant, scale, rows)]


def test_packed_odd_sizes_as_the_kernel_call_takes_them():
    quant_k, scale_k, rows_k = odd_int4_kernels()
    quant = tilelang.torch.op(quant_k, f"{NS}::quant_odd")
    scale = tilelang.torch.op(scale_k, f"{NS}::scale_odd")
    rows = tilelang.torch.op(rows_k, f"{NS}::rows_odd")
    for n in (5, 9):
        x = torch.from_numpy(np.random.default_rng(n).integers(-8, 8, n).astype(np.float32))
        s = rand(n, seed=n + 1)
        q = quant(x)
        assert q.shape == ((n + 1) // 2,) and q.dtype == torch.int8
        np.testing.assert_array_equal(int4_ref(q).reshape(-1)[:n], x.numpy())
        b = scale(s, q)  # n from S, held in the (n + 1) // 2 bytes q was allocated as
        np.testing.assert_allclose(b.double(), x.double() * s.double(), rtol=1e-6)
        # The spare nibble of an odd count is left as allocated (unspecified), so only
        # the input side is compared byte for byte by opcheck at an odd n.
        torch.library.opcheck(scale, (s, q))
    torch.library.opcheck(quant, (rand(6, seed=7) * 4,))
    with FakeTensorMode(), pytest.raises(RuntimeError) as err:
        scale(torch.empty(5), torch.empty(2, dtype=torch.int8))
    assert (
        f"dimension 0 of argument 'A' of operator {NS}::scale_odd (kernel 'scale') holds 2 bytes, "
        "but n is 5 elsewhere, which int4 packs in 3 bytes" in str(err.value)
    )

    from torch._dynamo.testing import CompileCounter

    counter = CompileCounter()

    @torch.compile(backend=counter, fullgraph=True, dynamic=True)
    def f(x, s):
        return scale(s, quant(x))

    for n in (7, 11):
        x = torch.from_numpy(np.random.default_rng(n).integers(-8, 8, n).astype(np.float32))
        s = rand(n, seed=n + 2)
        np.testing.assert_allclose(f(x, s).double(), x.double() * s.double(), rtol=1e-6)
    assert counter.frame_count == 1

    one = torch.from_numpy(np.random.default_rng(3).integers(-8, 8, (1, 5)).astype(np.float32))
    q = rows(one)
    assert q.shape == (1, 3)
    np.testing.assert_array_equal(int4_ref(q)[:, :5], one.numpy())
    expected = (
        "would hold int4 rows of 5 elements, shape (3, 5): a tensor of bytes packs each row to "
        "whole bytes (3 bytes, room for 6 elements), but the kernel reads its rows 5 elements "
        "apart; a packed int4 tensor of more than one row needs a last dimension that is a "
        "multiple of 2"
    )
    with FakeTensorMode(), pytest.raises(ValueError) as err:
        rows(torch.empty(3, 5))
    assert str(err.value).split("\n")[0] == f"output 'Q' of operator {NS}::rows_odd {expected}"
    with pytest.raises(TileLangError) as err:
        rows(rand(3, 5, seed=4))
    assert str(err.value).split("\n")[0] == f"output 'Q' (parameter 1 of kernel 'rows') {expected}"
