"""The host side of the Metal backend that needs no Mac: target strings and dicts,
execution-backend resolution, the cache (torch-backend kernels have no artifact and
never touch the disk layer, while other backends keep caching), and the pieces of
the torch launcher that do not need torch: the launch plan the core computes from the
arguments' shapes and values (grid, threadgroup, shapes to allocate, the argument
struct's bytes) and its errors."""

import logging
import struct
import sys

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from metal_kernels import axpb, gemm
from tilelang import _native
from tilelang import cache as tl_cache
from tilelang.jit.kernel import resolve_backend
from tilelang.jit.metal_torch import MetalTorchLauncher, pack_args
from tilelang.utils.target import determine_target

_C = _native.load()


@pytest.mark.parametrize(
    "given, expect",
    [
        ("metal", "metal"),
        ("metal -keys=metal4", "metal -keys=metal4"),
        ({"kind": "metal", "keys": ["metal4"]}, "metal -keys=metal4"),
        ('{"kind": "metal", "keys": ["metal4"]}', "metal -keys=metal4"),
        ({"kind": "metal", "emulate": True}, "metal -emulate"),
    ],
)
def test_metal_targets(given, expect):
    assert determine_target(given) == expect


def test_emulation_switch_applies_to_metal(monkeypatch):
    monkeypatch.setattr(sys.modules["tilelang.env"], "_emulate", True)
    assert determine_target("metal -keys=metal4") == "metal -keys=metal4 -emulate"


def test_backend_resolution():
    assert resolve_backend("auto", "metal") == "torch"
    assert resolve_backend("auto", "metal -keys=metal4") == "torch"
    assert resolve_backend("auto", "metal -emulate") == "native"
    with pytest.raises(
        ValueError,
        match=r"unknown execution_backend 'metalx'; for target 'metal' use one of 'auto', 'torch'",
    ):
        resolve_backend("metalx", "metal")
    with pytest.raises(
        ValueError,
        match=r"'cython' is not available for target 'metal'; use one of 'auto', 'torch'",
    ):
        resolve_backend("cython", "metal")


def test_metal_kernel_without_torch_says_how_to_run_it(monkeypatch):
    kernel = tilelang.compile(axpb(), target="metal")
    assert kernel.execution_backend == "torch"
    x = np.zeros(8, np.float16)
    monkeypatch.setitem(sys.modules, "torch", None)  # as on a machine without torch
    with pytest.raises(RuntimeError, match="runs through torch.mps, which is not available here"):
        kernel(x, np.zeros(8, np.float32), 1.0, 2)


def test_torch_backend_kernels_skip_the_disk_cache_only_for_themselves(
    tmp_path, monkeypatch, caplog
):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    assert tilelang.is_cache_enabled()
    with caplog.at_level(logging.DEBUG, logger="tilelang"):
        builds = _C.compile_count()
        metal = tilelang.compile(gemm(64, 64, 32), target="metal")
        assert _C.compile_count() == builds + 1
        assert metal.kernel.artifact_dir == ""
        assert metal.cache_key  # keyed like every kernel, for the in-memory layer
        assert tl_cache.stats(str(tmp_path))["entries"] == 0
        # The same kernel again (a new PrimFunc object): served from memory.
        again = tilelang.compile(gemm(64, 64, 32), target="metal")
        assert _C.compile_count() == builds + 1 and again.cache_key == metal.cache_key
        # Caching is still on for the other backends: a CPU kernel lands on disk.
        cpu = tilelang.compile(gemm(64, 64, 32, bk=16), target="cpu")
        assert cpu.kernel.artifact_dir.startswith(str(tmp_path))
        kernel_dirs = [
            d for d in (tmp_path / "kernels").iterdir() if not (d / "prelude.h").exists()
        ]
        assert [str(d) for d in kernel_dirs] == [cpu.kernel.artifact_dir]
    assert tilelang.is_cache_enabled()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_emulated_metal_kernels_use_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))

    # A kernel no other test builds: the in-process layer (shared by all cache
    # directories) must not serve it from an earlier test's entry.
    @T.prim_func
    def scale(X: T.Tensor((64,), "float32"), Y: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                Y[i] = X[i] * 3.25 + 0.0625

    kernel = tilelang.compile(scale, target="metal -emulate")
    assert kernel.kernel.artifact_dir.startswith(str(tmp_path))
    # The kernel's entry, and the emulator runtime's (built once per flag set).
    assert tl_cache.stats(str(tmp_path))["entries"] == 2
    runtime = [d for d in (tmp_path / "kernels").iterdir() if (d / "runtime.o").exists()]
    assert len(runtime) == 1 and kernel.kernel.artifact_dir != str(runtime[0])


def test_launch_plan_and_geometry():
    kernel = tilelang.compile(gemm(200, 130, 70, bm=64, bn=32), target="metal")
    native = kernel.kernel
    assert native.param_names == ["A", "B", "C"]
    plan = native.plan_launch([(200, 70), (70, 130), None])
    assert plan["grid"] == (5, 4, 1)  # ceildiv(130, 32), ceildiv(200, 64)
    assert plan["threads"] == (128, 1, 1)
    assert plan["shapes"] == [[200, 70], [70, 130], [200, 130]]
    assert plan["args"] == b""  # no scalar, no dynamic dim: no argument struct
    launcher = MetalTorchLauncher(native, [2])
    assert launcher.function == "main_kernel" and launcher.inputs == [0, 1]


def test_launch_plan_checks_the_arguments_as_a_call_does():
    native = tilelang.compile(gemm(200, 130, 70, bm=64, bn=32), target="metal").kernel
    with pytest.raises(
        tilelang.TileLangError, match=r"argument 'B' of kernel 'main': dim 1 must be 130, got 128"
    ):
        native.plan_launch([(200, 70), (70, 128), None])
    with pytest.raises(
        tilelang.TileLangError, match=r"argument 'A' of kernel 'main' must have 2 dims, got 1"
    ):
        native.plan_launch([(200,), (70, 130), None])
    with pytest.raises(tilelang.TileLangError, match=r"has 3 parameters .* was given 2 arguments"):
        native.plan_launch([(200, 70), (70, 130)])
    with pytest.raises(
        tilelang.TileLangError, match=r"argument 'A' of kernel 'main' must be a tensor"
    ):
        native.plan_launch([3, (70, 130), None])


def test_dynamic_dims_and_argument_struct():
    native = tilelang.compile(axpb(), target="metal").kernel
    plan = native.plan_launch([(1000,), None, 1.5, -3])
    assert plan["grid"] == (4, 1, 1)  # ceildiv(n, 256) with n bound by X
    assert plan["shapes"][1] == [1000]  # Y, the output, takes n from X
    # struct main_args_t { float alpha; int bias; int n; }
    assert plan["args"] == struct.pack("<fii", 1.5, -3, 1000)
    with pytest.raises(
        tilelang.TileLangError, match=r"cannot infer the shape of output 'X' of kernel 'main'"
    ):
        native.plan_launch([None, None, 1.5, -3])
    with pytest.raises(
        tilelang.TileLangError, match=r"argument 'bias' of kernel 'main' must be an integer"
    ):
        native.plan_launch([(1000,), None, 1.5, 2.5])
    with pytest.raises(tilelang.TileLangError, match=r"2147483648 does not fit its dtype int32"):
        native.plan_launch([(1000,), None, 1.5, 2**31])
    # Natural alignment and a size rounded to the widest field.
    assert pack_args([("int32", 1), ("int64", 2), ("float16", 0.5)]) == struct.pack(
        "<i4xqe6x", 1, 2, 0.5
    )
    assert pack_args([("bfloat16", 1.0)]) == struct.pack("<H", 0x3F80)
    assert pack_args([("bool", True), ("uint32", 2**32 - 1)]) == struct.pack("<iI", 1, 2**32 - 1)


def test_float_scalars_round_once_into_the_struct():
    """A Python float becomes the nearest bfloat16 / float16 in one rounding (as
    ml_dtypes and the cpu / cuda targets do), not through float32: 1 + 2^-8 + 2^-30 is
    a float32 tie for bfloat16."""
    values = [
        1 + 2**-8 + 2**-30,
        1 + 2**-8,
        1 + 3 * 2**-8,
        -(1 + 2**-8 + 2**-30),
        3.4e38,
        1e39,
        -1e39,
    ]
    values += [2.0**-133, 2.0**-134 * 1.0000001, 2.0**-150, float("inf"), float("-inf"), 0.0, -0.0]
    values += list(
        np.random.default_rng(5).standard_normal(2000) * np.exp2(np.arange(2000) % 200 - 100)
    )
    with np.errstate(over="ignore"):
        want_bf16 = np.array(values, np.float64).astype(ml_dtypes.bfloat16).view(np.uint16)
        want_f16 = np.array(values, np.float64).astype(np.float16).view(np.uint16)
    got_bf16 = [struct.unpack("<H", pack_args([("bfloat16", float(v))]))[0] for v in values]
    got_f16 = [struct.unpack("<H", pack_args([("float16", float(v))]))[0] for v in values]
    assert got_bf16 == want_bf16.tolist()
    assert got_f16 == want_f16.tolist()
    assert pack_args([("bfloat16", float("nan"))]) == struct.pack("<H", 0x7FC0)


def test_float64_scalars_are_refused_in_the_struct():
    with pytest.raises(tilelang.TileLangError, match="float64 cannot be passed to a Metal kernel"):
        pack_args([("float64", 1.0)])


def test_metal_scalar_kernel_rejects_float64_params():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), s: T.float64):
        with T.Kernel(1, threads=64) as _:
            for i in T.Parallel(64):
                A[i] = A[i] * T.cast(s, "float32")

    with pytest.raises(tilelang.TileLangError, match="float64 is not supported on Metal"):
        tilelang.compile(main, target="metal")


def test_torch_launcher_end_to_end_with_a_stand_in_for_mps(monkeypatch):
    """The launcher's path on a Mac, with torch.mps stood in for: the stand-in's
    "shader" receives what Metal would (the tensors, the argument struct, the thread
    counts) and computes axpb from them, so the outputs allocated from the core's plan,
    the struct's bytes and the geometry are all checked."""
    torch = pytest.importorskip("torch")
    import types

    launches = []

    def axpb_shader(x, y, args, threads, group_size):
        alpha, bias, n = struct.unpack("<fii", bytes(args.tolist()))
        launches.append((tuple(threads), tuple(group_size), n))
        y[:n] = x[:n].float() * alpha + bias

    class Library:
        def __getattr__(self, name):
            assert name == "main_kernel"
            return axpb_shader

    class Device:
        type = "mps"

    class MpsTensor(torch.Tensor):
        @property
        def device(self):
            return Device()

        def to(self, device):
            assert device.type == "mps"
            return self

    def on_mps(t):
        return t.as_subclass(MpsTensor)

    fake = types.SimpleNamespace(
        Tensor=torch.Tensor,
        uint8=torch.uint8,
        float32=torch.float32,
        float16=torch.float16,
        mps=types.SimpleNamespace(compile_shader=lambda source: Library()),
        backends=types.SimpleNamespace(mps=types.SimpleNamespace(is_available=lambda: True)),
        empty=lambda shape, dtype, device: on_mps(torch.empty(shape, dtype=dtype)),
        frombuffer=lambda buf, dtype: on_mps(torch.frombuffer(buf, dtype=dtype)),
    )
    monkeypatch.setattr(MetalTorchLauncher, "_torch", lambda self: fake)
    kernel = tilelang.compile(axpb(), out_idx=[1], target="metal")
    x = on_mps(torch.arange(1000, dtype=torch.float16) / 8)
    y = kernel(x, 1.5, -3)
    assert isinstance(y, MpsTensor) and tuple(y.shape) == (1000,) and y.dtype == torch.float32
    torch.testing.assert_close(
        y.as_subclass(torch.Tensor), x.float().as_subclass(torch.Tensor) * 1.5 - 3
    )
    assert launches == [((4 * 128, 1, 1), (128, 1, 1), 1000)]
    with pytest.raises(
        TypeError, match=r"argument 'X' of metal kernel 'main' must be torch.float16"
    ):
        kernel(on_mps(torch.zeros(1000, dtype=torch.float32)), 1.5, -3)
    with pytest.raises(ValueError, match=r"must be on the mps device"):
        kernel(torch.zeros(1000, dtype=torch.float16), 1.5, -3)
    with pytest.raises(
        tilelang.TileLangError, match=r"argument 'Y' of kernel 'main': dim 0 must be 1000, got 999"
    ):
        kernel(x, on_mps(torch.zeros(999, dtype=torch.float32)), 1.5, -3)
