"""The host side of the Metal backend that needs no Mac: target strings and dicts,
execution-backend resolution, the cache (torch-backend kernels have no artifact and
never touch the disk layer, while other backends keep caching), and the pieces of
the torch launcher that do not need torch (signature reading, argument packing)."""

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
from tilelang.jit.metal_torch import MetalTorchLauncher, _eval, _Signature, pack_args
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


def test_signature_reading_and_launch_geometry():
    kernel = tilelang.compile(gemm(200, 130, 70, bm=64, bn=32), target="metal")
    sig = _Signature(kernel.kernel.signature_text)
    assert [p[1] for p in sig.params] == ["A", "B", "C"]
    assert [_eval(e, {}) for e in sig.grid] == [5, 4]  # ceildiv(130, 32), ceildiv(200, 64)
    assert sig.threads == [128]
    launcher = MetalTorchLauncher(kernel.kernel, [2])
    assert launcher.function == "main_kernel" and launcher.inputs == [0, 1]


def test_dynamic_dims_and_argument_struct():
    kernel = tilelang.compile(axpb(), target="metal")
    sig = _Signature(kernel.kernel.signature_text)
    n_var = sig.dynamic[0]
    assert sig.vars[n_var] == ("int32", "n")
    assert [_eval(e, {n_var: 1000}) for e in sig.grid] == [4]
    # struct main_args_t { float alpha; int bias; int n; }
    packed = pack_args([("float32", 1.5), ("int32", -3), ("int32", 1000)])
    assert packed == struct.pack("<fii", 1.5, -3, 1000)
    # Natural alignment and a size rounded to the widest field.
    assert pack_args([("int32", 1), ("int64", 2), ("float16", 0.5)]) == struct.pack(
        "<i4xqe6x", 1, 2, 0.5
    )
    assert pack_args([("bfloat16", 1.0)]) == struct.pack("<H", 0x3F80)


def test_bfloat16_scalars_round_once():
    """A Python float becomes the nearest bfloat16 in one rounding (as ml_dtypes and the
    cpu / cuda targets do), not through float32: 1 + 2^-8 + 2^-30 is a float32 tie."""
    from tilelang.jit.metal_torch import _bfloat16_bits

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
        want = np.array(values, np.float64).astype(ml_dtypes.bfloat16).view(np.uint16)
    assert [_bfloat16_bits(v) for v in values] == want.tolist()
    assert _bfloat16_bits(float("nan")) == 0x7FC0 and _bfloat16_bits(-float("nan")) == 0xFFC0


def test_float64_scalars_are_refused_in_the_struct():
    with pytest.raises(TypeError, match="float64 cannot be passed to a Metal kernel"):
        pack_args([("float64", 1.0)])


def test_metal_scalar_kernel_rejects_float64_params():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), s: T.float64):
        with T.Kernel(1, threads=64) as _:
            for i in T.Parallel(64):
                A[i] = A[i] * T.cast(s, "float32")

    with pytest.raises(tilelang.TileLangError, match="float64 is not supported on Metal"):
        tilelang.compile(main, target="metal")
