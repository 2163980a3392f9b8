"""TileLang's language dialects: `tilelang.<target>.language` (cuda, metal, rocm, cpu,
webgpu) and `tilelang.language.common`. In TileLang each is the common language plus
its backend's extensions; `import tilelang.language as T` is the CUDA dialect. Here one
T serves every target (a name a target cannot lower is an error at compile time, naming
it), so a dialect module's `__all__` is TileLang's listing of it (what `from ... import
*` gives), and any other T name is still its attribute."""

from __future__ import annotations

import importlib
from typing import Any

from tilelang.language.tir.exports import (
    BACKEND_ONLY_TIR_EXPORTS,
    METAL_ONLY_TIR_EXPORTS,
    ROCM_ONLY_TIR_EXPORTS,
)

# The T names TileLang lists in its CUDA dialect only (its CUDA extensions), beside
# CUDA_ONLY_TIR_EXPORTS: clusters, mbarriers, TMA, wgmma, warp specialization and its
# register hints, programmatic dependent launch, cuRAND's generators, cache-hinted
# loads and stores, warp-lane queries and the sm_100 GEMMs.
CUDA_EXTENSIONS = frozenset(
    {
        "ClusterKernel", "CUDASourceCodeKernel", "WarpSpecialize", "ws",
        "alloc_cluster_barrier", "annotate_consumer_reg_alloc", "annotate_producer_reg_dealloc",
        "annotate_l2_hit_ratio", "annotate_min_blocks_per_sm", "barrier_arrive", "barrier_wait",
        "mbarrier_arrive", "mbarrier_arrive_expect_tx", "mbarrier_expect_tx",
        "mbarrier_wait_parity", "create_list_of_mbarrier", "cp_async_barrier_noinc",
        "block_rank_in_cluster", "cluster_arrive", "cluster_arrive_relaxed", "cluster_sync",
        "cluster_wait", "copy_cluster", "dec_max_nreg", "inc_max_nreg", "set_max_nreg",
        "no_set_max_nreg", "disable_warp_group_reg_alloc", "tma_copy", "tma_store_arrive",
        "tma_store_wait", "wait_wgmma", "wgmma_gemm", "wgmma_mma", "tcgen05_gemm",
        "tcgen05_mma", "tcgen05_gemm_blockscaled", "tcgen05_mma_blockscaled", "pdl_sync",
        "pdl_trigger", "rng_init", "rng_rand", "rng_rand_float", "__ldg", "__ffs", "__fns",
        "ldg32", "ldg64", "ldg128", "ldg256", "lds32", "lds64", "lds128", "stg32", "stg64",
        "stg128", "stg256", "sts32", "sts64", "sts128", "get_lane_idx", "get_warp_idx",
        "get_warp_idx_sync", "get_warp_group_idx", "match_all_sync", "match_any_sync",
        "named_barrier_arrive", "shuffle_elect",
    }
)  # fmt: skip
# TileLang's ROCm dialect names beside the common ones (tilelang has no ROCm backend:
# each is out of scope, tilelang.rocm.language).
ROCM_EXTENSIONS = frozenset(
    {
        "MatrixCoreIntrinEmitter", "WMMAIntrinEmitter", "ds_read_tr16_b64", "ds_read_tr8_b64",
        "mfma", "mfma_store", "rdna_wmma", "rdna_wmma_store", "make_mfma_swizzle_layout",
    }
)  # fmt: skip


def _language() -> Any:
    return importlib.import_module("tilelang.language")


def common_names() -> list[str]:
    """The common dialect's listing: T's names less every backend's extensions."""
    return [
        n
        for n in _language().__all__
        if n not in CUDA_EXTENSIONS and n not in BACKEND_ONLY_TIR_EXPORTS
    ]


def dialect_names(dialect: str) -> list[str]:
    """The `__all__` of `tilelang.<dialect>.language`."""
    if dialect == "cuda":
        return list(_language().__all__)
    names = common_names()
    if dialect == "metal":
        return names + sorted(METAL_ONLY_TIR_EXPORTS)
    if dialect == "rocm":
        return names + sorted(ROCM_EXTENSIONS | ROCM_ONLY_TIR_EXPORTS)
    return names


def dialect_getattr(dialect: str, extra: Any = None) -> Any:
    """A dialect module's `__getattr__`: `__all__` is its listing (dialect_names), a name
    of `extra` (a dict: name -> the module that has it) is that module's, any other
    name is T's."""
    extra = dict(extra or {})

    def __getattr__(name: str) -> Any:
        if name == "__all__":
            return dialect_names(dialect)
        if name in extra:
            return getattr(importlib.import_module(extra[name]), name)
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return getattr(_language(), name)

    return __getattr__


def dialect_dir(dialect: str) -> Any:
    """A dialect module's `__dir__`: its listing and its module attributes."""

    def __dir__() -> list[str]:
        module = importlib.import_module(
            "tilelang.language.common" if dialect == "common" else f"tilelang.{dialect}.language"
        )
        return sorted(set(dialect_names(dialect)) | set(vars(module)))

    return __dir__


def submodule_getattr(package: str, names: Any) -> Any:
    """A package's `__getattr__` that imports its submodules `names` when first asked
    for (`from tilelang.cpu import language`)."""

    def __getattr__(name: str) -> Any:
        if name in names:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
