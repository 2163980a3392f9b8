"""TileLang's language dialects (tilelang/_dialects.py): `tilelang.<target>.language` list
TileLang's names for each backend, `tilelang.language` is the CUDA dialect, the
backend-owned builtins live in their backend's module; and the legacy PTX barrier
spellings every dialect keeps (T.ptx_arrive_barrier, ...) run."""

import importlib

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang._dialects import CUDA_EXTENSIONS, ROCM_EXTENSIONS
from tilelang.language.tir.exports import (
    BACKEND_ONLY_TIR_EXPORTS,
    CUDA_ONLY_TIR_EXPORTS,
    METAL_ONLY_TIR_EXPORTS,
    ROCM_ONLY_TIR_EXPORTS,
    SHARED_LEGACY_TIR_EXPORTS,
)

SM90A = "cuda -arch=sm_90a -emulate"


def _dialect(name):
    return importlib.import_module(f"tilelang.{name}.language")


def test_each_dialect_lists_the_common_names_and_its_own():
    from tilelang.language import common

    cuda = _dialect("cuda")
    assert set(cuda.__all__) == set(T.__all__) and cuda.__tilelang_dialect__ == "cuda"
    assert all(getattr(cuda, n) is getattr(T, n) for n in T.__all__)
    names = set(common.__all__)
    assert names and names <= set(T.__all__)
    assert not names & (CUDA_EXTENSIONS | BACKEND_ONLY_TIR_EXPORTS)
    assert {"copy", "gemm", "Kernel", "__log", "ieee_add"} | SHARED_LEGACY_TIR_EXPORTS <= names
    for name in ("cpu", "webgpu"):
        assert set(_dialect(name).__all__) == names and _dialect(name).__tilelang_dialect__ == name
    assert set(_dialect("metal").__all__) == names | METAL_ONLY_TIR_EXPORTS
    assert set(_dialect("rocm").__all__) == names | ROCM_EXTENSIONS | ROCM_ONLY_TIR_EXPORTS
    assert set(T.__all__) >= CUDA_EXTENSIONS | CUDA_ONLY_TIR_EXPORTS | SHARED_LEGACY_TIR_EXPORTS


def test_a_star_import_gives_the_listing_and_other_t_names_stay_attributes():
    scope = {}
    exec("from tilelang.cpu.language import *", scope)  # noqa: S102 (what a star import gives)
    assert "copy" in scope and "rng_init" not in scope and "ws" not in scope
    # One T serves every target: a CUDA extension is still reachable by name.
    assert _dialect("cpu").rng_init is T.rng_init and _dialect("metal").copy is T.copy
    assert "copy" in dir(_dialect("cpu")) and "ws" in dir(_dialect("cuda"))
    with pytest.raises(AttributeError):
        _dialect("cpu").no_such_name  # noqa: B018


def test_cuda_only_parts_live_under_tilelang_cuda():
    assert T.pdl_trigger.__module__ == "tilelang.cuda.language.pdl"
    assert T.cluster_sync.__module__ == "tilelang.cuda.language.cluster"
    assert T.rng_init.__module__ == "tilelang.cuda.language.random"
    assert T.ws.__module__ == "tilelang.cuda.language.warpgroup" and T.WarpSpecialize is T.ws
    assert T.wgmma_mma is T.wgmma_gemm and T.tcgen05_mma is T.tcgen05_gemm
    from tilelang.cuda import debug

    assert debug.device_assert is T.device_assert and debug.print is T.print
    common_op = importlib.import_module("tilelang.language.tir.op")
    assert not any(hasattr(common_op, n) for n in BACKEND_ONLY_TIR_EXPORTS)


@pytest.mark.parametrize(
    "obj, message",
    [
        (T.ptx_mma, r"ptx_mma is a raw TIR builtin .*TensorCoreIntrinEmitter"),
        (T.ptx_wgmma_ss, r"T.gemm or T.wgmma_gemm"),
        (T.ptx_wait_barrier, r"T.mbarrier_wait_parity"),
        (T.tcgen05_gemm, r"sm_100 \(Blackwell\).*sm_80 to sm_90a"),
        (lambda: _dialect("rocm").mfma, r"no ROCm"),
        (lambda: _dialect("metal").simdgroup_store, r"simdgroup matrices"),
    ],
)
def test_backend_builtins_say_what_writes_their_instruction(obj, message):
    if not isinstance(obj, tilelang.tvm.OutOfScopeName):
        obj = obj()
    with pytest.raises(tilelang.tvm.OutOfScopeError, match=message):
        obj(0)


def handoff_through_legacy_barrier_spellings(made=128, checked=128):
    """Warpgroup 1 copies X into shared memory with cp.async, covers the copies with
    T.ptx_cp_async_barrier and arrives (T.ptx_arrive_barrier); warpgroup 0 waits on the
    barrier, reads the tile and arrives on barrier 1 with T.ptx_arrive_barrier_expect_tx
    (no bytes), which warpgroup 1 waits on before writing the second half."""

    @T.prim_func
    def handoff(X: T.Tensor((128,), "float32"), Y: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=256) as _:
            tile = T.alloc_shared((128,), "float32")
            T.create_list_of_mbarrier(made, made)
            T.ptx_init_barrier_thread_count(0, checked)
            T.ptx_init_barrier_thread_count(1, checked)
            t = T.get_thread_binding()
            with T.ws(1):
                i = t - 128
                T.ptx_cp_async(T.access_ptr(tile[i], "w"), T.access_ptr(X[i], "r"), 1)
                T.ptx_cp_async_barrier(0)
                T.ptx_arrive_barrier(0)
                T.mbarrier_wait_parity(1, 0)
                Y[128 + i] = tile[i] * 3.0
            with T.ws(0):
                T.mbarrier_wait_parity(0, 0)
                Y[t] = tile[127 - t] + 1.0
                T.ptx_arrive_barrier_expect_tx(1, 0)

    return handoff


def test_legacy_barrier_spellings_order_a_handoff():
    x = np.arange(128, dtype=np.float32)
    y = tilelang.compile(handoff_through_legacy_barrier_spellings(), out_idx=[1], target=SM90A)(x)
    np.testing.assert_array_equal(y[:128], x[::-1] + 1.0)
    np.testing.assert_array_equal(y[128:], x * 3.0)


def test_a_barrier_count_other_than_its_allocation_is_an_error():
    with pytest.raises(tilelang.TileLangError, match=r"thread_count must be the arrival count "
                       r"barrier 0 was made with \(128.*got int 64"):  # fmt: skip
        handoff_through_legacy_barrier_spellings(checked=64)


def test_a_barrier_count_check_needs_a_constant_barrier():
    with pytest.raises(
        tilelang.TileLangError, match=r"barrier_id must name one mbarrier by a constant index"
    ):

        @T.prim_func
        def dynamic(Y: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as _:
                T.create_list_of_mbarrier(128, 128)
                T.ptx_init_barrier_thread_count(T.get_thread_binding() % 2, 128)
                Y[T.get_thread_binding()] = 1.0
