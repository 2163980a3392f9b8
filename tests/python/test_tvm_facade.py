"""tilelang.tvm: the TVM names TileLang kernels use (`from tvm import tir`, `tvm.DataType`,
`tvm.te.var`), mapped onto tilelang.language, and importable as `tvm` after `import
tilelang` when no real TVM is installed."""

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
            r"tvm.relay is not part of tilelang's TVM facade \(tilelang.tvm offers DataType, tir, te and testing\)",
        ),
        (
            lambda: tir.Schedule,
            r"tvm.tir.Schedule is not part of tilelang's TVM facade \(tvm.tir offers Buffer, Cast",
        ),
        (
            lambda: tvm.te.compute,
            r"tvm.te.compute is not part of tilelang's TVM facade \(tvm.te offers var\)",
        ),
    ],
)
def test_names_outside_the_facade_say_so(get, message):
    with pytest.raises(AttributeError, match=message):
        get()


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
        "    import tvm.runtime\n"
        "except ModuleNotFoundError as e:\n"
        "    print(e.name)\n"
    )
    assert out.returncode == 0 and out.stdout.split() == ["16", "True", "True", "tvm.runtime"], (
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
