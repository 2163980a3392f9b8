"""Export and load of cuda kernels without a GPU: NVRTC compiles for an explicit arch
here, the exported file loads back without compiling (the cubin is loaded into the
driver only at the first call), and the cache key names the driver. Runs where NVRTC
is installed; the emulated round trip also runs the loaded kernel on the CPU."""

import os
import re

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.jit import load_kernel
from tilelang.utils.target import available_targets, has_cuda_device

pytestmark = pytest.mark.skipif(
    "cuda" not in available_targets(), reason="needs NVRTC (libnvrtc.so) for the cuda target"
)
_C = tilelang._C

ARCH_TARGET = "cuda -arch=sm_80"


def scaled_add(n, block=128):
    @T.prim_func
    def scaled_add_kernel(
        A: T.Tensor((n,), "float32"),
        B: T.Tensor((n,), "float32"),
        C: T.Tensor((n,), "float32"),
    ):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] * 2 + B[bx * block + i]

    return scaled_add_kernel


@pytest.fixture(scope="module")
def cuda_kernel(tmp_path_factory):
    old = os.environ.get("TILELANG_CACHE_DIR")
    os.environ["TILELANG_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    try:
        yield tilelang.compile(scaled_add(512), out_idx=[-1], target=ARCH_TARGET)
    finally:
        if old is None:
            os.environ.pop("TILELANG_CACHE_DIR", None)
        else:
            os.environ["TILELANG_CACHE_DIR"] = old


def test_round_trip_loads_without_compiling(cuda_kernel, tmp_path):
    path = tmp_path / "scaled_add.tlkernel"
    cuda_kernel.export_library(str(path))
    names = set(os.listdir(path))
    cubin = (path / "kernel.cubin").read_bytes()
    assert {"export.txt", "kernel.cu", "kernel.cubin", "meta.txt"} <= names
    assert cubin[:4] == b"\x7fELF"  # a cubin is an ELF image

    builds = _C.compile_count()
    loaded = load_kernel(str(path))
    assert _C.compile_count() == builds, "loading an exported cuda kernel compiled it again"
    assert loaded.get_kernel_source() == cuda_kernel.get_kernel_source()
    assert "__global__" in loaded.get_kernel_source()
    assert loaded.target == cuda_kernel.target == ARCH_TARGET
    assert loaded.out_idx == [2]
    assert [(p.name, p.dtype, p.shape) for p in loaded.params] == [
        ("A", "float32", [512]),
        ("B", "float32", [512]),
        ("C", "float32", [512]),
    ]
    with open(os.path.join(loaded.kernel.artifact_dir, "kernel.cubin"), "rb") as f:
        assert f.read() == cubin
    with open(os.path.join(cuda_kernel.kernel.artifact_dir, "kernel.cubin"), "rb") as f:
        assert f.read() == cubin

    # Re-export of the loaded kernel gives the same members.
    again = tmp_path / "again.tlkernel"
    loaded.export_library(str(again))
    assert (again / "kernel.cubin").read_bytes() == cubin


@pytest.mark.skipif(has_cuda_device(), reason="checks the call path of a machine without a GPU")
def test_loaded_kernel_needs_a_gpu_only_at_the_call(cuda_kernel, tmp_path):
    path = tmp_path / "k.tlkernel"
    cuda_kernel.export_library(str(path))
    loaded = load_kernel(str(path))
    a = np.random.default_rng(0).standard_normal(512).astype(np.float32)
    with pytest.raises(tilelang.TileLangError, match=r"argument 'A' .* is on cpu, expected a cuda"):
        loaded(a, a)


def test_missing_cubin_is_a_clear_error(cuda_kernel, tmp_path):
    (tmp_path / "kernel.cu").write_text(cuda_kernel.get_kernel_source())
    (tmp_path / "meta.txt").write_text("entry x\nshared_bytes 0\n")
    with pytest.raises(tilelang.TileLangError, match=r"has no kernel\.cubin in .*export it again"):
        _C.load_kernel(cuda_kernel.kernel.signature_text, ARCH_TARGET, str(tmp_path))


def test_cache_key_names_nvrtc_and_driver():
    material = _C.cache_key_material(scaled_add(512).core, ARCH_TARGET, {}, [])
    assert re.search(r"^nvrtc: \d+\.\d+$", material, re.MULTILINE)
    driver = re.search(r"^cuda driver: (\S+)$", material, re.MULTILINE)
    assert driver, material[:400]
    if has_cuda_device():
        assert re.fullmatch(r"\d+\.\d+", driver.group(1))
    assert "target: cuda -arch=sm_80" in material
    other = _C.cache_key_material(scaled_add(512).core, "cuda -arch=sm_90", {}, [])
    assert other != material
    # The CPU target's key does not depend on the CUDA installation.
    assert "cuda driver" not in _C.cache_key_material(scaled_add(512).core, "cpu", {}, [])


def test_emulated_cuda_kernel_round_trip_runs(tmp_path):
    """`cuda -emulate` keeps the CUDA source and a host library: the loaded kernel runs."""
    kernel = tilelang.compile(scaled_add(320, block=64), out_idx=[-1], target="cuda -emulate")
    path = tmp_path / "emu.tlkernel"
    kernel.export_library(str(path))
    builds = _C.compile_count()
    loaded = load_kernel(str(path))
    assert _C.compile_count() == builds
    assert loaded.get_kernel_source() == kernel.get_kernel_source()
    rng = np.random.default_rng(1)
    a = rng.standard_normal(320).astype(np.float32)
    b = rng.standard_normal(320).astype(np.float32)
    np.testing.assert_allclose(loaded(a, b), a * 2 + b, rtol=1e-6)


def test_stream_argument_misuse_is_a_clear_error(cuda_kernel):
    a = np.random.default_rng(2).standard_normal(512).astype(np.float32)
    with pytest.raises(TypeError, match=r"must be a torch.cuda.Stream or a raw CUstream as an int"):
        cuda_kernel(a, a, stream="side")
    cpu_kernel = tilelang.compile(scaled_add(512), out_idx=[-1], target="cpu")
    with pytest.raises(TypeError, match=r"targets cpu; streams apply to cuda kernels only"):
        cpu_kernel(a, a, stream=0)
    np.testing.assert_allclose(cpu_kernel(a, a), a * 3, rtol=1e-6)
