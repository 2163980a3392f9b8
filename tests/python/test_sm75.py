"""The sm_75 (Turing) target: float16 gemms on the tensor cores through
mma.sync.m16n8k8 (two a 16 x 8 x 16 tile) and ldmatrix, every other operand type as dot
products, pipelines without cp.async, and T.ptx_cp_async as a load and a store. Checked
here by NVRTC (the PTX it gives) and the emulator (exact results on small integers);
tests/gpu/test_sm75_gpu.py runs the same kernels on a GPU."""

import re

import numpy as np
import pytest
import tilelang
from sm75_kernels import SM75, atomic_add_bf16, cp_async_copy, gemm, pipelined_gemm, small_integers
from test_device_sm80 import needs_nvrtc, nvrtc_compile

EMULATED = SM75 + " -emulate"


def ptx_of(kernel):
    ok, log, ptx = nvrtc_compile("sm_75", source=kernel.get_kernel_source(), want_ptx=True)
    assert ok, log
    return ptx


def reference(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


def test_sm75_is_a_target_and_older_archs_are_refused():
    assert tilelang.utils.target.determine_target(SM75) == SM75
    with pytest.raises(
        tilelang.TileLangError, match=r"sm_70 .* the oldest is sm_75 \(ldmatrix and"
    ):
        tilelang.compile(gemm(32, 32, 32, "float16", "float32"), target="cuda -arch=sm_70")


@pytest.mark.parametrize("in_dtype, acc_dtype", [("float16", "float32")])
def test_float16_gemm_runs_on_m16n8k8(in_dtype, acc_dtype):
    f = gemm(64, 64, 32, in_dtype, acc_dtype)
    source = tilelang.compile(f, target=SM75, out_idx=[2]).get_kernel_source()
    assert "tl::gemm_ss<" in source
    a, b = small_integers((64, 32), in_dtype, 1), small_integers((32, 64), in_dtype, 2)
    c = tilelang.compile(f, target=EMULATED, out_idx=[2])(a, b)
    np.testing.assert_array_equal(c, reference(a, b))


@needs_nvrtc
def test_float16_gemm_ptx_has_m16n8k8_and_ldmatrix_only():
    ptx = ptx_of(tilelang.compile(gemm(64, 64, 32, "float16", "float32"), target=SM75, out_idx=[2]))
    assert "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32" in ptx
    assert "m16n8k16" not in ptx and "ldmatrix" in ptx


@pytest.mark.parametrize(
    "in_dtype, acc_dtype, shape",
    [
        ("bfloat16", "float32", (64, 64, 32)),
        ("float32", "float32", (64, 64, 32)),
        ("float64", "float64", (32, 32, 32)),
        ("float16", "float16", (64, 64, 32)),
        ("int8", "int32", (64, 64, 32)),
    ],
)
def test_other_operand_types_run_as_dot_products(in_dtype, acc_dtype, shape):
    m, n, k = shape
    f = gemm(m, n, k, in_dtype, acc_dtype)
    source = tilelang.compile(f, target=SM75, out_idx=[2]).get_kernel_source()
    assert not re.search(r"tl::gemm_(ss|rs|mma)<", source)
    a, b = small_integers((m, k), in_dtype, 3), small_integers((k, n), in_dtype, 4)
    c = tilelang.compile(f, target=EMULATED, out_idx=[2])(a, b)
    np.testing.assert_array_equal(np.asarray(c, np.float64), reference(a, b))


@needs_nvrtc
@pytest.mark.parametrize("in_dtype, acc_dtype", [("bfloat16", "float32"), ("float32", "float32")])
def test_other_operand_types_compile_without_tensor_cores(in_dtype, acc_dtype):
    ptx = ptx_of(tilelang.compile(gemm(64, 64, 32, in_dtype, acc_dtype), target=SM75, out_idx=[2]))
    assert "mma.sync" not in ptx


def test_pipelines_use_no_cp_async():
    f = pipelined_gemm(128, 128, 256)
    source = tilelang.compile(f, target=SM75, out_idx=[2]).get_kernel_source()
    assert "cp_async" not in source and "tl::gemm_ss<" in source
    a, b = small_integers((128, 256), "float16", 5), small_integers((256, 128), "float16", 6)
    c = tilelang.compile(f, target=EMULATED, out_idx=[2])(a, b)
    np.testing.assert_array_equal(c, reference(a, b))


def test_hand_written_cp_async_copies_synchronously():
    f = cp_async_copy()
    x = np.arange(256, dtype=np.float32)
    y = tilelang.compile(f, target=EMULATED, out_idx=[1])(x)
    np.testing.assert_array_equal(y, np.roll(x, -4))


@needs_nvrtc
def test_hand_written_cp_async_is_a_load_and_a_store_in_the_ptx():
    ptx = ptx_of(tilelang.compile(cp_async_copy(), target=SM75, out_idx=[1]))
    assert "cp.async" not in ptx


@needs_nvrtc
def test_bfloat16_atomic_add_compiles():
    ptx_of(tilelang.compile(atomic_add_bf16(), target=SM75))
