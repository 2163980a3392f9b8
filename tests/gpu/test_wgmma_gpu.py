"""The sm_90a wgmma path on an H100/H200: the device tests of
tests/python/test_wgmma_device.py (the wgmma layout, gemm_ss, gemm_rs, and tiles off
their swizzle pattern giving wrong products) with their kernels compiled by NVRTC for
sm_90a and launched through the CUDA driver; T.gemm kernels compiled for
"cuda -arch=sm_90a" against torch; and the cubins' SASS holding HGMMA (checked where
cuobjdump is found). Skipped without a GPU of compute capability 9.0."""

import ctypes
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))

torch = pytest.importorskip("torch")

import test_device_sm80 as sm80_tests
import test_wgmma_device as device_tests
import tilelang
from test_wgmma_device import (
    test_layout_offsets,
    test_tiles_off_the_swizzle_pattern_give_wrong_products,
    test_wgmma_rs_matches_numpy,
    test_wgmma_ss_matches_numpy,
)
from test_wgmma_gemm import attention_like, wgmma_gemm

__all__ = [
    "test_layout_offsets",
    "test_tiles_off_the_swizzle_pattern_give_wrong_products",
    "test_wgmma_rs_matches_numpy",
    "test_wgmma_ss_matches_numpy",
]

TARGET = "cuda -arch=sm_90a"
TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


pytestmark = pytest.mark.usefixtures("hopper")  # tests/gpu/conftest.py


def nvrtc_cubin(source, name):
    """The sm_90a cubin NVRTC makes of `source`, with the runtime's options."""
    lib = ctypes.CDLL(next(n for n in sm80_tests.NVRTC_NAMES if sm80_tests._loadable(n)))
    prog = ctypes.c_void_p()
    assert (
        lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None)
        == 0
    )
    opts = [
        "--gpu-architecture=sm_90a",
        f"-I{sm80_tests.DEVICE / 'cuda'}",
        "--std=c++17",
        "-default-device",
    ]
    argv = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = lib.nvrtcCompileProgram(prog, len(opts), argv)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    assert rc == 0, log.value.decode()
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
    cubin = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetCUBIN(prog, cubin)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return cubin.raw


def sass(cubin, tmp_path):
    """cuobjdump -sass of a cubin, or None where cuobjdump is not found."""
    tool = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    if not os.access(tool, os.X_OK):
        return None
    path = tmp_path / "k.cubin"
    path.write_bytes(cubin)
    return subprocess.run(
        [tool, "-sass", str(path)], capture_output=True, text=True, check=True
    ).stdout


class Driver:
    """The test kernels' cubin, launched through the CUDA driver API in torch's context."""

    def __init__(self, cubin):
        torch.zeros(1, device="cuda")  # the primary context, current in this thread
        self.cuda = ctypes.CDLL("libcuda.so.1")
        self.module = ctypes.c_void_p()
        self.image = ctypes.create_string_buffer(cubin, len(cubin))
        self.check(
            self.cuda.cuModuleLoadData(ctypes.byref(self.module), self.image), "cuModuleLoadData"
        )

    def check(self, rc, what):
        assert rc == 0, f"{what} failed with CUresult {rc}"

    def launch(self, entry, threads, shared_bytes, *arrays):
        func = ctypes.c_void_p()
        self.check(
            self.cuda.cuModuleGetFunction(ctypes.byref(func), self.module, entry.encode()), entry
        )
        if shared_bytes > 48 * 1024:  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            self.check(self.cuda.cuFuncSetAttribute(func, 8, shared_bytes), "cuFuncSetAttribute")
        dev = [
            torch.from_numpy(np.ascontiguousarray(a).reshape(-1).view(np.uint8)).cuda()
            for a in arrays
        ]
        ptrs = [ctypes.c_void_p(d.data_ptr()) for d in dev]
        params = (ctypes.c_void_p * len(ptrs))(
            *[ctypes.cast(ctypes.byref(p), ctypes.c_void_p) for p in ptrs]
        )
        torch.cuda.synchronize()
        rc = self.cuda.cuLaunchKernel(
            func, 1, 1, 1, threads, 1, 1, shared_bytes, None, params, None
        )
        self.check(rc, f"cuLaunchKernel({entry})")
        torch.cuda.synchronize()
        for a, d in zip(arrays, dev):
            a.reshape(-1).view(np.uint8)[...] = d.cpu().numpy()


@pytest.fixture(scope="module")
def device_cubin():
    return nvrtc_cubin(device_tests.KERNELS.read_text(), "wgmma_kernels.cu")


@pytest.fixture(scope="module")
def run(device_cubin):
    """The emulator tests' `run`, on the GPU."""
    return Driver(device_cubin).launch


def test_device_kernels_run_hgmma(device_cubin, tmp_path):
    text = sass(device_cubin, tmp_path)
    if text is None:
        pytest.skip("cuobjdump not found: the SASS check needs it")
    assert "HGMMA" in text


def torch_operands(M, N, K, dtype, trans_a, trans_b):
    t = TORCH_DTYPES[dtype]
    a = torch.randn(*((K, M) if trans_a else (M, K)), device="cuda", dtype=t)
    b = torch.randn(*((N, K) if trans_b else (K, N)), device="cuda", dtype=t)
    c0 = torch.randn(M, N, device="cuda")
    af, bf = a.double(), b.double()
    return a, b, c0, (c0.double() + (af.T if trans_a else af) @ (bf.T if trans_b else bf)).float()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize(
    "M, N, K, tile, threads, trans_a, trans_b",
    [
        (512, 512, 512, (128, 128, 64), 256, False, False),
        (512, 384, 256, (128, 128, 64), 256, False, True),
        (384, 512, 192, (128, 256, 64), 256, True, False),
        (256, 256, 128, (64, 128, 32), 128, True, True),
        (229, 296, 127, (128, 128, 32), 256, False, False),  # tails: the copies pad with zeros
        (512, 512, 256, (256, 128, 64), 512, False, True),
    ],
)
def test_wgmma_gemm_matches_torch(M, N, K, tile, threads, trans_a, trans_b, dtype, tmp_path):
    bM, bN, bK = tile
    kernel = tilelang.compile(
        wgmma_gemm(M, N, K, bM, bN, bK, dtype, trans_a, trans_b, threads, 0, stages=3),
        target=TARGET,
    )
    source = kernel.get_kernel_source()
    assert "tl::wgmma_gemm_ss<" in source
    a, b, c0, ref = torch_operands(M, N, K, dtype, trans_a, trans_b)
    c = torch.empty_like(c0)
    kernel(a, b, c0, c)
    torch.testing.assert_close(c, ref, rtol=1e-3, atol=1e-3)
    text = sass(nvrtc_cubin(source, "kernel.cu"), tmp_path)
    if text is not None:
        assert "HGMMA" in text


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_register_a_wgmma_matches_torch(dtype):
    M, N, D = 128, 64, 64
    kernel = tilelang.compile(attention_like(M, N, D, dtype, 256), target=TARGET)
    assert "tl::wgmma_gemm_rs<" in kernel.get_kernel_source()
    t = TORCH_DTYPES[dtype]
    q, k, v = (torch.randn(*s, device="cuda", dtype=t) for s in [(M, D), (N, D), (N, D)])
    o, mx = torch.empty(M, D, device="cuda"), torch.empty(M, device="cuda")
    kernel(q, k, v, o, mx)
    s = q.double() @ k.double().T
    torch.testing.assert_close(mx, s.max(dim=1).values.float(), rtol=1e-3, atol=1e-3)
    p = torch.exp(s - mx.double()[:, None]).to(t).double()
    torch.testing.assert_close(o, (p @ v.double()).float(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_wgmma_gemm_at_4096(dtype):
    # Speed is measured by the benchmarks, not here.
    n = 4096
    kernel = tilelang.compile(
        wgmma_gemm(n, n, n, 128, 256, 64, dtype, False, False, 256, 0, 3), target=TARGET
    )
    a, b, c0, _ = torch_operands(n, n, n, dtype, False, False)
    c = torch.empty_like(c0)
    kernel(a, b, c0, c)
    ref = c0[:128, :256] + a[:128].float() @ b[:, :256].float()
    torch.testing.assert_close(c[:128, :256], ref, rtol=1e-2, atol=1e-2)
