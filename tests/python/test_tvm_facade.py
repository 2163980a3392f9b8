"""tilelang.tvm: the TVM names TileLang kernels use (`from tvm import tir`, `tvm.DataType`,
`tvm.te.var`), mapped onto tilelang.language, and importable as `tvm` after `import
tilelang` when no real TVM is installed."""

import importlib
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang import tvm
from tvm import tir  # registered by `import tilelang`


def nibble_to_int8(val: tir.PrimExpr, pos: tir.PrimExpr):
    """The signed 4-bit value at nibble `pos` of byte `val`, as int8, written with
    tvm.tir as TileLang dequantization helpers are."""
    nib = (val >> (pos.astype("uint8") * tir.const(4, "uint8"))) & tir.const(0xF, "uint8")
    return tir.reinterpret("int8", nib << tir.const(4, "uint8")) >> tir.const(4, "int8")


@tilelang.jit(out_idx=[1])
def unpack_int4(n, k):
    @T.prim_func
    def main(Q: T.Tensor((n, k // 2), "uint8"), O: T.Tensor((n, k), "int8")):
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(n, k):
                O[i, j] = nibble_to_int8(Q[i, j // 2], j % 2)

    return main


def test_a_tir_dequantization_helper_matches_numpy():
    q = np.random.default_rng(0).integers(0, 256, (8, 16), dtype=np.uint8)
    out = unpack_int4(8, 32)(q)
    ref = np.empty((8, 32), np.int8)
    for pos in range(2):
        ref[:, pos::2] = (((q >> (4 * pos)) & 0xF).astype(np.uint8) << 4).view(np.int8) >> 4
    np.testing.assert_array_equal(out, ref)


@tilelang.jit(out_idx=[1])
def scale_by_select(block=64):
    n = tvm.te.var("n")

    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                g = bx * block + i
                if g < n:
                    Y[g] = tir.Select(
                        X[g] > tir.const(0.0),
                        X[g] * tir.FloatImm("float32", 2.0),
                        tir.Cast("float32", tir.IntImm("int32", -1)),
                    )

    return main


@pytest.mark.parametrize("n", [64, 100])
def test_te_var_is_a_symbolic_size(n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    np.testing.assert_array_equal(
        scale_by_select()(x), np.where(x > 0, x * 2, -1).astype(np.float32)
    )


def test_datatype_and_constants():
    assert tvm.DataType("float16").bits == 16 and tvm.DataType("int8").bits == 8
    assert tvm.DataType("float32x4").lanes == 4
    assert tir.const(3).dtype.name == "int32" and tir.const(1.5).dtype.name == "float32"
    assert tir.const(True).dtype.name == "bool" and tir.const(7, "uint8").dtype.name == "uint8"
    assert tir.Var("m", "int64").dtype.name == "int64"


@pytest.mark.parametrize(
    "get, message",
    [
        (
            lambda: tvm.relay,
            r"tvm.relay is not part of tilelang's TVM facade \(tilelang.tvm offers DataType, IRModule",
        ),
        (
            lambda: tir.Schedule,
            r"tvm.tirx.Schedule is not part of tilelang's TVM facade \(tvm.tirx offers EQ, GE, GT",
        ),
        (
            lambda: tvm.te.no_such_name,
            r"tvm.te.no_such_name is not part of tilelang's TVM facade \(tvm.te offers var\)",
        ),
        (
            lambda: tvm.arith.no_such_name,
            r"tvm.arith.no_such_name is not part of tilelang's TVM facade \(tvm.arith offers A",
        ),
    ],
)
def test_names_outside_the_facade_say_so(get, message):
    with pytest.raises(AttributeError, match=message):
        get()


FACADE_MODULES = ["arith", "runtime", "te", "testing", "transform", "tirx.transform", "script"]


@pytest.mark.parametrize(
    "module, name",
    [
        ("arith", "IntervalSet"),
        ("runtime", "Module"),
        ("te", "compute"),
        ("testing", "parameter"),
        ("transform", "Sequential"),
        ("tirx.transform", "Simplify"),
        ("script", "tirx"),
    ],
)
def test_a_tvm_name_of_a_facade_module_is_out_of_scope(module, name):
    obj = getattr(importlib.import_module(f"tvm.{module}"), name)  # imports
    with pytest.raises(tvm.OutOfScopeError, match=rf"tvm.{module}.{name} is TVM-internal"):
        obj()


@pytest.mark.parametrize("module", FACADE_MODULES)
@pytest.mark.parametrize("name", ["torch", "no_such_name", "__wrapped__", "__test__"])
def test_other_names_of_a_facade_module_are_attribute_errors(module, name):
    """pickle.whichmodule, hasattr and the import system probe modules for names they
    may not have and expect AttributeError: only TVM's own names are out of scope."""
    module = importlib.import_module(f"tvm.{module}")
    assert not hasattr(module, name)


def test_pickle_finds_a_function_with_tilelang_imported():
    """pickle looks a function without __module__ up in every loaded module (as
    torch.compile's cache keys need); each module tilelang loads lets the search go on,
    the placeholders of TileLang's internals (whose every name imports) included."""
    code = r"""
import pickle, sys, types
import tilelang
import tilelang.cuda.pipeline, tilelang.jit.adapter.nvrtc, tilelang.tileop.gemm
fresh = types.ModuleType("fresh")
exec("class _K:\n    def f(x):\n        return x + 1", fresh.__dict__)
sys.modules["fresh"] = fresh
fresh._K.f.__module__ = None
found = pickle.whichmodule(fresh._K.f, "_K.f")
print(found, pickle.loads(pickle.dumps(fresh._K.f)) is fresh._K.f)
bad = []
for name, module in list(sys.modules.items()):
    try:
        getattr(module, "no_such_name")
    except AttributeError:
        pass
    except Exception as e:
        bad.append(f"{name}: {type(e).__name__}")
print(bad)
"""
    out = run_python(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["fresh True", "[]"], out.stdout


def run_python(code, extra_path=None):
    env = dict(os.environ)
    paths = [p for p in (extra_path, env.get("PYTHONPATH")) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_import_tvm_after_tilelang_is_the_facade():
    out = run_python(
        "import tilelang, tvm; from tvm import tir, te; print(tvm is tilelang.tvm, tir is tilelang.tvm.tir)"
    )
    assert out.returncode == 0 and out.stdout.split() == ["True", "True"], out.stderr


def test_a_real_tvm_keeps_its_name(tmp_path):
    (tmp_path / "tvm").mkdir()
    (tmp_path / "tvm" / "__init__.py").write_text("REAL = True\n")
    out = run_python(
        "import tilelang, tvm; print(getattr(tvm, 'REAL', False), tvm is tilelang.tvm)",
        str(tmp_path),
    )
    assert out.returncode == 0 and out.stdout.split() == ["True", "False"], out.stderr


SITE = pathlib.Path(__file__).resolve().parents[2] / "python"  # holds tilelang-tvm.pth


def test_import_tvm_before_tilelang_through_the_pth_file():
    """The installed .pth file (site.addsitedir processes it as site-packages would)
    makes `from tvm import DataType` work before `import tilelang`."""
    out = run_python(
        f"import site; site.addsitedir({str(SITE)!r})\n"
        "import sys; assert 'tilelang' not in sys.modules  # the finder imports nothing yet\n"
        "from tvm import DataType, tir\n"
        "import tvm.te, tilelang\n"
        "print(DataType('float16').bits, tvm.te is tilelang.tvm.te, tir is tilelang.tvm.tir)\n"
        "try:\n"
        "    import tvm.relax\n"
        "except ModuleNotFoundError as e:\n"
        "    print(e.name)\n"
    )
    assert out.returncode == 0 and out.stdout.split() == ["16", "True", "True", "tvm.relax"], (
        out.stderr
    )


def test_the_pth_file_leaves_a_real_tvm_alone(tmp_path):
    (tmp_path / "tvm").mkdir()
    (tmp_path / "tvm" / "__init__.py").write_text("REAL = True\n")
    out = run_python(
        f"import site; site.addsitedir({str(SITE)!r})\n"
        "import tvm, sys; print(getattr(tvm, 'REAL', False), 'tilelang' in sys.modules)",
        str(tmp_path),
    )
    assert out.returncode == 0 and out.stdout.split() == ["True", "False"], out.stderr


def test_kernel_params_and_tensor_supply():
    from tilelang.engine.param import KernelParam
    from tilelang.utils.tensor import TensorSupplyType, get_tensor_supply

    assert tilelang.DataType("bfloat16").bits == 16
    params = unpack_int4.compile(8, 32).params  # Q (8, 16) uint8, O (8, 32) int8
    assert all(isinstance(p, KernelParam) for p in params)
    q, o = params
    assert q.shape == [8, 16] and not q.is_scalar() and not q.is_float8() and not q.is_boolean()
    ones = get_tensor_supply(TensorSupplyType.One, device="cpu")
    got = ones(q)
    assert got.shape == (8, 16) and got.dtype == np.uint8 and (got == 1).all()
    auto = get_tensor_supply(device="cpu")(o)
    assert auto.dtype == np.int8 and auto.shape == (8, 32)
    with pytest.raises(ValueError, match="device must be 'cuda', 'cpu' or None, got 'tpu'"):
        get_tensor_supply(device="tpu")
    with pytest.raises(TypeError, match="supply_type must be a TensorSupplyType, got 'auto'"):
        get_tensor_supply("auto")


def test_requires_package_skips_without_the_package():
    import tilelang.testing
    from tvm import testing as tvm_testing

    assert tvm_testing.requires_package is tilelang.testing.requires_package
    missing = tilelang.testing.requires_package("numpy", "no_such_package_tl")
    present = tilelang.testing.requires_package("numpy")
    assert missing.args == (True,) and "no_such_package_tl" in missing.kwargs["reason"]
    assert present.args == (False,)


# ---- tvm.target, tvm.transform.PassContext: scopes that reach the compile


@T.prim_func
def add_one(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
    with T.Kernel(1, threads=64) as _:
        for i in T.Parallel(64):
            B[i] = A[i] + 1.0


def test_target_parses_kind_arch_and_attrs():
    from tvm.target import Target

    t = Target({"kind": "cuda", "arch": "sm_80"})
    assert t.kind.name == "cuda" and t.arch == "sm_80" and str(t) == "cuda -arch=sm_80"
    assert t.keys == ["cuda", "gpu"] and t.export()["arch"] == "sm_80"
    c = Target("c")
    assert c.kind.name == "c" and c.arch == "" and c.keys == ["cpu"] and c.canonical() == "cpu"
    assert Target("cuda -arch=sm_90a").attrs == {"arch": "sm_90a"}
    assert Target(t) == t and Target("llvm", host="c").host.kind.name == "c"
    assert t == "cuda -arch=sm_80" and t != "auto" and t != "tpu" and c != 3
    with pytest.raises(ValueError, match="unknown target kind .tpu.; expected one of c, cpu, cuda"):
        Target("tpu")
    with pytest.raises(TypeError, match="a dict target needs a 'kind' string"):
        Target({"arch": "sm_80"})


def test_target_scope_is_the_default_target(monkeypatch):
    from tvm.target import Target

    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "cuda -arch=sm_90a")
    assert Target.current() is None
    with Target("c") as t:
        assert Target.current() is t and tilelang.determine_target() == "cpu"
        with Target({"kind": "cuda", "arch": "sm_80"}):
            assert tilelang.determine_target("auto").startswith("cuda -arch=sm_80")
        assert tilelang.determine_target() == "cpu"
        kernel = tilelang.compile(add_one)  # target="auto": the scope's
    assert tilelang.lower(add_one, target=Target("c")).target == "cpu"  # a Target object
    assert Target.current() is None and kernel.target == "cpu"
    assert tilelang.determine_target().startswith("cuda -arch=sm_90a")
    a = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    b = np.zeros(64, np.float32)
    kernel(a, b)
    np.testing.assert_allclose(b, a + 1.0, rtol=1e-6)
    with pytest.raises(ValueError, match="no target is set"):
        Target.current(allow_none=False)


def test_target_scope_reaches_a_jit_factory(monkeypatch):
    from tvm.target import Target

    monkeypatch.delenv("TILELANG_DEFAULT_TARGET", raising=False)

    @tilelang.jit(out_idx=[1])
    def scaled(n):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=32) as _:
                for i in T.Parallel(n):
                    B[i] = A[i] * 3.0

        return main

    with Target("c"):
        kernel = scaled(32)
    assert kernel.target == "cpu"
    a = np.random.default_rng(2).standard_normal(32).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a * 3.0, rtol=1e-6)


def test_pass_context_configs_reach_the_compile():
    from tvm.transform import PassContext

    assert tvm.ir.transform.PassContext is PassContext
    assert PassContext.current().config == {}
    with PassContext(opt_level=3, config={"tl.disable_tma_lower": True}) as outer:
        assert PassContext.current() is outer and tilelang.transform.get_pass_context() is outer
        with PassContext(config={"tl.enable_fast_math": True}):
            kernel = tilelang.compile(
                add_one, target="cpu", pass_configs={"tl.disable_tma_lower": False}
            )
        plain = tilelang.compile(add_one, target="cpu")
    after = tilelang.compile(add_one, target="cpu")
    assert kernel.pass_configs == {"tl.disable_tma_lower": False, "tl.enable_fast_math": True}
    assert plain.pass_configs == {"tl.disable_tma_lower": True}
    assert after.pass_configs == {} and after is not plain
    with pytest.raises(ValueError, match="unknown pass config key 'tl.disable_tma_lowr'"):
        PassContext(config={"tl.disable_tma_lowr": True})
    with pytest.raises(ValueError, match="passes cannot be switched off by name"):
        PassContext(disabled_pass=["tir.Simplify"])


def test_pass_context_configs_change_what_lower_generates():
    """tilelang.lower inside `with Target(...)` and `with PassContext(config=...)`: the
    target is the scope's and the configs reach the passes (TMA stores on sm_90a)."""
    from tvm.target import Target
    from tvm.transform import PassContext

    @T.prim_func
    def copy_kernel(A: T.Tensor((128, 128), "float16"), B: T.Tensor((128, 128), "float16")):
        with T.Kernel(2, threads=128) as bx:
            S = T.alloc_shared((64, 128), "float16")
            T.copy(A[bx * 64, 0], S)
            T.copy(S, B[bx * 64, 0])

    with Target({"kind": "cuda", "arch": "sm_90a"}):
        plain = tilelang.lower(copy_kernel)
        with PassContext(config={"tl.disable_tma_lower": True, "tl.enable_tma_store": False}):
            off = tilelang.lower(copy_kernel)
    assert plain.target.startswith("cuda -arch=sm_90a")
    assert "tl::tma_store" in plain.kernel_source and "tl::tma_store" not in off.kernel_source
    assert off.pass_configs == {"tl.disable_tma_lower": True, "tl.enable_tma_store": False}
    assert [(p.name, p.shape, p.dtype) for p in plain.params] == [
        ("A", [128, 128], "float16"),
        ("B", [128, 128], "float16"),
    ]
    from tilelang.engine.lower import lower

    assert tilelang.engine.lower is lower
    cpu = lower(tvm.IRModule.from_expr(add_one), target="c")
    assert cpu.target == "cpu" and "kernel 'add_one' for the cpu target" in cpu.kernel_source


# ---- tvm.tirx, tvm.ir, tvm.arith, tvm.error, tvm.runtime


def test_tirx_node_classes_build_and_check_kinds():
    from tvm import tirx
    from tvm.tirx.expr import IntImm, Not, Or, Var

    assert tvm.tir is tirx and tirx.PrimExpr is T.PrimExpr
    assert issubclass(tilelang._C.Expr, tirx.PrimExpr) and not isinstance(3, tirx.PrimExpr)
    x, y = Var("x", "int32"), Var("y", "int32")
    assert isinstance(x, tirx.Var) and not isinstance(x, tirx.IntImm)
    assert isinstance(IntImm("int32", 3), tirx.IntImm) and IntImm("int8", 3).dtype.name == "int8"
    assert isinstance(tirx.FloatImm("float16", 0.5), tirx.FloatImm)
    assert isinstance(tirx.Cast("float32", x), tirx.Cast)
    call = tirx.call_extern("int32", "abs", x)
    assert isinstance(call, tirx.Call) and isinstance(tirx.Call("int32", "abs", [x]), tirx.Call)
    m = tirx.Min(x, y)
    assert isinstance(m, tirx.Min) and not isinstance(m, tirx.Max) and str(m) == "T.min(x, y)"
    assert isinstance(x + y, tirx.Add) and isinstance(x < y, tirx.LT)
    cond = Or(Not(tirx.all(x < y, y < 4)), x > 2)
    assert str(cond) == "(!(((x < y) && (y < 4))) || (x > 2))"
    assert tirx.exp2 is T.exp2 and tirx.op.exp2 is T.exp2 and tirx.op.const is tirx.const


def test_tirx_helpers_in_a_kernel_match_numpy():
    from tvm import tirx

    @tilelang.jit(out_idx=[1], target="cpu")
    def clamp_min(n):
        @T.prim_func
        def main(A: T.Tensor((n,), "int32"), B: T.Tensor((n,), "int32")):
            with T.Kernel(1, threads=32) as _:
                for i in T.Parallel(n):
                    B[i] = tirx.Select(
                        tirx.all(A[i] > 0, A[i] < 50), tirx.Min(A[i], tirx.IntImm("int32", 20)), 0
                    )

        return main

    a = np.random.default_rng(3).integers(-100, 100, 64).astype(np.int32)
    np.testing.assert_array_equal(
        clamp_min(64)(a), np.where((a > 0) & (a < 50), np.minimum(a, 20), 0)
    )


def test_tvm_internal_ir_names_say_they_are_out_of_scope():
    from tvm import tirx

    with pytest.raises(
        NotImplementedError,
        match=r"tvm.tirx.stmt_functor.post_order_visit is TVM-internal and out of scope",
    ):
        tirx.stmt_functor.post_order_visit(None, print)
    with pytest.raises(tvm.OutOfScopeError, match=r"tvm.tirx.decl_buffer is TVM-internal"):
        tirx.decl_buffer((4,), "float32")
    with pytest.raises(tvm.OutOfScopeError, match=r"tvm.tirx.transform.Simplify is TVM-internal"):
        tirx.transform.Simplify()
    with pytest.raises(tvm.OutOfScopeError, match=r"tvm.compile is TVM-internal.*tilelang.compile"):
        tvm.compile(None)
    with pytest.raises(tvm.OutOfScopeError, match=r"tvm.arith.detect_iter_map is TVM-internal"):
        tvm.arith.detect_iter_map([], {})
    assert issubclass(tvm.OutOfScopeError, tvm.TVMError)


def test_arith_analyzer_simplifies_and_proves():
    from tvm import arith, tirx

    a = tirx.Var("a", "int32")
    ana = arith.Analyzer()
    assert str(ana.simplify(a * 2 + a * 3 - a * 5)) == "0"
    assert str(ana.simplify((a + 4) - 4)) == "a"
    assert ana.can_prove(a + 1 > a) and not ana.can_prove(a > 1)


def test_irmodule_and_structural_equal():
    from tvm.ir import IRModule, Range, assert_structural_equal, structural_equal

    mod = IRModule.from_expr(add_one)
    assert mod["main"] is add_one and "main" in mod and len(mod) == 1
    assert mod.script() == add_one.script()
    assert tvm.IRModule is IRModule

    def build():
        @T.prim_func
        def f(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=8) as _:
                for i in T.Parallel(8):
                    A[i] = A[i] * 2.0

        return f

    assert_structural_equal(build(), build())
    assert not structural_equal(build(), add_one)
    with pytest.raises(ValueError, match="structural_equal failed"):
        assert_structural_equal(build(), add_one)
    r = Range.from_min_extent(2, 5)
    assert (r.min, r.extent) == (2, 5) and (Range(3).min, Range(3).extent) == (0, 3)


def test_tvm_error_classes_catch_tilelang_errors():
    assert tvm.error.InternalError is tilelang._C.InternalError
    assert tvm.TVMError is tilelang.TileLangError
    with pytest.raises(
        tvm.TVMError, match="buffer 'A' has 1 dimension\\(s\\) but is indexed with 2"
    ):

        @T.prim_func
        def wrong_rank(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=8) as _:
                A[0, 1] = 1.0


def test_runtime_tensor_runs_a_kernel():
    a = tvm.runtime.tensor(np.random.default_rng(4).standard_normal(64).astype(np.float32))
    b = tvm.runtime.empty((64,), "float32")
    tilelang.compile(add_one, target="cpu")(a, b)
    np.testing.assert_allclose(b, a + 1.0, rtol=1e-6)
    assert tvm.runtime.enabled("c") and tvm.runtime.enabled("llvm")


def test_ir_builder_frame_is_the_dsl_scopes():
    from tvm.script.ir_builder.base import IRBuilderFrame

    assert isinstance(T.serial(1, 10, 1), IRBuilderFrame)
    assert isinstance(T.Parallel(4), IRBuilderFrame) and not isinstance(3, IRBuilderFrame)


def test_testing_gates():
    import tilelang.testing as tt

    def check():
        def test():
            pass

        return test

    for gate in (tt.requires_rocm, tt.requires_cdna, tt.requires_gfx950):
        (mark,) = gate(check()).pytestmark
        assert mark.name == "skip" and "no ROCm (HIP) backend" in mark.kwargs["reason"]
    (llvm,) = tt.requires_llvm(check()).pytestmark
    assert llvm.args == (False,)  # the cpu target is LLVM's stand-in and always built
    (metal,) = tt.requires_metal(check()).pytestmark
    assert metal.args == (not tilelang.utils.target.has_mps_device(),)
    (cuda,) = tt.requires_cuda_or_cdna(check()).pytestmark
    assert cuda.args == (tt._cuda_capability() is None,)
